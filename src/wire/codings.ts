// Content codings and the compression itself, below the HTTP boundary because a batch is
// compressed on the worker that answered it. Only answers worth it are compressed: bodies of
// MIN_COMPRESSED_BYTES or more (a batch, a catalogue; a single lookup's answer is smaller and
// never reads Accept-Encoding). Levels are chosen for speed: a level that took longer than
// the lookups themselves would halve the pool's throughput.

import zlib from 'node:zlib';

export const IDENTITY = 0;
export const GZIP = 1;
export const BR = 2;
export type Coding = typeof IDENTITY | typeof GZIP | typeof BR;

export const CODING_NAMES = ['identity', 'gzip', 'br'] as const;

/** Below this, compression saves less than the headers it adds and the time it takes. */
export const MIN_COMPRESSED_BYTES = 1024;

const GZIP_OPTIONS: zlib.ZlibOptions = { level: 1 };
const BR_OPTIONS: zlib.BrotliOptions = {
  params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 1, [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT },
};

/** The body in `coding` (a new buffer). */
export function compress(body: Uint8Array, coding: Coding): Uint8Array {
  if (coding === GZIP) return zlib.gzipSync(body, GZIP_OPTIONS);
  if (coding === BR)
    return zlib.brotliCompressSync(body, { ...BR_OPTIONS, params: { ...BR_OPTIONS.params, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.byteLength } });
  return body;
}
