// One suite for every accounting store (store.ts): LMDB and Redis grant, give back and refill
// alike, and threads racing on one counter never take it past its limit. Then what is Redis's
// own: an unreachable server makes calls fail fast (the Meter's degraded mode takes over) and
// a restarted one is used again.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { AccountingConfig } from '../src/config.js';
import { openAccountingStore } from '../src/accounting/open-accounting-store.js';
import { RETRY_MS, RedisAccountingStore, RedisUnavailable } from '../src/accounting/redis-store.js';
import type { AccountingStore, LatentCounters } from '../src/accounting/accounting-store.js';
import { LATE_MS, LEASE_MAX, MAX_BOOST, type Meter, PENDING, PENDING_TOKENS, openMeter } from '../src/accounting/meter.js';
import { every, systemClock } from '../src/clock.js';
import { startDelayProxy } from '../loadtest/delay-proxy.js';
import { freePort, tempDir, until } from './helpers.js';
import { REDIS_SERVER, startRedis, type TestRedis } from './redis-server.js';
import { SpendThreads } from './spend-threads.js';

let redis: TestRedis | null = null;
before(async () => {
  if (REDIS_SERVER !== null) redis = await startRedis();
});
after(() => redis?.kill());

let runs = 0;
/** A fresh store: its own data directory, or its own key prefix on the test's Redis. */
function backend(kind: 'lmdb' | 'redis'): { config: AccountingConfig; dataDir: string } {
  const dataDir = tempDir();
  if (kind === 'lmdb') return { config: { kind }, dataDir };
  return { config: { kind, url: redis!.url, prefix: `t${process.pid}.${++runs}:`, timeoutMs: 500 }, dataDir };
}

for (const kind of ['lmdb', 'redis'] as const) {
  describe(`accounting store: ${kind}`, { skip: kind === 'redis' && REDIS_SERVER === null ? 'redis-server is not installed' : false }, () => {
    let store: AccountingStore;
    let b: ReturnType<typeof backend>;
    before(() => {
      b = backend(kind);
      store = openAccountingStore(b.config, b.dataDir);
    });
    after(() => store.close());

    test('reserve grants the need and a shrinking extra, never past the limit; release never goes below zero', () => {
      assert.equal(store.spent('m:2026-11:a'), 0);
      assert.deepEqual(store.reserve('m:2026-11:a', 1, 10, 100), { granted: 7, spent: 7 }); // room 99 → extra ⌊99/16⌋ = 6
      assert.deepEqual(store.reserve('m:2026-11:a', 5, 256, null), { granted: 261, spent: 268 });
      assert.deepEqual(store.reserve('m:2026-11:a', 1, 0, 268), { granted: 0, spent: 268 });
      assert.deepEqual(store.reserve('m:2026-11:a', 10, 0, 272), { granted: 4, spent: 272 });
      store.release('m:2026-11:a', 2);
      assert.equal(store.spent('m:2026-11:a'), 270);
      store.release('m:2026-11:a', 1000);
      assert.equal(store.spent('m:2026-11:a'), 0);
      store.release('d:2026-11-24:10.0.0.1', 5);
      assert.equal(store.spent('d:2026-11-24:10.0.0.1'), 0);
    });

    test('a token bucket starts full, grants whole tokens and refills at its rate', async () => {
      const t0 = systemClock.now();
      assert.deepEqual(store.takeTokens('r:k:a', 15, 10, 20, t0), { granted: 15, left: 5 });
      const second = store.takeTokens('r:k:a', 15, 10, 20, t0);
      assert.equal(second.granted, 5);
      assert.ok(second.left >= 0 && second.left < 1, `left ${second.left}`);
      if (kind === 'lmdb') {
        // LMDB takes the caller's clock: 350 ms later, 3.5 tokens, of which 3 whole ones.
        assert.deepEqual(store.takeTokens('r:k:a', 15, 10, 20, t0 + 350), { granted: 3, left: 0.5 });
        assert.deepEqual(store.takeTokens('r:k:a', 1, 10, 20, t0 + 350), { granted: 0, left: 0.5 });
        assert.deepEqual(store.takeTokens('r:k:a', 1, 10, 20, t0 + 400), { granted: 1, left: 0 });
      } else {
        // Redis keeps the server's clock (one clock for every node): a token comes back in
        // about 100 ms at 10 a second, not at once.
        const asked = systemClock.now();
        await until(() => store.takeTokens('r:k:a', 1, 10, 20, systemClock.now()).granted === 1, 5_000, 'a token refilled');
        assert.ok(systemClock.now() - asked >= 50, `refilled after ${(systemClock.now() - asked).toFixed(0)} ms`);
      }
    });

    test('four threads with their own handles and Meters race on one counter: exactly its limit is granted', async () => {
      const LIMIT = 5000;
      const counter = 'm:2026-11:race';
      const threads = await SpendThreads.start(4, { accounting: b.config, dataDir: b.dataDir, counter, limit: LIMIT, extra: 16 });
      await until(
        () => threads.granted() >= LIMIT,
        30_000,
        () => `the threads were granted the limit (${threads.granted()} of ${LIMIT})`,
      );
      const granted = await threads.stop();
      await threads.terminate();
      assert.ok(
        granted.every((g) => g > 0),
        `every thread was granted some: ${granted}`,
      );
      assert.equal(
        granted.reduce((x, y) => x + y, 0),
        LIMIT,
      );
      assert.equal(store.spent(counter), LIMIT);
    });
  });
}

