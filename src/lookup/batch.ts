// POST /batch semantics (interface.md §2.3, §4 rules 2–3, §8): validate the body, collapse
// exact duplicates, answer each distinct string once, keyed by the exact input string.
// Runs on a Piscina worker; the front end runs it itself only when workers keep failing.

import { ERRORS, lookupBadRequest, type ApiError } from '../wire/errors.js';
import { unknownField } from '../wire/body-schema.js';
import { BATCH_REQUEST } from '../wire/request-bodies.js';
import { NOT_ADDRESS, writeAscii } from '../net/address.js';
import type { RangeIndex } from '../index/range-index.js';
import { AddressBatch, REPEATED } from './address-batch.js';
import { answerBytes, writeAnswerOpening, writeAnswerRest } from './answer.js';
import { IDENTITY, MIN_COMPRESSED_BYTES, compress, type Coding } from '../wire/codings.js';

export const MAX_BATCH_ADDRESSES = 1000;

/**
 * The outcome travels between threads as one transferable buffer: a 2-byte big-endian
 * HTTP status, the 4-byte big-endian count of addresses answered (what the allowance
 * pays for), the body's content coding (content-coding.ts; a worker compresses the body it
 * made, off the front end's thread), then the JSON body.
 */
export interface BatchOutcome {
  status: number;
  answered: number;
  coding: Coding;
  body: Uint8Array;
}

export const FRAME_HEADER = 7;

/** Frames a body; with `frame`, the body already sits at FRAME_HEADER inside it. */
export function encodeOutcome(status: number, answered: number, body: Uint8Array, frame?: Uint8Array, coding: Coding = IDENTITY): Uint8Array {
  const out = frame ?? new Uint8Array(body.byteLength + FRAME_HEADER);
  out[0] = status >>> 8;
  out[1] = status & 255;
  new DataView(out.buffer, out.byteOffset, FRAME_HEADER).setUint32(2, answered);
  out[6] = coding;
  if (!frame) out.set(body, FRAME_HEADER);
  return out;
}

export function decodeOutcome(frame: Uint8Array): BatchOutcome {
  return {
    status: (frame[0] << 8) | frame[1],
    answered: new DataView(frame.buffer, frame.byteOffset, FRAME_HEADER).getUint32(2),
    coding: frame[6] as Coding,
    body: frame.subarray(FRAME_HEADER),
  };
}

function errorOutcome(e: ApiError): Uint8Array {
  return encodeOutcome(e.status, 0, e.body);
}

/** The 400 for a field the batch body does not take (BATCH_REQUEST names ips and at). */
function unknownBatchField(field: string): ApiError {
  return lookupBadRequest(`unknown field ${JSON.stringify(field.slice(0, 80))}: a batch body takes ips and at only, as {"ips": ["192.0.2.1"]}`);
}

/**
 * Whether a batch body asks as of a time: its bytes hold `"at"`, the only way to spell the
 * key but escapes. The front end answers those from the timeline; a worker refuses one that
 * reached it by an escaped spelling (parseBatchBody), never answering it as of now.
 */
export function mentionsAt(body: ArrayBuffer): boolean {
  const bytes = Buffer.from(body);
  // Searched from its 't', which no address has: a search from '"' stops at every entry.
  for (let i = bytes.indexOf(T_QUOTE, 3); i >= 0; i = bytes.indexOf(T_QUOTE, i + 1)) {
    if (bytes[i - 1] === 0x61 && bytes[i - 2] === 0x22) return true;
  }
  return false;
}
const T_QUOTE = Buffer.from('t"');

/** The validated `ips` array, or the error the whole call answers. */
export function parseBatchBody(text: string, asOf = false): string[] | ApiError {
  const r = parseBatchRequest(text, asOf);
  return 'ips' in r ? r.ips : r;
}

/** The validated body: `ips`, and `at` as sent (undefined: absent), parsed once; or the error the whole call answers. */
export function parseBatchRequest(text: string, asOf = false): ApiError | { ips: string[]; at: unknown } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return ERRORS.batchShape;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return ERRORS.batchShape;
  // A field besides ips is refused by name (request-bodies.ts): nothing a client sends is ignored.
  const ips = (parsed as { ips?: unknown }).ips;
  if (!Array.isArray(ips)) return ERRORS.batchShape;
  for (let i = 0; i < ips.length; i++) if (typeof ips[i] !== 'string') return ERRORS.batchShape;
  // Past the contract's shape, a field besides ips is refused by name: nothing sent is ignored.
  const extra = unknownField(BATCH_REQUEST, parsed);
  if (extra !== null) return unknownBatchField(extra);
  if (ips.length < 1 || ips.length > MAX_BATCH_ADDRESSES) return ERRORS.batchSize;
  if (!asOf && 'at' in (parsed as object)) return lookupBadRequest('at must be spelt "at", without escapes');
  return { ips: ips as string[], at: (parsed as { at?: unknown }).at };
}

const OPEN = Buffer.from('{"results":{');
const MIDDLE = Buffer.from('},"errors":{');
const CLOSE = Buffer.from('}}');

/** Per-thread scratch: a batch is answered synchronously, start to end. */
const scratch = new AddressBatch(MAX_BATCH_ADDRESSES);
/** Sink for touchFragments' reads. */
// biome-ignore lint/correctness/noUnusedVariables: written so that the reads are not optimised away
let touched = 0;

