// One answer: {"ip":"<normalised>" + the precomputed fragment of (record, tier).

import { IPV6, MAX_ADDRESS_LENGTH, NOT_ADDRESS, ParsedAddress, parseAddress, writeNormalised } from '../net/address.js';
import { isBogonV4, isBogonV6 } from '../net/bogons.js';
import type { RangeIndex } from '../index/range-index.js';

/** The record that answers for the address; record 0 (nothing known) for bogons. */
export function recordOf(index: RangeIndex, p: ParsedAddress): number {
  if (p.kind === IPV6) return isBogonV6(p.w) ? 0 : index.lookupV6(p.w);
  return isBogonV4(p.v4) ? 0 : index.lookupV4(p.v4);
}

/** `{"ip":"`, which writeAnswerOpening writes. */
const IP_PREFIX_LENGTH = 7;

/** Bytes writeAnswer needs at most for (record, tier), whatever the address. */
export function answerBytes(index: RangeIndex, record: number, tier: number): number {
  return IP_PREFIX_LENGTH + MAX_ADDRESS_LENGTH + 1 + index.fragmentLength(record, tier);
}

/**
 * Writes the answer for the address parsed into p at pos in out; returns the end. The
 * address is written from the parse, no string made.
 */
export function writeAnswer(out: Buffer, pos: number, p: ParsedAddress, index: RangeIndex, record: number, tier: number): number {
  pos = writeAnswerOpening(out, pos);
  pos = writeNormalised(out, pos, p);
  return writeAnswerRest(out, pos, index, record, tier);
}

/** `{"ip":"`: the part of an answer before the address. */
export function writeAnswerOpening(out: Uint8Array, pos: number): number {
  // Byte by byte from constants: a loop over a prefix buffer checks both arrays at every byte.
  out[pos] = 123; // {
  out[pos + 1] = 34; // "
  out[pos + 2] = 105; // i
  out[pos + 3] = 112; // p
  out[pos + 4] = 34; // "
  out[pos + 5] = 58; // :
  out[pos + 6] = 34; // "
  return pos + IP_PREFIX_LENGTH;
}

/** The part of an answer after the address: its closing quote and the fragment. */
export function writeAnswerRest(out: Buffer, pos: number, index: RangeIndex, record: number, tier: number): number {
  out[pos++] = 34;
  return index.copyFragment(record, tier, out, pos);
}

const parsedForJson = new ParsedAddress();

/**
 * The answer for an address text as an object (tools and reports, not the hot path): what
 * GET /{ip} answers at that tier; null when the text is not an address.
 */
export function answerObject(index: RangeIndex, text: string, tier: number): Record<string, unknown> | null {
  const p = parsedForJson;
  if (parseAddress(text, 0, text.length, p) === NOT_ADDRESS) return null;
  const record = recordOf(index, p);
  const out = Buffer.alloc(answerBytes(index, record, tier));
  return JSON.parse(out.toString('utf8', 0, writeAnswer(out, 0, p, index, record, tier))) as Record<string, unknown>;
}