describe('accounting store: redis unreachable, then back', { skip: REDIS_SERVER === null ? 'redis-server is not installed' : false }, () => {
  test('calls fail at once while it is down (one wait a second at most), the Meter counts in memory, and writes what it owes once Redis is back', async (t) => {
    const own = await startRedis(tempDir('ipsift-redis-'));
    // Stopped however the test ends: a Redis left running holds the test file open.
    t.after(() => own.kill());
    const store = openAccountingStore({ kind: 'redis', url: own.url, prefix: 'down:', timeoutMs: 200 }, tempDir());
    // The blocking calls (what the Meter uses off the request path) are what is tested here.
    const meter = openMeter(store, { graceMs: 60_000, latent: null });
    try {
      assert.equal(meter.spend('m:x', 1, 0, 100, systemClock.now()), 1);
      await own.kill();
      const t0 = systemClock.now();
      assert.throws(() => store.reserve('m:x', 1, 0, 100), RedisUnavailable);
      for (let i = 0; i < 1000; i++) assert.throws(() => store.reserve('m:x', 1, 0, 100), RedisUnavailable);
      const ms = systemClock.now() - t0;
      assert.ok(ms < 200 + 100, `1001 calls on a dead server took ${ms.toFixed(0)} ms`);
      // Degraded: answered from memory, within the limit.
      let answered = 0;
      for (let i = 0; i < 50; i++) answered += meter.spend('m:x', 1, 0, 100, systemClock.now());
      assert.equal(answered, 50);
      assert.ok(meter.degraded);
      await own.start();
      // The store tries the server again RETRY_MS after a failure; a sweep then writes what is owed.
      await until(() => (meter.sweep(systemClock.now()), !meter.degraded), RETRY_MS + 5_000, 'the Meter recovered');
      assert.equal(store.spent('m:x'), 51, 'the first unit survived the restart (append-only file) and the 50 owed were written');
    } finally {
      meter.close();
      await store.close();
      await own.kill();
    }
  });

  test('a call whose caller gave up leaves nothing behind: what Redis carries out after the timeout is undone', async (t) => {
    const own = await startRedis();
    // Stopped however the test ends: a Redis left running holds the test file open.
    t.after(() => own.kill());
    const store = openAccountingStore({ kind: 'redis', url: own.url, prefix: 'late:', timeoutMs: 100 }, tempDir());
    try {
      assert.equal(store.reserve('m:y', 5, 0, null).granted, 5); // the scripts are loaded now
      store.release('m:y', 2); // 3
      await own.pause(400);
      // It waits 400 ms in Redis and is carried out there, after its caller has given up.
      assert.throws(() => store.reserve('m:y', 7, 0, null), RedisUnavailable);
      // Calls fail at once for RETRY_MS after the failure: the first to reach Redis again comes
      // long after the paused reservation and its undoing, on the same connection.
      await until(
        () => {
          try {
            return store.spent('m:y') >= 0;
          } catch {
            return false;
          }
        },
        RETRY_MS + 5_000,
        'Redis answering again',
      );
      assert.equal(store.spent('m:y'), 3, 'the 7 reserved after the caller gave up were given back');
    } finally {
      await store.close();
      await own.kill();
    }
  });

  test('a server that cannot be reached is refused at start, naming the URL without its password', async () => {
    const port = await freePort(); // nothing listens there
    assert.throws(
      () => new RedisAccountingStore({ url: `redis://user:secret@127.0.0.1:${port}`, prefix: 'x:', timeoutMs: 100, connectTimeoutMs: 300 }),
      (e: Error) => e instanceof RedisUnavailable && /redis:\/\/user:\*\*\*@127\.0\.0\.1/.test(e.message) && !e.message.includes('secret'),
    );
  });
});

