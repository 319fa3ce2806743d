// One conditional fetch of a source URL, as a good citizen: If-None-Match / If-Modified-Since
// from the last good copy (a 304 costs nothing more), a User-Agent naming ipsift, a timeout, and
// a size cap enforced while streaming. What comes back is checked before it may be imported: an
// HTTP error is a failure; an HTML page, an empty body, a body over the cap or cut short is
// refused. Bodies are streamed to a file beside the last good copy, which they never touch.

import crypto from 'node:crypto';
import fs from 'node:fs';
import { VERSION } from '../version.js';

export const USER_AGENT = `ipsift/${VERSION} (+self-hosted IP classification; feed refresh)`;

export interface FetchRequest {
  url: string;
  /** Where the body goes (replaced). */
  target: string;
  timeoutMs: number;
  maxBytes: number;
  etag?: string | null;
  lastModified?: string | null;
}

export type FetchOutcome =
  | { kind: 'unchanged'; status: number }
  | { kind: 'fetched'; status: number; bytes: number; sha256: string; etag: string | null; lastModified: string | null };

/** The upstream answered, but with something that must not be imported. */
export class RefusedBody extends Error {}

const HTML_START = /^\s*<(!doctype\s+html|html|head|body|title)[\s>]/i;

export async function fetchSource(req: FetchRequest): Promise<FetchOutcome> {
  const headers: Record<string, string> = { 'user-agent': USER_AGENT, accept: 'text/plain, text/csv, application/json, */*;q=0.5' };
  if (req.etag) headers['if-none-match'] = req.etag;
  if (req.lastModified) headers['if-modified-since'] = req.lastModified;
  const signal = AbortSignal.timeout(req.timeoutMs);
  let res: Response;
  try {
    res = await fetch(req.url, { headers, signal, redirect: 'follow' });
  } catch (e) {
    throw new Error(signal.aborted ? `no answer within ${req.timeoutMs / 1000} s` : `cannot fetch: ${causeOf(e)}`);
  }
  if (res.status === 304) {
    await res.body?.cancel();
    return { kind: 'unchanged', status: 304 };
  }
  if (!res.ok || !res.body) {
    await res.body?.cancel();
    throw new Error(`HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`);
  }
  const type = res.headers.get('content-type') ?? '';
  if (/^\s*text\/html\b/i.test(type)) {
    await res.body.cancel();
    throw new RefusedBody(`the answer is an HTML page (content-type ${type.split(';')[0]}), not a list`);
  }
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (declared > req.maxBytes) {
    await res.body.cancel();
    throw new RefusedBody(`the answer is ${declared} bytes, over this source's cap of ${req.maxBytes}`);
  }
  const hash = crypto.createHash('sha256');
  const fd = fs.openSync(req.target, 'w', 0o644);
  let bytes = 0;
  let head = '';
  try {
    const reader = res.body.getReader();
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (e) {
        throw new RefusedBody(
          signal.aborted ? `cut short: no end within ${req.timeoutMs / 1000} s after ${bytes} bytes` : `cut short after ${bytes} bytes (${causeOf(e)})`,
        );
      }
      if (chunk.done) break;
      bytes += chunk.value.byteLength;
      if (bytes > req.maxBytes) {
        await reader.cancel();
        throw new RefusedBody(`the answer ran past this source's cap of ${req.maxBytes} bytes`);
      }
      if (head.length < 512) head += Buffer.from(chunk.value.subarray(0, 512)).toString('latin1');
      hash.update(chunk.value);
      fs.writeSync(fd, chunk.value);
    }
  } finally {
    fs.closeSync(fd);
  }
  if (Number.isFinite(declared) && bytes < declared) throw new RefusedBody(`cut short: ${bytes} of the ${declared} bytes announced`);
  if (head.trim() === '') throw new RefusedBody('the answer is empty');
  if (HTML_START.test(head)) throw new RefusedBody('the answer is an HTML page, not a list');
  return {
    kind: 'fetched',
    status: res.status,
    bytes,
    sha256: hash.digest('hex'),
    etag: res.headers.get('etag'),
    lastModified: res.headers.get('last-modified'),
  };
}

function causeOf(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (e as Error).message;
}
