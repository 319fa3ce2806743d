// A seeded HTTP fuzzer over every route of the lookup port: paths, escapes, query strings,
// key headers, bodies, methods and HEAD, sent as raw bytes (so nothing a client library would
// refuse is left out), on keep-alive connections. Every answer must be well formed, carry a
// documented status, and a HEAD answer no body. Used by the test suite (short) and the bench
// (long).

import net from 'node:net';
import { prng } from '../scripts/gen-feeds.js';

/** Statuses the contract and README document for these routes. */
export const DOCUMENTED = new Set([200, 201, 206, 302, 304, 400, 401, 403, 404, 405, 409, 413, 416, 429, 500, 503]);

export interface FuzzResult {
  requests: number;
  byStatus: Map<number, number>;
  /** Answers with an undocumented status, a malformed head, or a HEAD body. */
  problems: string[];
  /** Requests the server closed the connection on without an answer (first lines). */
  unanswered: string[];
}

const PATHS = [
  '/81.7.3.9',
  '/2a01:4f8:c012::1',
  '/::ffff:81.7.3.9',
  '/10.0.0.1',
  '/myip',
  '/batch',
  '/',
  '/%',
  '/%ZZ',
  '/%2e%2e',
  '/81.7.3.9%00',
  '/1.2.3',
  '/fe80::1%25eth0',
  '/api/v1/account/me',
  '/api/v1/iam/apikeys',
  '/api/v1/iam/apikeys/x',
  '/api/v1/iam/apikeys/x/rotate',
  '/api/v1/database/list',
  '/api/v1/database/download',
  '/api/v1/database/metadata',
  '/api/v1/database/checksum',
  '/api/v1/database/downloads',
  '/files/',
  '/files/%ZZ',
  '/files/a%',
  '/files/%E0%A4%A',
  '/files/vpn_v1/../../x',
  '/files/x/y',
  '/api/v1/database',
  '/api',
  '/api/v1/iam/apikeys//rotate',
  '/openapi.json',
];
const QUERIES = [
  '',
  '?id=vpn_v1',
  '?id=vpn_v1&format=csvgz',
  '?id=vpn_v1&format=mmdb&sample=true',
  '?id=nope&format=x',
  '?limit=0',
  '?limit=201',
  '?limit=abc',
  '?sample=1&id=vpn_v1&format=csvgz',
  '?apikey=%',
  '?apikey=a&apikey=b',
  '?expires=1&sig=x&name=y',
  '?&&=&',
  '?id=%ZZ',
];
const METHODS = ['GET', 'GET', 'GET', 'POST', 'HEAD', 'DELETE', 'PUT', 'OPTIONS', 'PATCH'];
const BODIES = [
  '',
  '{}',
  '{"ips":[]}',
  '{"ips":["81.7.3.9","nope",1]}',
  '{"ips":"x"}',
  '[',
  'null',
  '{"name":"k"}',
  '{"name":"k","allowed_scopes":["db.download"],"expires":"2999-01-01"}',
  '{"name":"k","allowed_cidrs":["0.0.0.0/0"]}',
  '{"ips":["\\ud800"]}',
  '\u0000\u00ff',
  '{"ips":[' + '"1.1.1.1",'.repeat(1200) + '"x"]}',
];

function pick<T>(rnd: () => number, list: readonly T[]): T {
  return list[Math.floor(rnd() * list.length)];
}

/** Mutates a string: a byte flipped, a percent-escape or a character inserted, a cut. */
function mutate(rnd: () => number, s: string): string {
  const at = Math.floor(rnd() * (s.length + 1));
  switch (Math.floor(rnd() * 5)) {
    case 0:
      return (
        s.slice(0, at) +
        '%' +
        Math.floor(rnd() * 256)
          .toString(16)
          .padStart(2, '0') +
        s.slice(at)
      );
    case 1:
      return s.slice(0, at) + pick(rnd, ['%', '/', '..', ':', '?', '&', '=', '#', '\\', '~', '%u0041']) + s.slice(at);
    case 2:
      return s.slice(0, at);
    case 3:
      return s.slice(0, at) + String.fromCharCode(33 + Math.floor(rnd() * 94)) + s.slice(at + 1);
    default:
      return s;
  }
}

