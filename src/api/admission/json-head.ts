// The head of a lookup answer after its status line: Content-Type, Cache-Control and the quota
// headers. RateLimit-Policy and RateLimit as draft-ietf-httpapi-ratelimit-headers-10 has them
// (Structured Field lists): the "rate" policy is the token bucket (q: capacity, w: seconds to
// refill it from empty; r: tokens left, t: seconds until full), and where the window's
// allowance is enforced (a hard limit, or the keyless daily cap) a "monthly" or "daily" policy
// (q: the limit, w: the window's length; r: lookups left, t: seconds to the window's end).
// X-Allowance-Quota / -Used / -Reset and X-Allowance-Hard-Limit say what the draft has no field
// for: the plan's quota (overage is billed past it, not refused) and the usage.
//
// One writeHeader call whose value carries the other headers after CRLFs, because each
// native call costs more than the lookup itself; and the value is bytes, not a string, which
// uWS would measure, malloc and copy on every call. A 200 answer goes further: one
// writeStatus call carries the status text, Content-Type and the rest (uWS writes its
// argument between "HTTP/1.1 " and CRLF), one native call and one buffer argument fewer. The bytes are a template per plan shape
// (rate, quota, hard limit) in which only the four per-request numbers are rewritten: each
// sits right-aligned in a slot of fixed width, padded on the left with spaces, which HTTP
// reads as optional whitespace before a value (RFC 9110 §5.5) and Structured Fields after a
// parameter's ";" (RFC 8941 §3.1.2: in RateLimit the slot holds `r=42` or `t=7`, spaces
// before the key). A number wider than its slot rebuilds the template with a wider one.
// Every value is a number made here, so nothing from a client reaches this text.

import type { HttpResponse } from '../../http/server/types.js';
import type { Rate } from '../../model/plans.js';
import type { Admission, Refusal } from './gate.js';
import type { Metrics } from '../../http/metrics.js';
import { CONTENT_TYPE, NO_STORE, writeJsonType } from '../../http/json.js';

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

/** Seconds a token bucket takes to fill from empty: its policy's window. */
const refillSeconds = (rate: Rate): number => Math.ceil(rate.burst / rate.perSecond);

// The per-request numbers: tokens left (whole, within the burst), seconds until the bucket is
// full, units used. Three functions, not one returning an object: fill() is the hot path.
const remainingOf = (rate: Rate, tokens: number): number => Math.max(0, Math.min(rate.burst, Math.floor(tokens)));
const resetOf = (rate: Rate, remaining: number): number => Math.ceil((rate.burst - remaining) / rate.perSecond);
const usedOf = (used: number): number => Math.max(0, Math.floor(used));

/** Seconds to the end of the allowance window. */
const windowSeconds = (a: Admission, nowMs: number): number => Math.max(0, Math.ceil((a.window.endMs - nowMs) / 1000));

/** The window policy's name: keys spend a calendar month's allowance, keyless sources a day's cap. */
const windowPolicy = (a: Admission): string => (a.window.id.length === 7 ? '"monthly"' : '"daily"');

/** The window's length in seconds (RateLimit-Policy's w). */
const windowLength = (a: Admission): number => Math.round((a.window.endMs - a.window.startMs) / 1000);

/** Lookups left before the hard limit refuses. */
const leftOf = (limit: number, used: number): number => Math.max(0, limit - used);

/** RateLimit-Policy's value. */
function policyOf(rate: Rate, a: Admission | null): string {
  let v = `"rate";q=${rate.burst};w=${refillSeconds(rate)}`;
  if (a !== null && a.limit !== null) v += `, ${windowPolicy(a)};q=${a.limit};w=${windowLength(a)}`;
  return v;
}

/** What precedes the Content-Type value in the template, for writeOk. */
const OK_OPENING = '200 OK\r\nContent-Type: ';

/**
 * A slot: offset of its first byte, its width in digits, the largest number it holds; the
 * number in it (-1: none) and the range of numbers with as many digits (empty: none).
 */
interface Slot {
  at: number;
  width: number;
  max: number;
  last: number;
  lo: number;
  hi: number;
}

const slot = (): Slot => ({ at: 0, width: 0, max: -1, last: -1, lo: 1, hi: 0 });

