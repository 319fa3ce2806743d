// One conditional fetch of a source URL, as a good citizen: If-None-Match / If-Modified-Since
// from the last good copy (a 304 costs nothing more), a User-Agent naming ipsift, a timeout, and
// a size cap enforced while streaming. What comes back is checked before it may be imported: an
// HTTP error is a failure; an HTML page, an empty body, a body over the cap or cut short is
// refused. Bodies are streamed to a file beside the last good copy, which they never touch.

import crypto from 'node:crypto';
import dns from 'node:dns';
import fs from 'node:fs';
import net from 'node:net';
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
  /** Ports a redirect may never lead to on a loopback or private host (the admin port). */
  guardedPorts?: readonly number[];
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
  const res = await follow(req.url, { headers, signal }, req);
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
  // Content-Length counts the bytes as sent: for a gzip- or br-coded body (a pre-compressed
  // file) it is the coded size, and a cut is caught by the decoder instead.
  const coded = !/^(identity)?$/i.test((res.headers.get('content-encoding') ?? '').trim());
  if (!coded && Number.isFinite(declared) && bytes < declared) throw new RefusedBody(`cut short: ${bytes} of the ${declared} bytes announced`);
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

const MAX_REDIRECTS = 5;

/**
 * fetch with redirects followed by hand, each hop checked: a redirect may stay on the URL's
 * own origin or go to a public host, never to a loopback, private, link-local or unspecified
 * address of another origin (a public list must not make ipsift read its own admin port or a
 * neighbour's metadata service), and never to a guarded port on such an address.
 */
async function follow(
  url: string,
  init: { headers: Record<string, string>; signal: AbortSignal },
  req: Pick<FetchRequest, 'timeoutMs' | 'guardedPorts'>,
): Promise<Response> {
  let at = new URL(url);
  for (let hop = 0; ; hop++) {
    let res: Response;
    try {
      res = await fetch(at, { ...init, redirect: 'manual' });
    } catch (e) {
      throw new Error(init.signal.aborted ? `no answer within ${req.timeoutMs / 1000} s from ${at.host}` : `cannot fetch from ${at.host}: ${causeOf(e)}`);
    }
    const location = res.status >= 300 && res.status < 400 && res.status !== 304 ? res.headers.get('location') : null;
    if (location === null) return res;
    await res.body?.cancel();
    if (hop === MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects from ${url}`);
    const next = new URL(location, at);
    if (next.protocol !== 'https:' && next.protocol !== 'http:') throw new RefusedBody(`redirected to ${next.protocol} URL ${next.href}`);
    const refusal = await redirectRefusal(at, next, req.guardedPorts ?? []);
    if (refusal) throw new RefusedBody(`redirected to ${next.host}, refused: ${refusal}`);
    at = next;
  }
}

const portOf = (u: URL): number => Number(u.port || (u.protocol === 'https:' ? 443 : 80));

/** Why a redirect from `from` to `to` must not be followed, or null. */
async function redirectRefusal(from: URL, to: URL, guardedPorts: readonly number[]): Promise<string | null> {
  const sameOrigin = from.protocol === to.protocol && from.hostname === to.hostname && portOf(from) === portOf(to);
  const host = to.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  if (net.isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await dns.promises.lookup(host, { all: true })).map((a) => a.address);
    } catch {
      return null; // the fetch itself will say it cannot resolve the host
    }
  }
  const inner = addresses.find(isInternalAddress);
  if (inner === undefined) return null;
  if (guardedPorts.includes(portOf(to))) return `port ${portOf(to)} of ${inner} is this server's own admin port`;
  return sameOrigin ? null : `${inner} is a loopback, private or link-local address the source does not name`;
}

/** Loopback, private (RFC 1918, ULA), link-local, CGNAT, unspecified: never where a public list redirects to. */
export function isInternalAddress(ip: string): boolean {
  if (net.isIPv4(ip)) {
    const [a, b] = ip.split('.').map(Number);
    return (
      a === 0 ||
      a === 10 ||
      a === 127 ||
      (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      (a === 100 && b >= 64 && b <= 127)
    );
  }
  const v = ip.toLowerCase();
  if (v.startsWith('::ffff:')) return isInternalAddress(v.slice(7));
  return v === '::' || v === '::1' || /^f[cd]/.test(v) || /^fe[89ab]/.test(v);
}

/** The most of a page read for the link on it. */
const MAX_PAGE_BYTES = 4 << 20;

/**
 * The current file's URL read from a page that links to it (Microsoft publishes its service
 * tags under a new URL every week, named on a download page): the first match of `pattern`.
 */
export async function findLink(pageUrl: string, pattern: RegExp, timeoutMs: number, guardedPorts: readonly number[] = []): Promise<string> {
  const signal = AbortSignal.timeout(timeoutMs);
  const res = await follow(pageUrl, { headers: { 'user-agent': USER_AGENT, accept: 'text/html, */*;q=0.5' }, signal }, { timeoutMs, guardedPorts });
  if (!res.ok || !res.body) {
    await res.body?.cancel();
    throw new Error(`HTTP ${res.status} from ${new URL(pageUrl).host} (the page that links to the file)`);
  }
  // A page is read up to MAX_PAGE_BYTES, never whole: an upstream cannot make ipsift hold more.
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  const reader = res.body.getReader();
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    chunks.push(chunk.value);
    bytes += chunk.value.byteLength;
    if (bytes >= MAX_PAGE_BYTES) {
      await reader.cancel();
      break;
    }
  }
  const m = pattern.exec(Buffer.concat(chunks).toString('utf8', 0, Math.min(bytes, MAX_PAGE_BYTES)));
  if (!m) throw new RefusedBody(`the page ${pageUrl} links to no file matching ${pattern.source} in its first ${MAX_PAGE_BYTES >> 20} MiB`);
  return m[0].replaceAll('&amp;', '&');
}

function causeOf(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (e as Error).message;
}