/**
 * `connections` clients each spending one unit at a time, as fast as answers come (or one a
 * millisecond when `paced`), until `untilMs`: a request that gets PENDING waits (wait()) and asks again. Returns the units
 * granted and the longest a request waited, in ms.
 */
async function spendLikeClients(
  meter: Meter,
  counter: string,
  limit: number | null,
  connections: number,
  untilMs: number,
  paced = false,
): Promise<{ granted: number; longestMs: number; waited: number }> {
  let granted = 0;
  let longestMs = 0;
  let waited = 0;
  const client = (): Promise<void> =>
    new Promise((done) => {
      let askedAt = systemClock.now();
      const ask = (): void => {
        if (systemClock.now() >= untilMs) return done();
        const g = meter.spend(counter, 1, LEASE_MAX, limit, systemClock.now());
        if (g === PENDING) {
          waited++;
          return meter.wait(ask);
        }
        longestMs = Math.max(longestMs, systemClock.now() - askedAt);
        granted += g;
        askedAt = systemClock.now();
        if (paced) systemClock.after(1, ask);
        else setImmediate(ask);
      };
      ask();
    });
  await Promise.all(Array.from({ length: connections }, client));
  return { granted, longestMs, waited };
}

describe('accounting store: redis across a network, never waited on by a request', {
  skip: REDIS_SERVER === null ? 'redis-server is not installed' : false,
}, () => {
  test('through a proxy that delays 1 ms each way, leases are refilled ahead of need: requests seldom wait, and the counter equals what was granted', async () => {
    const proxy = await startDelayProxy(redis!.port, 1);
    const store = openAccountingStore({ kind: 'redis', url: `redis://127.0.0.1:${proxy.port}`, prefix: `ahead${process.pid}:`, timeoutMs: 500 }, tempDir());
    const meter = openMeter(store, { graceMs: 60_000 });
    try {
      assert.ok(meter.defers);
      // 64 clients, one request a millisecond each: a busy key's traffic on one thread, its
      // lease extra the largest (a key whose rate allows more than 2 560 lookups a second).
      const r = await spendLikeClients(meter, 'm:ahead', null, 64, systemClock.now() + 1500, true);
      assert.ok(r.granted > 5000, `${r.granted} granted in 1.5 s`);
      // Only the first requests wait (the empty lease, then a lease that grows to outlast a
      // round trip): a few in a thousand on a calm machine. Were leases refilled only once dry,
      // all 64 clients would wait at each (a quarter of the requests, with 256-unit leases). On
      // a loaded machine the proxy's round trip stretches, and up to one in a hundred waited.
      assert.ok(r.waited < r.granted / 25, `${r.waited} of ${r.granted} requests waited for a refill`);
      await until(() => meter.unanswered === 0, 5_000, 'every refill landed');
      meter.close();
      assert.equal(store.spent('m:ahead'), r.granted, 'what the leases held unused was given back');
    } finally {
      meter.close();
      await store.close();
      await proxy.close();
    }
  });

  test('Redis paused for 2 s under load: waiting requests on a counter without a limit are answered from memory after LATE_MS, and once it answers, the counter equals the answers', async () => {
    const store = openAccountingStore({ kind: 'redis', url: redis!.url, prefix: `pause${process.pid}:`, timeoutMs: 5_000 }, tempDir());
    const meter = openMeter(store, { graceMs: 60_000 });
    const stalls = loopStalls();
    try {
      const run = spendLikeClients(meter, 'm:paused', null, 16, systemClock.now() + 3000);
      await until(() => store.spent('m:paused') > 0, 2_000, 'spending started');
      await redis!.pause(2000);
      const r = await run;
      const stalledMs = stalls.stop();
      // A request that waited for Redis would have waited out the pause; one answered from
      // memory waits LATE_MS, plus whatever kept this thread off the CPU meanwhile (a busy
      // machine stalls the loop by hundreds of milliseconds; two stalls can fall in one wait).
      assert.ok(r.longestMs < 1000, `a request waited ${r.longestMs.toFixed(1)} ms: for Redis, which was paused for 2000 ms`);
      assert.ok(
        r.longestMs < LATE_MS + 80 + 2 * stalledMs,
        `a request waited ${r.longestMs.toFixed(1)} ms, the longest stall of this thread's loop was ${stalledMs.toFixed(1)} ms`,
      );
      await until(() => meter.unanswered === 0, 10_000, 'every refill landed after the pause');
      meter.close();
      assert.equal(store.spent('m:paused'), r.granted, `${r.granted} answered`);
    } finally {
      stalls.stop();
      meter.close();
      await store.close();
    }
  });
});

