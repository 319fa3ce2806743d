// The head of a lookup answer after its status line: Content-Type and the quota headers —
// RateLimit-Limit / -Remaining / -Reset (IETF draft, token bucket: capacity, tokens left,
// seconds until full), X-Allowance-Quota / -Used / -Reset (seconds to the window's end) and
// X-Allowance-Hard-Limit when there is one.
//
// One writeHeader call whose value carries the other headers after CRLFs, because each
// native call costs more than the lookup itself; and the value is bytes, not a string, which
// uWS would measure, malloc and copy on every call. A 200 answer goes further: one
// writeStatus call carries the status text, Content-Type and the rest (uWS writes its
// argument between "HTTP/1.1 " and CRLF), one native call and one buffer argument fewer. The bytes are a template per plan shape
// (rate, quota, hard limit) in which only the four per-request numbers are rewritten: each
// sits right-aligned in a slot of fixed width, padded on the left with spaces, which HTTP
// reads as optional whitespace before the value (RFC 9110 §5.5). A number wider than its
// slot rebuilds the template with a wider one. Every value is a number made here, so
// nothing from a client reaches this text.

import type { HttpResponse } from './server/types.js';
import type { Rate } from '../accounts/plans.js';
import type { Admission } from './gate.js';
import { nativeString } from './server/bytes.js';

const CONTENT_TYPE = nativeString('Content-Type');
const JSON_TYPE = nativeString('application/json');

/** Content-Type: application/json, for every JSON answer of the service. */
export function writeJsonType(res: HttpResponse): HttpResponse {
  return res.writeHeader(CONTENT_TYPE, JSON_TYPE);
}

/** Seconds in the longest window (a 31-day month): the allowance reset's slot. */
const RESET_DIGITS = 7;

/** Decimal digits of a non-negative integer. */
function digitsOf(v: number): number {
  let d = 1;
  for (let x = v; x >= 10; x = Math.floor(x / 10)) d++;
  return d;
}

/** The largest number a slot of `width` digits holds. */
const widest = (width: number): number => 10 ** width - 1;

/** The per-request numbers: tokens left (whole, within the burst), seconds until the bucket is full, units used. */
function numbersOf(rate: Rate, remainingTokens: number, used: number): { remaining: number; reset: number; used: number } {
  const remaining = Math.max(0, Math.min(rate.burst, Math.floor(remainingTokens)));
  return { remaining, reset: Math.ceil((rate.burst - remaining) / rate.perSecond), used: Math.max(0, Math.floor(used)) };
}

/** Seconds to the end of the allowance window. */
const windowSeconds = (a: Admission, nowMs: number): number => Math.max(0, Math.ceil((a.window.endMs - nowMs) / 1000));

/** What precedes the Content-Type value in the template, for writeOk. */
const OK_OPENING = '200 OK\r\nContent-Type: ';

export class JsonHead {
  private bytes = new Uint8Array(new ArrayBuffer(512));
  /** The template's bytes, made once per template: whole (writeOk), and from the Content-Type value on (write). */
  private okView = this.bytes.subarray(0, 0);
  private view = this.bytes.subarray(0, 0);
  // What the template was made for.
  private rate: Rate | null = null;
  private quota = -1;
  private limit: number | null = null;
  private allowance = false;
  // Slots: offset of the first byte and width.
  private remainingAt = 0;
  private remainingWidth = 0;
  private remainingMax = -1;
  private resetAt = 0;
  private resetWidth = 0;
  private resetMax = -1;
  private usedAt = 0;
  private usedWidth = 0;
  private usedMax = -1;
  private windowAt = 0;

  /** Header names and values for servers that take them as text (writeFields), reused. */
  private readonly fields: string[] = [];

  /** Content-Type: application/json, plus the quota headers when `rate` is given. */
  write(res: HttpResponse, rate: Rate | null, remainingTokens: number, a: Admission | null, used: number, nowMs: number): void {
    if (rate === null) {
      writeJsonType(res);
      return;
    }
    if (res.writeFields !== undefined) {
      res.writeFields(null, this.fieldsOf(rate, remainingTokens, a, used, nowMs));
      return;
    }
    this.fill(rate, remainingTokens, a, used, nowMs);
    res.writeHeader(CONTENT_TYPE, this.view);
  }

  /**
   * The status line of a 200 and write()'s headers for an admission, in one call; only
   * Content-Type when the admission counts nothing (keyless lookups not limited).
   */
  writeOk(res: HttpResponse, a: Admission, used: number, nowMs: number): void {
    if (a.rate === null) {
      writeJsonType(res);
      return;
    }
    if (res.writeFields !== undefined) {
      res.writeFields('200 OK', this.fieldsOf(a.rate, a.decision.remaining, a, used, nowMs));
      return;
    }
    this.fill(a.rate, a.decision.remaining, a, used, nowMs);
    res.writeStatus(this.okView);
  }