/**
 * The plan shape a head's constant texts were made for: the rate, and where an allowance is
 * shown its quota and hard limit, and with a hard limit its window's length and kind (its id's
 * length: a month's or a day's), which RateLimit-Policy states.
 */
class PlanShape {
  private rate: Rate | null = null;
  private allowance = false;
  private quota = -1;
  private limit: number | null = null;
  private windowMs = 0;
  private windowKind = 0;

  /** Whether (rate, a) has this shape; if not, it becomes this shape. */
  keep(rate: Rate, a: Admission | null): boolean {
    if (
      rate === this.rate &&
      (a === null
        ? !this.allowance
        : this.allowance &&
          a.quota === this.quota &&
          a.limit === this.limit &&
          (a.limit === null || (a.window.endMs - a.window.startMs === this.windowMs && a.window.id.length === this.windowKind)))
    )
      return true;
    const limited = a !== null && a.limit !== null;
    this.rate = rate;
    this.allowance = a !== null;
    this.quota = a?.quota ?? -1;
    this.limit = a?.limit ?? null;
    this.windowMs = limited ? a.window.endMs - a.window.startMs : 0;
    this.windowKind = limited ? a.window.id.length : 0;
    return false;
  }
}

export class JsonHead {
  private bytes = new Uint8Array(new ArrayBuffer(512));
  /** The template's bytes, made once per template: whole (writeOk), and from the Content-Type value on (write). */
  private okView = this.bytes.subarray(0, 0);
  private view = this.bytes.subarray(0, 0);
  /** What the template was made for. */
  private readonly templateShape = new PlanShape();
  // Slots: in RateLimit (behind `r=` and `t=`) and in the X-Allowance headers.
  private readonly remaining = slot();
  private readonly reset = slot();
  private readonly left = slot();
  private readonly leftReset = slot();
  private readonly used = slot();
  private readonly windowEnd = slot();

