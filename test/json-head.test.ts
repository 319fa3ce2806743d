// The quota headers written from a reused byte template: values exact whatever their size,
// after template switches and slot growth, and read back as a client reads them.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { HttpResponse } from 'uWebSockets.js';
import type { Rate } from '../src/accounts/plans.js';
import type { Admission } from '../src/http/gate.js';
import { JsonHead } from '../src/http/json-head.js';

/**
 * Writes through a fake response that renders the bytes as uWS does, and parses the head as
 * an HTTP client would; a status line comes back as `:status`.
 */
function headersOf(write: (res: HttpResponse) => void, asFields = false): Record<string, string> {
  let text = '';
  const bytes = (v: Uint8Array | ArrayBuffer | string) => (typeof v === 'string' ? v : Buffer.from(v instanceof ArrayBuffer ? new Uint8Array(v) : v).toString('latin1'));
  const res = {
    writeStatus(status: Uint8Array | ArrayBuffer | string) {
      text += `HTTP/1.1 ${bytes(status)}\r\n`;
      return res;
    },
    writeHeader(name: ArrayBuffer | string, value: Uint8Array | ArrayBuffer | string) {
      text += `${bytes(name)}: ${bytes(value)}\r\n`;
      return res;
    },
    // As node:http and Bun.serve take them: names and values.
    ...(asFields && {
      writeFields(status: string | null, fields: readonly string[]) {
        if (status !== null) text += `HTTP/1.1 ${status}\r\n`;
        for (let i = 0; i < fields.length; i += 2) text += `${fields[i]}: ${fields[i + 1]}\r\n`;
        return res;
      },
    }),
  } as unknown as HttpResponse;
  write(res);
  const out: Record<string, string> = {};
  const lines = text.split('\r\n').filter(Boolean);
  if (lines[0]?.startsWith('HTTP/1.1 ')) out[':status'] = lines.shift()!.slice(9);
  for (const line of lines) {
    const colon = line.indexOf(':');
    assert.ok(colon > 0, line);
    const name = line.slice(0, colon).toLowerCase();
    assert.ok(!(name in out), `${name} twice`);
    assert.match(line.slice(colon + 1), /^ +\S+$/, 'only spaces before a value, none after');
    out[name] = line.slice(colon + 1).trim();
  }
  return out;
}

const admission = (quota: number, limit: number | null, endMs: number) => ({ quota, limit, window: { endMs } }) as unknown as Admission;

describe('JSON answer head', () => {
  for (const asFields of [false, true]) {
    test(`every value exact across plan shapes, growing numbers and values past 2^31 (${asFields ? 'as names and values' : 'as bytes'})`, () => {
      const head = new JsonHead();
      const now = Date.UTC(2026, 10, 21, 12);
      const small: Rate = { perSecond: 10, burst: 20 };
      const big: Rate = { perSecond: 1e9, burst: 1e9 };
      const cases: [Rate | null, number, Admission | null, number][] = [
        [small, 19, admission(1000, null, now + 3_600_000), 1],
        [small, 3, admission(1000, 1500, now + 3_600_000), 999],
        [small, 3, admission(1000, 1500, now + 3_600_000), 123_456_789], // wider than its slot
        [small, 0, null, 0], // a refusal: rate headers only
        [big, 999_999_999, admission(1e12, null, now + 31 * 86_400_000), 5_000_000_000],
        [big, 7, admission(1e12, 2 ** 40, now + 1000), 2 ** 33 + 7],
        [null, 0, null, 0],
        [small, 20, admission(5, 5, now + 1), 5],
      ];
      for (const [rate, remaining, a, used] of cases) {
        const h = headersOf((res) => head.write(res, rate, remaining, a, used, now), asFields);
        const expected: Record<string, string> = { 'content-type': 'application/json' };
        if (rate) {
          expected['ratelimit-limit'] = String(rate.burst);
          expected['ratelimit-remaining'] = String(remaining);
          expected['ratelimit-reset'] = String(Math.ceil((rate.burst - remaining) / rate.perSecond));
        }
        if (rate && a) {
          expected['x-allowance-quota'] = String(a.quota);
          expected['x-allowance-used'] = String(used);
          expected['x-allowance-reset'] = String(Math.ceil((a.window.endMs - now) / 1000));
          if (a.limit !== null) expected['x-allowance-hard-limit'] = String(a.limit);
        }
        assert.deepEqual(h, expected);
        // A 200 writes the same head through writeStatus, behind its status line.
        if (rate && a) {
          const full = { ...a, rate, decision: { remaining } } as unknown as Admission;
          assert.deepEqual(
            headersOf((res) => head.writeOk(res, full, used, now), asFields),
            { ':status': '200 OK', ...expected },
          );
        }
      }
    });
  }
});