  /** The same headers as names and values (a server that takes text would parse the bytes back). */
  private fieldsOf(rate: Rate, remainingTokens: number, a: Admission | null, used: number, nowMs: number): string[] {
    const n = numbersOf(rate, remainingTokens, used);
    const f = this.fields;
    f.length = 0;
    f.push('Content-Type', 'application/json', 'RateLimit-Limit', String(rate.burst), 'RateLimit-Remaining', String(n.remaining), 'RateLimit-Reset', String(n.reset));
    if (a !== null) {
      f.push('X-Allowance-Quota', String(a.quota), 'X-Allowance-Used', String(n.used), 'X-Allowance-Reset', String(windowSeconds(a, nowMs)));
      if (a.limit !== null) f.push('X-Allowance-Hard-Limit', String(a.limit));
    }
    return f;
  }

  /** Brings the template to the plan shape and writes the per-request numbers into it. */
  private fill(rate: Rate, remainingTokens: number, a: Admission | null, used: number, nowMs: number): void {
    const { remaining, reset, used: usedNow } = numbersOf(rate, remainingTokens, used);
    const allowance = a !== null;
    if (
      rate !== this.rate ||
      allowance !== this.allowance ||
      (allowance && (a.quota !== this.quota || a.limit !== this.limit)) ||
      remaining > this.remainingMax ||
      reset > this.resetMax ||
      (allowance && usedNow > this.usedMax)
    ) {
      this.build(rate, a, Math.max(digitsOf(rate.burst), digitsOf(remaining)), digitsOf(Math.max(reset, Math.ceil(rate.burst / rate.perSecond))), usedNow);
    }
    this.slot(this.remainingAt, this.remainingWidth, remaining);
    this.slot(this.resetAt, this.resetWidth, reset);
    if (allowance) {
      this.slot(this.usedAt, this.usedWidth, usedNow);
      this.slot(this.windowAt, RESET_DIGITS, windowSeconds(a, nowMs));
    }
  }

  private build(rate: Rate, a: Admission | null, remainingWidth: number, resetWidth: number, used: number): void {
    let text = `${OK_OPENING}application/json\r\nRateLimit-Limit: ${rate.burst}\r\nRateLimit-Remaining: `;
    this.remainingAt = text.length;
    this.remainingWidth = remainingWidth;
    text += ' '.repeat(remainingWidth) + '\r\nRateLimit-Reset: ';
    this.resetAt = text.length;
    this.resetWidth = resetWidth;
    text += ' '.repeat(resetWidth);
    if (a !== null) {
      // Room for usage well past the quota, so the template rarely grows.
      this.usedWidth = Math.max(digitsOf(used), digitsOf(Math.max(a.quota, a.limit ?? 0)) + 1);
      text += `\r\nX-Allowance-Quota: ${a.quota}\r\nX-Allowance-Used: `;
      this.usedAt = text.length;
      text += ' '.repeat(this.usedWidth) + '\r\nX-Allowance-Reset: ';
      this.windowAt = text.length;
      text += ' '.repeat(RESET_DIGITS);
      if (a.limit !== null) text += `\r\nX-Allowance-Hard-Limit: ${a.limit}`;
    }
    if (text.length > this.bytes.length) this.bytes = new Uint8Array(new ArrayBuffer(2 * text.length));
    for (let i = 0; i < text.length; i++) this.bytes[i] = text.charCodeAt(i);
    this.okView = this.bytes.subarray(0, text.length);
    this.view = this.bytes.subarray(OK_OPENING.length, text.length);
    this.remainingMax = widest(this.remainingWidth);
    this.resetMax = widest(this.resetWidth);
    this.usedMax = a !== null ? widest(this.usedWidth) : -1;
    this.rate = rate;
    this.allowance = a !== null;
    this.quota = a?.quota ?? -1;
    this.limit = a?.limit ?? null;
  }

  /** Writes v right-aligned in the slot, spaces before it (the slot is wide enough). */
  private slot(at: number, width: number, v: number): void {
    const b = this.bytes;
    let i = at + width - 1;
    if (v < 2147483648) {
      do {
        b[i--] = 48 + (v % 10);
        v = (v / 10) | 0;
      } while (v > 0);
    } else {
      do {
        b[i--] = 48 + (v % 10);
        v = Math.floor(v / 10);
      } while (v > 0);
    }
    while (i >= at) b[i--] = 32;
  }
}