  /** Header names and values for servers that take them as text (writeFields), reused. */
  private readonly fields: string[] = [];
  /** Their texts that follow the plan shape alone (number to text costs, on JavaScriptCore most), and the shape. */
  private texts = { policy: '', windowPolicy: '', quota: '', limit: '' };
  private readonly textsShape = new PlanShape();

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
    if (!this.textsShape.keep(rate, a)) {
      this.texts = {
        policy: policyOf(rate, a),
        windowPolicy: a === null ? '' : windowPolicy(a),
        quota: a === null ? '' : String(a.quota),
        limit: a?.limit == null ? '' : String(a.limit),
      };
    }
    const t = this.texts;
    const remaining = remainingOf(rate, remainingTokens);
    const n = { remaining, reset: resetOf(rate, remaining), used: usedOf(used) };
    const f = this.fields;
    f.length = 0;
    const end = a === null ? '' : String(windowSeconds(a, nowMs));
    let current = `"rate";r=${n.remaining};t=${n.reset}`;
    if (a !== null && a.limit !== null) current += `, ${t.windowPolicy};r=${leftOf(a.limit, n.used)};t=${end}`;
    f.push('Content-Type', 'application/json', 'Cache-Control', NO_STORE, 'RateLimit-Policy', t.policy, 'RateLimit', current);
    if (a !== null) {
      f.push('X-Allowance-Quota', t.quota, 'X-Allowance-Used', String(n.used), 'X-Allowance-Reset', end);
      if (a.limit !== null) f.push('X-Allowance-Hard-Limit', t.limit);
    }
    return f;
  }

  /** Brings the template to the plan shape and writes the per-request numbers into it. */
  private fill(rate: Rate, remainingTokens: number, a: Admission | null, used: number, nowMs: number): void {
    const remaining = remainingOf(rate, remainingTokens);
    const reset = resetOf(rate, remaining);
    const usedNow = usedOf(used);
    const allowance = a !== null;
    const limited = allowance && a.limit !== null;
    const left = limited ? leftOf(a.limit!, usedNow) : 0;
    if (
      !this.templateShape.keep(rate, a) ||
      remaining > this.remaining.max ||
      reset > this.reset.max ||
      (allowance && usedNow > this.used.max) ||
      left > this.left.max
    ) {
      this.build(rate, a, Math.max(digitsOf(rate.burst), digitsOf(remaining)), digitsOf(Math.max(reset, refillSeconds(rate))), usedNow);
    }
    this.put(this.remaining, remaining, 114 /* r */);
    this.put(this.reset, reset, 116 /* t */);
    if (allowance) {
      const end = windowSeconds(a, nowMs);
      this.put(this.used, usedNow, 0);
      this.put(this.windowEnd, end, 0);
      if (limited) {
        this.put(this.left, left, 114);
        this.put(this.leftReset, end, 116);
      }
    }
  }

  private build(rate: Rate, a: Admission | null, remainingWidth: number, resetWidth: number, used: number): void {
    const policy = policyOf(rate, a);
    let text = `${OK_OPENING}application/json\r\nCache-Control: ${NO_STORE}\r\nRateLimit-Policy: ${policy}\r\nRateLimit: "rate";`;
    // A keyed slot is `key=` plus the digits; the key's two bytes widen it.
    const open = (s: Slot, digits: number, keyed: boolean): void => {
      s.at = text.length;
      s.width = digits + (keyed ? 2 : 0);
      s.max = widest(digits);
      s.last = -1;
      s.lo = 1;
      s.hi = 0;
      text += ' '.repeat(s.width);
    };
    open(this.remaining, remainingWidth, true);
    text += ';';
    open(this.reset, resetWidth, true);
    if (a !== null) {
      // Room for usage well past the quota, so the template rarely grows.
      const usedWidth = Math.max(digitsOf(used), digitsOf(Math.max(a.quota, a.limit ?? 0)) + 1);
      if (a.limit !== null) {
        text += `, ${windowPolicy(a)};`;
        open(this.left, digitsOf(a.limit), true);
        text += ';';
        open(this.leftReset, RESET_DIGITS, true);
      }
      text += `\r\nX-Allowance-Quota: ${a.quota}\r\nX-Allowance-Used: `;
      open(this.used, usedWidth, false);
      text += '\r\nX-Allowance-Reset: ';
      open(this.windowEnd, RESET_DIGITS, false);
      if (a.limit !== null) text += `\r\nX-Allowance-Hard-Limit: ${a.limit}`;
    }
    if (a === null || a.limit === null) this.left.max = 0;
    if (a === null) this.used.max = -1;
    if (text.length > this.bytes.length) this.bytes = new Uint8Array(new ArrayBuffer(2 * text.length));
    for (let i = 0; i < text.length; i++) this.bytes[i] = text.charCodeAt(i);
    this.okView = this.bytes.subarray(0, text.length);
    this.view = this.bytes.subarray(OK_OPENING.length, text.length);
  }

  /**
   * Writes v right-aligned in the slot, `key=` before it when key is given (a byte), spaces
   * before that. Only what changed: nothing when the slot holds v already (the window's end
   * changes once a second), and for a number of as many digits as the one there, only the
   * digits that differ (tokens left and units used change by one a request).
   */
  private put(s: Slot, v: number, key: number): void {
    const was = s.last;
    if (v === was) return;
    s.last = v;
    const b = this.bytes;
    const at = s.at;
    let i = at + s.width - 1;
    if (v >= s.lo && v <= s.hi && v < 2147483648) {
      // Same length: the digits above the lowest that differs are the same.
      let old = was;
      do {
        b[i--] = 48 + (v % 10);
        v = (v / 10) | 0;
        old = (old / 10) | 0;
      } while (v !== old);
      return;
    }
    const digits = digitsOf(v);
    s.lo = digits === 1 ? 0 : 10 ** (digits - 1);
    s.hi = 10 ** digits - 1;
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
    if (key !== 0) {
      b[i--] = 61; // =
      b[i--] = key;
    }
    while (i >= at) b[i--] = 32;
  }
}

/** Answers a request the gate refused (401, 403, or 429 with Retry-After). */
export function sendRefusal(res: HttpResponse, r: Refusal, metrics: Metrics, head: JsonHead, close = false): void {
  metrics.count(r.error.status);
  res.writeStatus(r.error.statusLine);
  head.write(res, r.rate ?? null, r.decision?.remaining ?? 0, null, 0, Date.now());
  if (r.retryAfter !== undefined) res.writeHeader('Retry-After', String(r.retryAfter));
  res.end(r.error.body, close);
}
