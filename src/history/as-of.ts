// A lookup as of a time: the `at` a caller gives, read strictly as RFC 3339, and the answer the
// timeline keeps for that time, written as GET /{ip} writes answers (the caller's plan of
// today decides the fields) with `as_of`, when the build that answered then began to serve.

import type { RangeIndex } from '../index/range-index.js';
import { recordOf, writeAnswerOpening } from '../lookup/answer.js';
import { flagsText } from '../model/projection.js';
import { IPV4, IPV4_MAPPED, type ParsedAddress, addressBigInt, writeNormalised } from '../net/address.js';
import { isBogonV4, isBogonV6 } from '../net/bogons.js';
import type { Content, Timeline } from './timeline.js';

/** RFC 3339's date-time: a date, `T` (or a space, or t), a time with optional fraction, and Z or an offset. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** What an `at` names: a time (Unix seconds), or why it is refused. */
export type ParsedAt = { seconds: number } | { refused: string };

const SHAPE = 'at must be an RFC 3339 time such as 2026-11-01T12:00:00Z or 2026-11-01T13:00:00+01:00';

/** Reads a raw query value (percent-encoded) of `at`, checked against now (a time to come is refused). */
export function parseAt(raw: string, nowMs: number): ParsedAt {
  let text: string;
  try {
    text = decodeURIComponent(raw);
  } catch {
    return { refused: SHAPE };
  }
  // A + is an offset's sign, as clients send it unencoded; only between date and time is it a
  // form-encoded space.
  if (text[10] === '+') text = `${text.slice(0, 10)} ${text.slice(11)}`;
  const m = RFC3339.exec(text);
  if (m === null) return { refused: SHAPE };
  const [, y, mo, d, h, mi, s] = m.map(Number);
  // Date.parse rolls 2026-02-30 into March: the fields are checked against the day they make.
  const probe = new Date(Date.UTC(y, mo - 1, d, h, mi, Math.min(s, 59)));
  if (probe.getUTCMonth() !== mo - 1 || probe.getUTCDate() !== d || h > 23 || mi > 59 || s > 60) return { refused: `${SHAPE}: ${text} is no such time` };
  const ms = Date.parse(text.replace(' ', 'T').replace(/z$/, 'Z').replace(/t/, 'T'));
  if (Number.isNaN(ms)) return { refused: SHAPE };
  if (ms > nowMs) return { refused: `at must not be in the future: ${new Date(ms).toISOString()} is after now` };
  return { seconds: Math.floor(ms / 1000) };
}

const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');

/**
 * The answer for the parsed address as of `seconds`, at `tier`: null with the reason when the
 * timeline does not reach that time. Bogons answer as today (nothing known), with as_of.
 */
export function asOfAnswer(p: ParsedAddress, timeline: Timeline, index: RangeIndex, tier: number, seconds: number): { body: Buffer } | { outside: string } {
  const v4 = p.kind === IPV4 || p.kind === IPV4_MAPPED;
  const family = v4 ? 4 : 6;
  const found = timeline.asOf(family, addressBigInt(p), seconds);
  if ('outside' in found) return found;
  const bogon = v4 ? isBogonV4(p.v4) : isBogonV6(p.w);
  const head = Buffer.alloc(64);
  const n = writeAnswerOpening(head, 0);
  const ip = Buffer.alloc(64);
  const ipLength = writeNormalised(ip, 0, p);
  const asOf = `,"as_of":"${new Date(found.span.from * 1000).toISOString().replace('.000Z', 'Z')}"}`;
  let rest: Buffer;
  if (bogon) {
    // As the answer of today: the index's empty record, which every bogon answers.
    const record = recordOf(index, p);
    const out = Buffer.alloc(index.fragmentLength(record, tier));
    const end = index.copyFragment(record, tier, out, 0);
    rest = Buffer.concat([out.subarray(0, end - 1), utf8(asOf)]);
  } else rest = Buffer.concat([fragment(found.content, tier), utf8(asOf)]);
  return { body: Buffer.concat([head.subarray(0, n), ip.subarray(0, ipLength), utf8('"'), rest]) };
}

/** The flags and the tier's prefix of the details, as the index's fragment but for the closing brace. */
function fragment(c: Content, tier: number): Buffer {
  const details = utf8(c.text).subarray(0, c.ends[tier]);
  return Buffer.concat([utf8(flagsText(tier, c.mask)), details]);
}