/** Requests as a client would mean them (the route's own method and parameters), before mutation. */
const MEANT: readonly (readonly [string, string])[] = [
  ['GET', '/81.7.3.9'],
  ['GET', '/2a01:4f8:c012::1'],
  ['GET', '/myip'],
  ['POST', '/batch'],
  ['GET', '/api/v1/account/me'],
  ['POST', '/api/v1/iam/apikeys'],
  ['GET', '/api/v1/iam/apikeys'],
  ['GET', '/api/v1/database/list'],
  ['GET', '/api/v1/database/download?id=vpn_v1&format=csvgz'],
  ['GET', '/api/v1/database/download?id=vpn_v1&format=mmdb&sample=true'],
  ['GET', '/api/v1/database/metadata?id=vpn_v1'],
  ['GET', '/api/v1/database/checksum?id=vpn_v1&format=mmdb'],
  ['GET', '/api/v1/database/downloads?limit=5'],
  ['HEAD', '/81.7.3.9'],
];

/**
 * Routes and headers added later (geoipupdate, the OpenAPI document, Basic auth, content
 * codings), drawn from a second generator so that the first one's sequence, and so what the
 * suite's seeds reach, stays as it was.
 */
const LATER_TARGETS = [
  '/geoip/databases/vpn_v1/update?db_md5=0',
  '/geoip/databases/vpn_v1/update',
  '/geoip/databases/nope/update?db_md5=%',
  '/geoip/databases//update',
  '/geoip/databases/vpn_v1/update/x',
  '/geoip/updates/metadata?edition_id=vpn_v1',
  '/api/v1/openapi.json',
  '/api/v1/openapi.json?x=%ZZ',
  '/geoip/databases/vpn_v1/download?date=20260101&suffix=tar.gz',
  '/geoip/databases/nope/download',
  '/geoip/updates/metadata?edition_id=vpn_v1&edition_id=nope',
  '/geoip/updates/metadata',
  '/api/v1/auth/token',
  '/api/v1/auth/token?x=1',
  '/api/v1/auth/token/x',
];
const ACCEPT_ENCODINGS = ['gzip', 'br', 'gzip, br', 'gzip;q=0', '*', 'br;q=abc', 'x'.repeat(600), ', ,;', 'identity'];

/** What a fuzz run aims at: the lookup port's routes (the default) or another app's. */
export interface Targets {
  paths: readonly string[];
  queries: readonly string[];
  meant: readonly (readonly [string, string])[];
  bodies: readonly string[];
  later: readonly string[];
}

const LOOKUP_TARGETS: Targets = { paths: PATHS, queries: QUERIES, meant: MEANT, bodies: BODIES, later: LATER_TARGETS };

/**
 * The operator's API on the admin port; `ids` are a live organisation's and key's, so that
 * requests reach past the not-found answers.
 */
export function operatorTargets(ids: { org: string; key: string }): Targets {
  const o = `/admin/v1/organizations/${ids.org}`;
  const paths = [
    '/admin/v1/organizations',
    o,
    `${o}/keys`,
    `${o}/licenses`,
    `${o}/licenses/vpn`,
    `${o}/licenses/%ZZ`,
    `${o}/usage`,
    `${o}/downloads`,
    `/admin/v1/keys/${ids.key}`,
    `/admin/v1/keys/${ids.key}/rotate`,
    '/admin/v1/keys/x',
    '/admin/v1/audit',
    '/admin/v1/organizations/%E0%A4%A',
    '/admin/v1/organizations//keys',
    '/admin/v1',
    '/admin/v1/organizations/x/licenses/',
  ];
  return {
    paths,
    queries: ['', '?deleted=true', '?limit=0', '?limit=201', '?limit=abc', '?before=1', '?before=x', `?org_id=${ids.org}`, '?&&=&', '?limit=%ZZ'],
    meant: [
      ['GET', '/admin/v1/organizations'],
      ['POST', '/admin/v1/organizations'],
      ['GET', o],
      ['POST', o],
      ['POST', `${o}/keys`],
      ['POST', `${o}/licenses`],
      ['GET', `${o}/usage`],
      ['GET', `/admin/v1/keys/${ids.key}`],
      ['POST', `/admin/v1/keys/${ids.key}/rotate`],
      ['GET', '/admin/v1/audit?limit=5'],
    ],
    bodies: [
      '',
      '{}',
      '[',
      'null',
      '[1]',
      '{"name":"F","plan":"free"}',
      '{"name":"F","plan":"gold"}',
      '{"plan":"scale"}',
      '{"hard_limit":null}',
      '{"hard_limit":"default"}',
      '{"hard_limit":-1}',
      '{"hard_limit":1e99}',
      '{"name":"k","allowed_scopes":["db.download"]}',
      '{"name":"k","allowed_cidrs":["x"]}',
      '{"name":"k","expires":"2999-01-01"}',
      '{"base":"vpn","license_type":"evaluation","starts":"2026-01-01","expires":"2099-01-01"}',
      '{"base":"vpn","license_type":"forever","starts":"x","expires":"y"}',
      '\u0000\u00ff',
      '{"name":"' + 'x'.repeat(70 * 1024) + '"}',
    ],
    later: paths,
  };
}

