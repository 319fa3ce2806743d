// One conditional fetch of a source URL, as a good citizen: If-None-Match / If-Modified-Since
// from the last good copy (a 304 costs nothing more), a User-Agent naming ipsift, a timeout, and
// a size cap enforced while streaming. What comes back is checked before it may be imported: an
// HTTP error is a failure; an HTML page, an empty body, a body over the cap or cut short is
// refused. Bodies are streamed to a file beside the last good copy, which they never touch.

import crypto from 'node:crypto';
import dns from 'node:dns';
import fs from 'node:fs';
import net from 'node:net';
import { redactUrl } from '../log.js';
import { IPV4, IPV4_MAPPED, NOT_ADDRESS, ParsedAddress, addressBigInt, parseAddress } from '../net/address.js';
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
  /** What each hop is checked against (default: only the URL's own host may be internal). */
  guard?: HopGuard;
}

export type FetchOutcome =
  | { kind: 'unchanged'; status: number }
  | { kind: 'fetched'; status: number; bytes: number; sha256: string; etag: string | null; lastModified: string | null; date: string | null };

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
    date: res.headers.get('date'),
  };
}

const MAX_REDIRECTS = 5;

/**
 * What every hop of a fetch is checked against. A host the operator named (any host of a
 * source in the operator's own file, the mirror's host) may be internal; any other host that
 * is, or resolves to, a loopback, private, link-local, CGNAT, multicast or unspecified address
 * is refused, however it is spelt (the registry's sources name public hosts only). A guarded
 * port (the admin port) on an internal address is refused whoever named it.
 */
export interface HopGuard {
  /** Hosts (URL hostnames, as the URL parser writes them) that may be internal. */
  named: ReadonlySet<string>;
  guardedPorts: readonly number[];
}

/** The guard of a fetch of `url` for a source. */
export function hopGuard(url: string, options: { mirror?: string; operatorsOwn?: boolean; guardedPorts?: readonly number[] }): HopGuard {
  const named = new Set<string>();
  if (options.operatorsOwn) named.add(new URL(url).hostname);
  if (options.mirror) named.add(new URL(options.mirror).hostname);
  return { named, guardedPorts: options.guardedPorts ?? [] };
}

/**
 * A URL's credentials taken out: userinfo becomes an Authorization header (Basic), sent to
 * that origin only; the URL fetched carries none (fetch refuses such a URL outright).
 */
export function withoutCredentials(url: string): { url: URL; authorization: string | null } {
  const u = new URL(url);
  if (!u.username && !u.password) return { url: u, authorization: null };
  const pair = `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`;
  u.username = '';
  u.password = '';
  return { url: u, authorization: `Basic ${Buffer.from(pair).toString('base64')}` };
}

/**
 * fetch with redirects followed by hand, every hop checked against the guard (the first
 * request included: a name may resolve to an internal address), credentials sent to their
 * own origin only.
 */
