// Content-coding negotiation (RFC 9110 §8.4, §12.5.3): which coding an Accept-Encoding asks
// for, and the headers of a compressed answer. The codings and the compression itself are in
// wire/codings.ts, where the batch workers reach them too.

import type { HttpResponse } from './server/types.js';
import { BR, CODING_NAMES, GZIP, IDENTITY, type Coding } from '../wire/codings.js';

/** The longest Accept-Encoding read; the rest is ignored (a client's list is a few dozen bytes). */
const MAX_ACCEPT_LENGTH = 512;

/** A member's q-value (RFC 9110 §12.4.2): 1 when absent; one that does not parse accepts nothing. */
function qOf(params: string): number {
  for (const p of params.split(';')) {
    const t = p.trim();
    if (t.length < 2 || (t[0] !== 'q' && t[0] !== 'Q') || t[1] !== '=') continue;
    return /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(t.slice(2)) ? Number(t.slice(2)) : 0;
  }
  return 1;
}

/** The weights (q-values) an Accept-Encoding gives gzip and br; -1: not acceptable. `x-gzip` is gzip (RFC 9110 §8.4.1.3). */
function weightsOf(acceptEncoding: string): { gzip: number; br: number } {
  let gzip = -1;
  let br = -1;
  let any = -1;
  for (const part of acceptEncoding.slice(0, MAX_ACCEPT_LENGTH).split(',')) {
    const semi = part.indexOf(';');
    const name = (semi < 0 ? part : part.slice(0, semi)).trim().toLowerCase();
    const q = semi < 0 ? 1 : qOf(part.slice(semi + 1));
    if (name === 'br') br = Math.max(br, q);
    else if (name === 'gzip' || name === 'x-gzip') gzip = Math.max(gzip, q);
    else if (name === '*') any = Math.max(any, q);
  }
  // `*` stands for any coding not named (RFC 9110 §12.5.3).
  return { gzip: gzip < 0 ? any : gzip, br: br < 0 ? any : br };
}

/**
 * The coding to answer with: the acceptable one with the highest q-value among those offered,
 * br before gzip at equal weight (smaller, and faster at the levels used here); identity when
 * the header is absent or accepts neither.
 */
export function negotiate(acceptEncoding: string): Coding {
  if (acceptEncoding === '') return IDENTITY;
  const { gzip, br } = weightsOf(acceptEncoding);
  if (br <= 0 && gzip <= 0) return IDENTITY;
  return br >= gzip ? BR : GZIP;
}

/** Whether gzip is acceptable (downloads have a gzip form only). */
export const acceptsGzip = (acceptEncoding: string): boolean => acceptEncoding !== '' && weightsOf(acceptEncoding).gzip > 0;

/**
 * Content-Encoding for a compressed answer, and Vary: only answers that were compressed say
 * they vary; the rest are `no-store` (json-head.ts), so no cache could mix them up.
 */
export function writeCoding(res: HttpResponse, coding: typeof GZIP | typeof BR): void {
  res.writeHeader('Content-Encoding', CODING_NAMES[coding]).writeHeader('Vary', 'Accept-Encoding');
}