/** One request's bytes, and whether it is a HEAD. */
function requestOf(rnd: () => number, later: () => number, keys: readonly string[], links: readonly string[], t: Targets): { bytes: Buffer; head: boolean } {
  let method = pick(rnd, METHODS);
  let target = pick(rnd, t.paths) + pick(rnd, t.queries);
  const roll = rnd();
  if (roll < 0.35) [method, target] = pick(rnd, t.meant);
  else if (roll < 0.45 && links.length) [method, target] = [rnd() < 0.8 ? 'GET' : 'HEAD', pick(rnd, links)];
  if (later() < 0.08) [method, target] = [later() < 0.85 ? 'GET' : pick(later, METHODS), pick(later, t.later)];
  if (rnd() < 0.4) target = mutate(rnd, target);
  if (!target.startsWith('/')) target = '/' + target;
  target = target.replace(/[\s]/g, '%20');
  const headers: string[] = ['Host: fuzz'];
  const key = (): string => (rnd() < 0.7 ? pick(rnd, keys) : mutate(rnd, pick(rnd, keys)).replace(/[\r\n]/g, ''));
  if (rnd() < 0.5) headers.push(`Authorization: ${pick(rnd, ['Bearer ', 'bearer ', 'Basic ', 'Bearer  ', ''])}${key()}`);
  if (rnd() < 0.2) headers.push(`X-Api-Key: ${key()}`);
  if (rnd() < 0.05) headers.push(`X-Api-Key: ${key()}`);
  if (later() < 0.1)
    headers.push(`Authorization: Basic ${Buffer.from(`${pick(later, ['1', '2', 'x', '', '99999999999999999999'])}:${pick(later, keys)}`).toString('base64')}`);
  if (later() < 0.2) headers.push(`Accept-Encoding: ${pick(later, ACCEPT_ENCODINGS)}`);
  if (rnd() < 0.2) headers.push(`Range: ${pick(rnd, ['bytes=0-10', 'bytes=-5', 'bytes=99999999-', 'bytes=5-1', 'bytes=x', 'items=0-1'])}`);
  if (rnd() < 0.1) headers.push(`If-None-Match: ${pick(rnd, ['*', '"x"', 'W/"y"', ''])}`);
  if (rnd() < 0.1) headers.push(`X-Forwarded-For: ${pick(rnd, ['1.2.3.4', '::1', 'garbage', '1.2.3.4, 5.6.7.8', ''])}`);
  let body = '';
  if (method === 'POST' || method === 'PUT' || rnd() < 0.05) {
    body = rnd() < 0.04 ? `{"ips":["${' '.repeat(600 * 1024)}"]}` : pick(rnd, t.bodies);
    if (rnd() < 0.3) body = mutate(rnd, body);
  }
  const bodyBytes = Buffer.from(body, 'utf8');
  if (method !== 'GET' && method !== 'HEAD') headers.push(`Content-Length: ${bodyBytes.length}`);
  else if (bodyBytes.length) headers.push(`Content-Length: ${bodyBytes.length}`);
  return {
    bytes: Buffer.concat([Buffer.from(`${method} ${target} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n`, 'latin1'), bodyBytes]),
    head: method === 'HEAD',
  };
}

