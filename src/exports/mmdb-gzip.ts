// The gzip form of each MMDB a build exports (`<file>.mmdb.gz`), written on the export threads
// as each database is done, so publishing links it instead of compressing hundreds of
// megabytes after the build. zlib runs on libuv's thread pool: the compression of
// one database overlaps the export of the next.
//
// An MMDB and its editions (databases.ts, `editionOf`) are the same bytes up to their
// metadata: that part is compressed once, ended with a full flush (byte-aligned, no reference
// back past it), and each file's form is that deflate stream, then its own end's, in a gzip
// member of its own with its own CRC-32 and length (RFC 1952). What pigz does to compress a
// file in parallel pieces, here to compress the shared piece once.

import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { GZIP_OPTIONS, gzippedPath, temporaryFor, writeGzipped } from '../objects/local-store.js';
import { writeFully } from './artifact-file.js';
import { DATABASES } from './databases.js';
import type { ExportsManifest } from './exporter.js';
import { METADATA_MARKER } from './mmdb-writer.js';

/** The gzip forms of every MMDB in the manifest's databases (full and sample), all at once. */
export async function gzipMmdbs(dir: string, manifest: Pick<ExportsManifest, 'databases'>): Promise<number> {
  const defOf = (id: string) => DATABASES.find((d) => d.id === id);
  const exported = Object.values(manifest.databases);
  // Each group: an MMDB, then its editions' (twins up to their metadata).
  const groups: string[][] = [];
  for (const db of exported) {
    const def = defOf(db.id);
    const pair = db.artifacts.mmdb;
    if (!pair || def?.editionOf !== undefined) continue; // an edition goes with its base
    const editions = exported.filter((e) => def !== undefined && defOf(e.id)?.editionOf === def.base);
    for (const which of ['full', 'sample'] as const) {
      const art = pair[which];
      if (!art) continue;
      const twins = editions.map((e) => e.artifacts.mmdb?.[which]?.file).filter((f): f is string => f !== undefined);
      groups.push([art.file, ...twins].map((f) => path.join(dir, f)));
    }
  }
  await Promise.all(groups.map((files) => (files.length === 1 ? writeGzipped(files[0], gzippedPath(files[0])) : writeGzippedTwins(files))));
  return groups.reduce((n, g) => n + g.length, 0);
}

/** How far from a file's end its metadata marker can be (MaxMind DB 2.0). */
const METADATA_MAX = 128 * 1024;
const CHUNK = 1 << 20;
/** ID1 ID2, deflate, no flags, no time, no extra flags, Unix (as zlib writes it). */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
/** The file's bytes from `from` to its end. */
function readFrom(file: string, from: number): Buffer {
  const fd = fs.openSync(file, 'r');
  try {
    const tail = Buffer.alloc(Math.max(0, fs.fstatSync(fd).size - from));
    for (let at = 0; at < tail.length; ) {
      const n = fs.readSync(fd, tail, at, tail.length - at, from + at);
      if (n === 0) throw new Error(`${file} ended while read`);
      at += n;
    }
    return tail;
  } finally {
    fs.closeSync(fd);
  }
}

/** Where the file's metadata marker begins: what comes before is its tree and data. */
function markerAt(file: string): number {
  const from = Math.max(0, fs.statSync(file).size - METADATA_MAX);
  const at = readFrom(file, from).lastIndexOf(METADATA_MARKER);
  if (at < 0) throw new Error(`${file}: no MaxMind DB metadata marker`);
  return from + at;
}

/** Whether the files' first `length` bytes are the same. */
function samePrefix(files: readonly string[], length: number): boolean {
  const fds = files.map((f) => fs.openSync(f, 'r'));
  try {
    const bufs = files.map(() => Buffer.alloc(CHUNK));
    for (let at = 0; at < length; at += CHUNK) {
      const n = Math.min(CHUNK, length - at);
      // A short read (none is expected of a file this process just wrote) counts as a difference.
      for (const [k, fd] of fds.entries()) if (fs.readSync(fd, bufs[k], 0, n, at) !== n) return false;
      for (let k = 1; k < fds.length; k++) if (bufs[k].compare(bufs[0], 0, n, 0, n) !== 0) return false;
    }
    return true;
  } finally {
    for (const fd of fds) fs.closeSync(fd);
  }
}

/** The gzip forms of files that are the same up to their metadata, the shared part compressed once. */
async function writeGzippedTwins(files: readonly string[]): Promise<void> {
  const markers = files.map(markerAt);
  const shared = markers[0];
  // Twins by construction (one writer, one pass); checked, since a wrong guess here would
  // serve one file's bytes under another's name.
  if (markers.some((m) => m !== shared) || !samePrefix(files, shared)) {
    await Promise.all(files.map((f) => writeGzipped(f, gzippedPath(f))));
    return;
  }
  const deflate = zlib.createDeflateRaw(GZIP_OPTIONS);
  const body: Buffer[] = [];
  deflate.on('data', (c: Buffer) => body.push(c));
  let crc = 0;
  for await (const c of fs.createReadStream(files[0], { start: 0, end: shared - 1, highWaterMark: CHUNK }) as AsyncIterable<Buffer>) {
    crc = zlib.crc32(c, crc);
    if (!deflate.write(c)) await once(deflate, 'drain');
  }
  await new Promise<void>((resolve) => deflate.flush(zlib.constants.Z_FULL_FLUSH, () => resolve()));
  deflate.close();
  for (const file of files) {
    const end = readFrom(file, shared);
    const trailer = Buffer.alloc(8);
    trailer.writeUInt32LE(zlib.crc32(end, crc), 0);
    trailer.writeUInt32LE((shared + end.length) % 2 ** 32, 4);
    const target = gzippedPath(file);
    const tmp = temporaryFor(target);
    try {
      const fd = fs.openSync(tmp, 'w');
      try {
        for (const part of [GZIP_HEADER, ...body, zlib.deflateRawSync(end, GZIP_OPTIONS), trailer]) writeFully(fd, part);
      } finally {
        fs.closeSync(fd);
      }
      fs.renameSync(tmp, target);
    } catch (e) {
      fs.rmSync(tmp, { force: true });
      throw e;
    }
  }
}