/** Per input: the ordinal (1-based) of its distinct address, NOT_LISTED, or a first non-address. */
const ordinals = new Int32Array(MAX_BATCH_ADDRESSES);
const NOT_LISTED = 0;
const FIRST_NOT_ADDRESS = -1;

/**
 * Answers a batch body (UTF-8 JSON) with the fields of `tier`. The first `budget` distinct
 * addresses (input order) are answered, later ones are `refusal` entries (a spent
 * allowance). With no index every address answers 500 `lookup failed`; strings that are not
 * addresses answer 400 all the same. Returns the framed outcome (see encodeOutcome): at the
 * start of `into` when it fits there, else in a fresh buffer the caller may transfer.
 */
export function answerBatch(
  bodyText: string,
  index: RangeIndex | null,
  tier: number,
  budget: number = MAX_BATCH_ADDRESSES,
  refusal: ApiError = ERRORS.allowanceSpent,
  into?: Buffer,
): Uint8Array {
  const ips = parseBatchBody(bodyText);
  if (!Array.isArray(ips)) return errorOutcome(ips);

  // Pass 1: parse each distinct string.
  const batch = scratch;
  batch.clear();
  let notAddresses: Set<string> | null = null;
  for (let i = 0; i < ips.length; i++) {
    const s = ips[i];
    const kind = batch.addDistinct(s);
    ordinals[i] = NOT_LISTED;
    if (kind === REPEATED) continue;
    if (kind !== NOT_ADDRESS) ordinals[i] = batch.count;
    else if (!(notAddresses ??= new Set()).has(s)) {
      notAddresses.add(s);
      ordinals[i] = FIRST_NOT_ADDRESS;
    }
  }
  const answerable = index === null ? 0 : budget;
  // Errors in input order.
  let errorsText = '';
  for (let i = 0; i < ips.length; i++) {
    const o = ordinals[i];
    if (o === NOT_LISTED || (o > 0 && o <= answerable)) continue;
    const e = o === FIRST_NOT_ADDRESS ? ERRORS.notAddress : index === null ? ERRORS.lookupFailed : refusal;
    errorsText += `${errorsText ? ',' : ''}${JSON.stringify(ips[i])}:${e.entry.toString('latin1')}`;
  }
  const answered = Math.min(batch.count, answerable);
  const inputs = batch.texts;

  // Pass 2: search them all, bring each answer's record row and details into cache (misses
  // overlapped), then bound the body's size from the cached rows (an address's normalised
  // text takes at most MAX_ADDRESS_LENGTH bytes, see answerBytes).
  let size = OPEN.length + MIDDLE.length + CLOSE.length;
  if (index !== null) {
    batch.resolve(index, answered);
    const records = batch.records;
    touched += index.touchFragments(records, answered, tier);
    for (let i = 0; i < answered; i++) {
      // An address's text is [0-9a-fA-F:.] only: it needs no JSON escaping as a key.
      size += inputs[i].length + 3 + answerBytes(index, records[i], tier) + 1;
    }
  }
  const errorsBytes = Buffer.byteLength(errorsText);
  size += errorsBytes;

  // Pass 3: write into one buffer with the status frame in front. A fresh buffer of a few
  // hundred KiB costs its page faults on every batch (a quarter of a worker's time, measured),
  // hence `into`. Not allocUnsafe: a pooled slab would be detached when the result is transferred.
  const frame = into !== undefined && into.length >= size + FRAME_HEADER ? into : Buffer.allocUnsafeSlow(size + FRAME_HEADER);
  let pos = FRAME_HEADER + OPEN.copy(frame, FRAME_HEADER);
  for (let i = 0; i < answered; i++) {
    if (i > 0) frame[pos++] = 44; // ,
    frame[pos++] = 34;
    pos = writeAscii(frame, pos, inputs[i]);
    frame[pos++] = 34;
    frame[pos++] = 58; // :
    pos = writeAnswerOpening(frame, pos);
    pos = batch.writeNormalised(i, frame, pos);
    pos = writeAnswerRest(frame, pos, index!, batch.records[i], tier);
  }
  pos += MIDDLE.copy(frame, pos);
  pos += frame.write(errorsText, pos, 'utf8');
  pos += CLOSE.copy(frame, pos);
  return encodeOutcome(200, answered, frame.subarray(0, pos), frame.subarray(0, pos));
}

/**
 * The outcome with its body in `coding` where that is worth it (a 200 body of
 * MIN_COMPRESSED_BYTES or more that compresses smaller); written back into the same frame,
 * which the compressed body always fits.
 */
export function compressOutcome(frame: Uint8Array, coding: Coding): Uint8Array {
  const body = frame.subarray(FRAME_HEADER);
  if (coding === IDENTITY || frame[0] !== 0 || frame[1] !== 200 || body.byteLength < MIN_COMPRESSED_BYTES) return frame;
  const packed = compress(body, coding);
  if (packed.byteLength >= body.byteLength) return frame;
  frame.set(packed, FRAME_HEADER);
  frame[6] = coding;
  return frame.subarray(0, FRAME_HEADER + packed.byteLength);
}