/**
 * Sends `count` fuzzed requests over `connections` keep-alive connections, one request in
 * flight per connection, and checks each answer. A connection the server closes (a 413, a
 * refusal before the body) is reopened.
 */
export async function fuzz(
  port: number,
  keys: readonly string[],
  seed: number,
  count: number,
  connections = 8,
  links: readonly string[] = [],
  targets = LOOKUP_TARGETS,
): Promise<FuzzResult> {
  const rnd = prng(seed);
  const later = prng(seed ^ 0x5bd1e995);
  const result: FuzzResult = { requests: 0, byStatus: new Map(), problems: [], unanswered: [] };
  let next = 0;
  const worker = async (): Promise<void> => {
    let socket: net.Socket | null = null;
    let buffer = Buffer.alloc(0);
    let wake: (() => void) | null = null;
    let closed = true;
    const open = (): void => {
      const me = net.connect(port, '127.0.0.1');
      socket = me;
      closed = false;
      buffer = Buffer.alloc(0);
      // Events of a connection given up on must not touch the current one's state.
      me.on('data', (c: Buffer) => {
        if (socket !== me) return;
        buffer = Buffer.concat([buffer, c]);
        wake?.();
      });
      me.on('close', () => {
        if (socket !== me) return;
        closed = true;
        wake?.();
      });
      me.on('error', () => undefined);
    };
    let retry: { bytes: Buffer; head: boolean } | null = null;
    while (next < count || retry !== null) {
      // A request sent on a connection the server was closing (after an answer that closes)
      // is sent once more on a fresh one; unanswered twice, it is a problem.
      const again = retry !== null;
      const req: { bytes: Buffer; head: boolean } = retry ?? requestOf(rnd, later, keys, links, targets);
      const { bytes, head } = req;
      if (!again) next++;
      retry = null;
      if (closed || again) {
        (socket as net.Socket | null)?.destroy();
        open();
      }
      socket!.write(bytes);
      const deadline = Date.now() + 5000;
      let answer: { status: number; headText: string; length: number } | null = null;
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end >= 0) {
          const headText = buffer.subarray(0, end).toString('latin1');
          const m = /content-length: *(\d+)/i.exec(headText);
          const length = head ? 0 : m ? Number(m[1]) : 0;
          if (buffer.length >= end + 4 + length) {
            answer = { status: Number(headText.slice(9, 12)), headText, length };
            const rest = buffer.subarray(end + 4 + length);
            if (head && rest.length > 0 && !rest.toString('latin1').startsWith('HTTP/1.1 '))
              result.problems.push(`HEAD answer with a body: ${headText.split('\r\n')[0]}`);
            buffer = Buffer.alloc(0);
            break;
          }
        }
        if (closed || Date.now() > deadline) break;
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, 50);
        });
        wake = null;
      }
      if (answer === null) {
        if (!closed) result.problems.push(`no answer within 5 s to ${bytes.subarray(0, 80).toString('latin1').split('\r\n')[0]}`);
        else if (!again) {
          retry = { bytes, head };
          continue;
        } else result.unanswered.push(bytes.subarray(0, 200).toString('latin1'));
        result.requests++;
        socket!.destroy();
        closed = true;
        continue;
      }
      result.requests++;
      result.byStatus.set(answer.status, (result.byStatus.get(answer.status) ?? 0) + 1);
      if (!/^HTTP\/1\.1 \d{3} /.test(answer.headText)) result.problems.push(`malformed head: ${answer.headText.slice(0, 80)}`);
      if (!DOCUMENTED.has(answer.status))
        result.problems.push(`undocumented ${answer.status} to ${bytes.subarray(0, 120).toString('latin1').split('\r\n')[0]}`);
      if (answer.status === 500) result.problems.push(`500 to ${bytes.subarray(0, 120).toString('latin1').split('\r\n')[0]}`);
      // Keep-alive, except after answers that close (the server may not read what follows).
      if (/connection: close/i.test(answer.headText)) {
        socket!.destroy();
        closed = true;
      }
    }
    (socket as net.Socket | null)?.destroy();
  };
  await Promise.all(Array.from({ length: connections }, worker));
  return result;
}
