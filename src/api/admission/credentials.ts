// Credentials as a request presents them, read once at admission: the Authorization and
// X-API-Key headers and the apikey query parameter, each refused when it comes twice with
// different values (which of two credentials counts is never guessed). The public port's gate
// and the admin port's operator tokens read them here.

import { UNUSABLE_KEY, presentedKey } from '../../control/auth.js';
import { nativeString } from '../../http/server/bytes.js';
import type { HttpRequest } from '../../http/server/types.js';

const AUTHORIZATION = nativeString('authorization');
const X_API_KEY = nativeString('x-api-key');

/** What the last walk of a request's key headers found (module state: the walk allocates nothing). */
let walkedAuth: string | null = null;
let walkedKey: string | null = null;
let walkConflict = false;

/** The walk's visitor: one function for every request, so the walk makes no closure. */
function visitKeyHeader(name: string, value: string): void {
  if (name === 'authorization') {
    if (walkedAuth !== null && walkedAuth !== value) walkConflict = true;
    walkedAuth = value;
  } else if (name === 'x-api-key') {
    const v = value.trim();
    if (walkedKey !== null && walkedKey !== v) walkConflict = true;
    walkedKey = v;
  }
}

/**
 * Walks the key headers of a request that presents one into walkedAuth and walkedKey:
 * getHeader sees only the first of a name, so the headers are walked to catch a name that
 * comes twice with different values (DESIGN.md §5: 401). False for such a conflict. Only
 * requests with a key header pay for the walk: 3 % of a keyed lookup's CPU on uWS, which
 * makes two strings and a call per header (measured with both servers at once).
 */
function walkKeyHeaders(req: HttpRequest): boolean {
  walkedAuth = null;
  walkedKey = null;
  walkConflict = false;
  req.forEach(visitKeyHeader);
  return !walkConflict;
}

/**
 * The Authorization header ('' when absent), or null when it comes more than once with
 * different values: which of two credentials counts is never guessed (the admin port reads it
 * so too).
 */
export function authorizationOf(req: HttpRequest): string | null {
  if (req.joinsRepeatedHeaders) return oneOf(req.getHeader(AUTHORIZATION));
  let auth: string | null = null;
  let conflict = false;
  req.forEach((name, value) => {
    if (name !== 'authorization') return;
    if (auth !== null && auth !== value) conflict = true;
    auth = value;
  });
  return conflict ? null : (auth ?? '');
}

/** The value of a header joined from repeats when they all agree, else null. */
function oneOf(joined: string): string | null {
  if (!joined.includes(', ')) return joined;
  const values = joined.split(', ').map((v) => v.trim());
  return values.every((v) => v === values[0]) ? values[0] : null;
}

/**
 * The `apikey` query parameter of a raw query string: undefined when absent, null when it
 * comes twice with different values, else its decoded value.
 */
export function queryKey(query: string | undefined): string | null | undefined {
  queryAt = undefined;
  if (query === undefined || query === '') return undefined;
  let key: string | undefined;
  for (let at = 0; at < query.length; ) {
    let end = query.indexOf('&', at);
    if (end < 0) end = query.length;
    if (query.startsWith('at=', at)) {
      // Noted in passing: a lookup as of a time (history/). Two of them are not guessed between.
      const v = query.slice(at + 3, end);
      queryAt = queryAt === undefined || queryAt === v ? v : null;
    } else if (query.startsWith('apikey=', at)) {
      let v: string;
      try {
        v = decodeURIComponent(query.slice(at + 7, end));
      } catch {
        v = UNUSABLE_KEY;
      }
      if (key !== undefined && key !== v) return null;
      key = v;
    }
    at = end + 1;
  }
  return key;
}

/**
 * The raw `at` parameter of the query the last presentedKeyOf read: undefined when absent,
 * null when it came twice with different values. Module state, read right after that call:
 * the query is walked once, and a lookup without `at` pays one comparison for it.
 */
let queryAt: string | null | undefined;
export const lastQueryAt = (): string | null | undefined => queryAt;

/** The key a request presents in its headers or query (null: two different ones). Read before any await. */
export function presentedKeyOf(req: HttpRequest): string | null {
  let auth = '';
  let x = '';
  if (req.joinsRepeatedHeaders) {
    // The server joined a repeated header with ", " (which no key holds): split it back.
    const a = oneOf(req.getHeader(AUTHORIZATION));
    const k = oneOf(req.getHeader(X_API_KEY).trim());
    if (a === null || k === null) return null;
    auth = a;
    x = k;
  } else if (req.getHeader(AUTHORIZATION) !== '' || req.getHeader(X_API_KEY) !== '') {
    if (!walkKeyHeaders(req)) return null;
    auth = walkedAuth ?? '';
    x = walkedKey ?? '';
  }
  const q = queryKey(req.getQuery());
  return q === null ? null : presentedKey(auth, x, q);
}