export async function guardedFetch(
  url: string,
  init: { headers: Record<string, string>; signal: AbortSignal; timeoutMs?: number },
  guard: HopGuard,
): Promise<Response> {
  const first = withoutCredentials(url);
  let at = first.url;
  const origin = at.origin;
  for (let hop = 0; ; hop++) {
    if (at.protocol !== 'https:' && at.protocol !== 'http:') throw new RefusedBody(`redirected to ${at.protocol} URL ${redactUrl(at.href)}`);
    const refusal = await hopRefusal(at, guard);
    if (refusal) throw new RefusedBody(`${hop === 0 ? `${at.host}` : `redirected to ${at.host},`} refused: ${refusal}`);
    const headers = first.authorization && at.origin === origin ? { ...init.headers, authorization: first.authorization } : init.headers;
    let res: Response;
    try {
      res = await fetch(at, { headers, signal: init.signal, redirect: 'manual' });
    } catch (e) {
      const within = init.timeoutMs === undefined ? 'in time' : `within ${init.timeoutMs / 1000} s`;
      throw new Error(init.signal.aborted ? `no answer ${within} from ${at.host}` : `cannot fetch from ${at.host}: ${causeOf(e)}`);
    }
    const location = res.status >= 300 && res.status < 400 && res.status !== 304 ? res.headers.get('location') : null;
    if (location === null) return res;
    await res.body?.cancel();
    if (hop === MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects from ${redactUrl(url)}`);
    at = new URL(location, at);
  }
}

async function follow(
  url: string,
  init: { headers: Record<string, string>; signal: AbortSignal },
  req: Pick<FetchRequest, 'timeoutMs' | 'guard'>,
): Promise<Response> {
  return guardedFetch(url, { ...init, timeoutMs: req.timeoutMs }, req.guard ?? hopGuard(url, { operatorsOwn: true }));
}

/**
 * A body read up to `max` bytes, never more: an upstream cannot make ipsift hold more than
 * that, whatever it sends. `whole` says whether the body ended within it.
 */
export async function readCapped(res: Response, max: number): Promise<{ text: string; whole: boolean }> {
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  const reader = res.body!.getReader();
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    chunks.push(chunk.value);
    bytes += chunk.value.byteLength;
    if (bytes >= max) {
      await reader.cancel();
      return { text: Buffer.concat(chunks).toString('utf8', 0, max), whole: false };
    }
  }
  return { text: Buffer.concat(chunks).toString('utf8'), whole: true };
}

const portOf = (u: URL): number => Number(u.port || (u.protocol === 'https:' ? 443 : 80));

/** Why a hop to `to` must not be made, or null. */
async function hopRefusal(to: URL, guard: HopGuard): Promise<string | null> {
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
  if (guard.guardedPorts.includes(portOf(to))) return `port ${portOf(to)} of ${inner} is this server's own admin port`;
  return guard.named.has(to.hostname) ? null : `${inner} is a loopback, private or link-local address the source does not name`;
}

const NAT64_TOP = 0x64ff9bn << 64n;

/**
 * Loopback, private (RFC 1918, ULA), link-local, CGNAT, unspecified, multicast and reserved:
 * never where a public list leads. IPv6 forms that carry an IPv4 address (IPv4-mapped,
 * IPv4-compatible, NAT64, 6to4) are judged by that address, whatever their spelling.
 */
export function isInternalAddress(ip: string): boolean {
  const p = new ParsedAddress();
  const kind = parseAddress(ip, 0, ip.length, p);
  if (kind === NOT_ADDRESS) return net.isIP(ip) !== 0; // an address this parser cannot read is not trusted
  // The parser reads IPv4-mapped forms (::ffff:7f00:1 as well as ::ffff:127.0.0.1) as IPv4.
  if (kind === IPV4 || kind === IPV4_MAPPED) return isInternalV4(p.v4);
  const v = addressBigInt(p);
  // IPv4-compatible (::a.b.c.d, with :: and ::1 themselves) and NAT64 (64:ff9b::/96).
  if (v >> 32n === 0n || v >> 32n === NAT64_TOP) return v <= 1n || isInternalV4(Number(v & 0xffffffffn));
  if (v >> 112n === 0x2002n) return isInternalV4(Number((v >> 80n) & 0xffffffffn));
  const top = Number(v >> 112n);
  return (top & 0xfe00) === 0xfc00 || (top & 0xffc0) === 0xfe80 || (top & 0xffc0) === 0xfec0 || (top & 0xff00) === 0xff00;
}

function isInternalV4(v4: number): boolean {
  const a = v4 >>> 24;
  const b = (v4 >>> 16) & 255;
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    a >= 224 ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 100 && b >= 64 && b <= 127) ||
    (a === 198 && (b === 18 || b === 19))
  );
}

/** The most of a page read for the link on it. */
const MAX_PAGE_BYTES = 4 << 20;

/**
 * The current file's URL read from a page that links to it (Microsoft publishes its service
 * tags under a new URL every week, named on a download page): the first match of `pattern`.
 */
export async function findLink(pageUrl: string, pattern: RegExp, timeoutMs: number, guard?: HopGuard): Promise<string> {
  const signal = AbortSignal.timeout(timeoutMs);
  const res = await follow(pageUrl, { headers: { 'user-agent': USER_AGENT, accept: 'text/html, */*;q=0.5' }, signal }, { timeoutMs, guard });
  if (!res.ok || !res.body) {
    await res.body?.cancel();
    throw new Error(`HTTP ${res.status} from ${new URL(pageUrl).host} (the page that links to the file)`);
  }
  const m = pattern.exec((await readCapped(res, MAX_PAGE_BYTES)).text);
  if (!m) throw new RefusedBody(`the page ${redactUrl(pageUrl)} links to no file matching ${pattern.source} in its first ${MAX_PAGE_BYTES >> 20} MiB`);
  return m[0].replaceAll('&amp;', '&');
}

function causeOf(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (e as Error).message;
}
