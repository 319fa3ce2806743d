// The quota headers written from a reused byte template: values exact whatever their size,
// after template switches and slot growth, and read back as a client reads them.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { HttpResponse } from 'uWebSockets.js';
import type { Rate } from '../src/model/plans.js';
import type { Admission } from '../src/api/admission/gate.js';
import { JsonHead } from '../src/api/admission/json-head.js';
import { parseList, type Member } from './structured-fields.js';

/**
 * Writes through a fake response that renders the bytes as uWS does, and parses the head as
 * an HTTP client would; a status line comes back as `:status`.
 */
function headersOf(write: (res: HttpResponse) => void, asFields = false): Record<string, string> {
  let text = '';
  const bytes = (v: Uint8Array | ArrayBuffer | string) =>
    typeof v === 'string' ? v : Buffer.from(v instanceof ArrayBuffer ? new Uint8Array(v) : v).toString('latin1');
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
    assert.match(line.slice(colon + 1), /^ +\S(.*\S)?$/, 'only spaces before a value, none after');
    out[name] = line.slice(colon + 1).trim();
  }
  return out;
}

/** A key's admission (a month's window of `days`) or, with `daily`, a keyless source's (a day). */
const admission = (quota: number, limit: number | null, endMs: number, days = 30, daily = false) =>
  ({ quota, limit, window: { id: daily ? '2026-11-21' : '2026-11', startMs: endMs - days * 86_400_000, endMs } }) as unknown as Admission;

/** The two RateLimit fields, read as Structured Field lists (which also checks their syntax). */
function rateLimitOf(h: Record<string, string>): Record<string, Member[]> | undefined {
  if (h.ratelimit === undefined && h['ratelimit-policy'] === undefined) return undefined;
  return { policy: parseList(h['ratelimit-policy']), current: parseList(h.ratelimit) };
}

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
        [small, 4, admission(5, 5, now + 1), 9], // past the limit: none left
        [small, 4, admission(300, 300, now + 3_600_000, 1, true), 12], // a keyless source's day
        [small, 4, admission(1000, 1500, now + 3_600_000, 31), 12], // a longer month
        [small, 4, admission(1000, 1500, now + 3_600_000, 31), 1499],
      ];
      for (const [rate, remaining, a, used] of cases) {
        const h = headersOf((res) => head.write(res, rate, remaining, a, used, now), asFields);
        const expected: Record<string, string> = { 'content-type': 'application/json', 'cache-control': 'private, no-store' };
        let limits: Record<string, Member[]> | undefined;
        if (rate) {
          limits = {
            policy: [{ value: 'rate', params: { q: rate.burst, w: Math.ceil(rate.burst / rate.perSecond) } }],
            current: [{ value: 'rate', params: { r: remaining, t: Math.ceil((rate.burst - remaining) / rate.perSecond) } }],
          };
        }
        if (rate && a) {
          const end = String(Math.ceil((a.window.endMs - now) / 1000));
          expected['x-allowance-quota'] = String(a.quota);
          expected['x-allowance-used'] = String(used);
          expected['x-allowance-reset'] = end;
          if (a.limit !== null) {
            expected['x-allowance-hard-limit'] = String(a.limit);
            const name = a.window.id.length === 7 ? 'monthly' : 'daily';
            limits!.policy.push({ value: name, params: { q: a.limit, w: (a.window.endMs - a.window.startMs) / 1000 } });
            limits!.current.push({ value: name, params: { r: Math.max(0, a.limit - used), t: Number(end) } });
          }
        }
        assert.deepEqual(rateLimitOf(h), limits);
        delete h.ratelimit;
        delete h['ratelimit-policy'];
        assert.deepEqual(h, expected);
        // A 200 writes the same head through writeStatus, behind its status line.
        if (rate && a) {
          const full = { ...a, rate, decision: { remaining } } as unknown as Admission;
          const ok = headersOf((res) => head.writeOk(res, full, used, now), asFields);
          assert.deepEqual(rateLimitOf(ok), limits);
          delete ok.ratelimit;
          delete ok['ratelimit-policy'];
          assert.deepEqual(ok, { ':status': '200 OK', ...expected });
        }
      }
    });
  }

  test('numbers that change by little, across lengths, are written whole (only the changed digits are rewritten)', () => {
    const head = new JsonHead();
    const now = Date.UTC(2026, 10, 21, 12);
    const rate: Rate = { perSecond: 10, burst: 200 };
    const a = admission(1000, 1500, now + 3_600_000);
    // Tokens left and units used one request after another, down and up across 10 and 100.
    const steps: [number, number][] = [
      [200, 98],
      [199, 99],
      [101, 100],
      [100, 101],
      [99, 100],
      [10, 99],
      [9, 10],
      [10, 9],
      [0, 0],
      [1, 1],
      [100, 1000],
      [100, 999],
      [7, 1001],
    ];
    let end = now;
    for (const [remaining, used] of steps) {
      const h = headersOf((res) => head.writeOk(res, { ...a, rate, decision: { remaining } } as unknown as Admission, used, end));
      const reset = Math.ceil((a.window.endMs - end) / 1000);
      assert.deepEqual(rateLimitOf(h)!.current, [
        { value: 'rate', params: { r: remaining, t: Math.ceil((rate.burst - remaining) / rate.perSecond) } },
        { value: 'monthly', params: { r: Math.max(0, 1500 - used), t: reset } },
      ]);
      assert.equal(h['x-allowance-used'], String(used));
      assert.equal(h['x-allowance-reset'], String(reset));
      end += 999;
    }
  });
});