/** Watches this thread's event loop on the system clock: stop() gives the longest it ran late, in ms. */
function loopStalls(): { stop(): number } {
  const TICK_MS = 5;
  let last = systemClock.now();
  let longest = 0;
  const timer = every(systemClock, TICK_MS, () => {
    const at = systemClock.now();
    longest = Math.max(longest, at - last - TICK_MS);
    last = at;
  });
  return {
    stop: () => {
      timer.cancel();
      return longest;
    },
  };
}

describe('token leases on a store across a network', () => {
  /** A latent store whose token refills are answered when the test says: every `want` asked, in order. */
  function handAnswered(): { store: AccountingStore & LatentCounters; asked: number[]; answer: () => void } {
    const asked: number[] = [];
    const waiting: (() => void)[] = [];
    const lmdb = openAccountingStore({ kind: 'lmdb' }, tempDir());
    const store = Object.assign(Object.create(lmdb) as AccountingStore, {
      timeoutMs: 10_000,
      reserveLater: () => {},
      releaseLater: () => {},
      addLater: () => {},
      deliver: () => {},
      takeTokensLater: (_b: string, want: number, _p: number, _burst: number, done: (f: null, g: { granted: number; left: number }) => void) => {
        asked.push(want);
        waiting.push(() => done(null, { granted: want, left: 1e9 }));
      },
    });
    return { store, asked, answer: () => waiting.shift()!() };
  }

  test('a lease that runs dry before its refill lands asks for twice as many next time, up to MAX_BOOST times', () => {
    const { store, asked, answer } = handAnswered();
    const now = 1_800_000_000_000; // one instant, on the meter's clock too: no lease expires
    const meter = openMeter(store, { graceMs: 60_000, now: () => now });
    const rate = { perSecond: 1e6, burst: 1e6 }; // a refill's worth: LEASE_MAX tokens
    try {
      let taken = 0;
      for (let round = 0; round < 5; round++) {
        // Served until dry; then the request waits for the refill in flight, and the refills
        // sent after it ask for more.
        let d = meter.take('k:b', rate, now);
        for (; d !== PENDING_TOKENS; d = meter.take('k:b', rate, now)) assert.equal(d.ok, true), taken++;
        answer();
      }
      // The first refill lands on an empty lease and the next is sent at once (fewer than a
      // refill's worth left); each time the lease ran dry before a refill landed, the next asks twice as many.
      assert.deepEqual(asked, [LEASE_MAX, LEASE_MAX, 2 * LEASE_MAX, MAX_BOOST * LEASE_MAX, MAX_BOOST * LEASE_MAX]);
      assert.equal(
        taken,
        asked.slice(0, 4).reduce((a, b) => a + b),
        'each token of the first four refills served once, none twice',
      );
    } finally {
      meter.close();
    }
  });
});

