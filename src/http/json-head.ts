// The head of a lookup answer after its status line: Content-Type and the quota headers —
// RateLimit-Limit / -Remaining / -Reset (IETF draft, token bucket: capacity, tokens left,
// seconds until full), X-Allowance-Quota / -Used / -Reset (seconds to the window's end) and
// X-Allowance-Hard-Limit when there is one.
//
// One writeHeader call whose value carries the other headers after CRLFs: each native call
// costs more than the lookup itself. (Writing the value as bytes into a reused buffer was
// measured too: slower than V8 building the string.) Every value is a number made here, so
// nothing from a client reaches this text.

import type { HttpResponse } from 'uWebSockets.js';
import type { Rate } from '../accounts/plans.js';
import type { RateDecision } from '../accounting/meter.js';
import type { Admission } from './gate.js';

/** An exact-size ArrayBuffer: uWS reads one without converting a string. */
const CONTENT_TYPE = new Uint8Array(Buffer.from('Content-Type', 'latin1')).buffer;
const JSON_TYPE = 'application/json';

/** Content-Type: application/json, plus the quota headers when `rate` is given. */
export function writeJsonHead(res: HttpResponse, rate: Rate | null, decision: RateDecision | null, a: Admission | null, used: number, nowMs: number): void {
  if (rate === null || decision === null) {
    res.writeHeader(CONTENT_TYPE, JSON_TYPE);
    return;
  }
  const remaining = Math.max(0, Math.min(rate.burst, decision.remaining));
  let head = `${JSON_TYPE}\r\nRateLimit-Limit: ${rate.burst}\r\nRateLimit-Remaining: ${remaining}\r\nRateLimit-Reset: ${Math.ceil((rate.burst - remaining) / rate.perSecond)}`;
  if (a !== null) {
    head += `\r\nX-Allowance-Quota: ${a.quota}\r\nX-Allowance-Used: ${used}\r\nX-Allowance-Reset: ${Math.ceil((a.window.endMs - nowMs) / 1000)}`;
    if (a.limit !== null) head += `\r\nX-Allowance-Hard-Limit: ${a.limit}`;
  }
  res.writeHeader(CONTENT_TYPE, head);
}