describe('accounting store: keyless sources at the edge, on redis', { skip: REDIS_SERVER === null ? 'redis-server is not installed' : false }, () => {
  test('through a 1 ms proxy, 2 000 new sources are answered without waiting, and one call a tick writes them all', async () => {
    const proxy = await startDelayProxy(redis!.port, 1);
    const store = openAccountingStore({ kind: 'redis', url: `redis://127.0.0.1:${proxy.port}`, prefix: `edge${process.pid}:`, timeoutMs: 500 }, tempDir());
    const meter = openMeter(store, { graceMs: 60_000 });
    try {
      const edge = meter.edge!;
      let answered = 0;
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i < 2000; i++) {
          const g = edge.spend(`d:2026-11-26:10.0.${i >> 8}.${i & 255}`, 1, 1000, systemClock.now());
          assert.equal(g, 1, `source ${i}, round ${round}`);
          answered += g;
        }
      }
      await until(() => meter.unanswered === 0, 5_000, 'every source written');
      // Read on loopback: 2 000 blocking reads through the proxy would take seconds.
      const near = openAccountingStore({ kind: 'redis', url: redis!.url, prefix: `edge${process.pid}:`, timeoutMs: 500 }, tempDir());
      let total = 0;
      try {
        for (let i = 0; i < 2000; i++) total += near.spent(`d:2026-11-26:10.0.${i >> 8}.${i & 255}`);
      } finally {
        await near.close();
      }
      assert.equal(total, answered);
      assert.equal(edge.used('d:2026-11-26:10.0.0.1'), 3);
    } finally {
      meter.close();
      await store.close();
      await proxy.close();
    }
  });

  test('three threads on one source stop at its daily cap, past it by at most (threads − 1) × share', async () => {
    const config = { kind: 'redis' as const, url: redis!.url, prefix: `edgecap${process.pid}:`, timeoutMs: 500 };
    const stores = [0, 1, 2].map(() => openAccountingStore(config, tempDir()));
    const meters = stores.map((s) => openMeter(s, { graceMs: 60_000 }));
    const CAP = 2000; // share: ⌊2000 / 64⌋ = 31 → 16
    try {
      const answered = [0, 0, 0];
      const refused = [false, false, false];
      // Round robin, each meter waiting for its writes when its share is used up.
      await Promise.all(
        meters.map(
          (m, k) =>
            new Promise<void>((done) => {
              const ask = (): void => {
                const g = m.edge!.spend('d:2026-11-26:192.0.2.1', 1, CAP, systemClock.now());
                if (g === PENDING) return m.edge!.wait(ask);
                if (g === 0) {
                  refused[k] = true;
                  return done();
                }
                answered[k] += g;
                setImmediate(ask);
              };
              ask();
            }),
        ),
      );
      const total = answered.reduce((a, b) => a + b, 0);
      assert.ok(total >= CAP && total <= CAP + 2 * 16, `answered ${answered} = ${total}, cap ${CAP}`);
      await until(() => stores[0].spent('d:2026-11-26:192.0.2.1') === total, 5_000, 'every answer written');
    } finally {
      for (const m of meters) m.close();
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});
