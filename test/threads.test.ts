// Front-end threads: what several threads on one port must keep of what one thread does —
// connections spread over them, counters summed, one swap moment for every thread, a thread
// that dies replaced, the batch pool shared with a reserve for each thread — and then the HTTP suites
// again on two threads (the one-thread runs are in their own files).

import assert from 'node:assert/strict';
import net from 'node:net';
import { MessageChannel } from 'node:worker_threads';
import { after, before, describe, test } from 'node:test';
import { BatchPool, QueueFullError } from '../src/batch/pool.js';
import { BatchShares, RemoteBatchPool, serveBatches } from '../src/batch/remote.js';
import { runBuild } from '../src/build/build.js';
import { importFeed } from '../src/feeds/import.js';
import { TIER_MAX } from '../src/model/projection.js';
import type { Service } from '../src/service.js';
import { freePort, get, postBatch, startTestService, tempDir, until, writeFile } from './helpers.js';
import { runningAgainOn } from './again.js';

/** Builds from one feed of `provider` and makes the build the serving one. */
function buildAndServe(dataDir: string, provider: string): void {
  writeFile(dataDir, 'f.csv', `network,category,provider\n81.7.0.0/16,vpn,${provider}\n2a01:4f8::/32,hosting,${provider}\n`);
  importFeed({ dataDir, file: `${dataDir}/f.csv`, name: 'f' });
  runBuild({ dataDir, exports: false });
}

async function metricsOf(svc: Service): Promise<Map<string, number>> {
  const text = (await get(svc.adminPort, '/metrics')).text;
  return new Map(
    text
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => [l.slice(0, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))]),
  );
}

describe('front-end threads', () => {
  let dataDir: string;
  let svc: Service;

  before(async () => {
    dataDir = tempDir();
    buildAndServe(dataDir, 'B0');
    svc = await startTestService({ dataDir, frontendThreads: 2, batchWorkers: 2, keylessTier: TIER_MAX, indexPollMs: 50 });
  });
  after(() => svc.close());

  test('connections spread over both threads; readiness and metrics cover every thread', async () => {
    assert.equal(svc.frontendThreads, 2);
    const before = await metricsOf(svc);
    const N = 200;
    // A new connection each (agent: false): the kernel spreads them over the threads.
    const replies = await Promise.all(Array.from({ length: N }, (_, i) => get(svc.port, `/81.7.${i}.1`)));
    assert.ok(replies.every((r) => r.status === 200));
    assert.equal((await postBatch(svc.port, { ips: ['81.7.0.1', 'nope'] })).status, 200);
    const m = await metricsOf(svc);
    const delta = (k: string): number => (m.get(k) ?? 0) - (before.get(k) ?? 0);
    assert.equal(delta('ipsift_responses_total{status="200"}'), N + 1, 'summed over the threads');
    assert.equal(delta('ipsift_batches_total'), 1);
    const perThread = [0, 1].map((n) => delta(`ipsift_frontend_thread_responses_total{thread="${n}"}`));
    assert.equal(perThread[0] + perThread[1], N + 1);
    assert.ok(
      perThread.every((n) => n > N / 10),
      `uneven spread: ${perThread.join(' / ')}`,
    );
    const ready = await get(svc.adminPort, '/readyz');
    assert.deepEqual([ready.status, ready.json.status], [200, 'ready']);
  });

  test('five builds hot-swapped under load: no failed request, and no client ever sees an older build again', async () => {
    let stop = false;
    const series: number[][] = [];
    const failures: string[] = [];
    const build = (provider: string): number => Number(provider.slice(1));
    const single = async (k: number): Promise<void> => {
      const seen: number[] = [];
      series.push(seen);
      for (let i = 0; !stop; i++) {
        const r = await get(svc.port, (i + k) % 2 ? '/81.7.3.4' : '/2a01:4f8::1');
        if (r.status !== 200) failures.push(`GET ${r.status} ${r.text}`);
        else seen.push(build(r.json.vpn.provider ?? r.json.hosting.provider));
      }
    };
    const batch = async (): Promise<void> => {
      const seen: number[] = [];
      series.push(seen);
      const ips = Array.from({ length: 200 }, (_, i) => `81.7.${i}.9`);
      while (!stop) {
        const r = await postBatch(svc.port, { ips });
        if (r.status !== 200 || Object.keys(r.json.errors).length) failures.push(`batch ${r.status} ${r.text.slice(0, 200)}`);
        else {
          const builds = new Set(Object.values(r.json.results).map((x: any) => build(x.vpn.provider))); // eslint-disable-line @typescript-eslint/no-explicit-any
          assert.equal(builds.size, 1, 'one batch mixed two builds');
          seen.push([...builds][0]);
        }
      }
    };
    const load = [single(0), single(1), single(0), single(1), batch(), batch()];
    const first = svc.holder.current!.generation;
    /** Every client's latest answer came from build `b` (any build, for null): the next swap happens under load. */
    const allOn = (b: number | null) => () => series.every((s) => s.length > 0 && (b === null || s[s.length - 1] === b));
    for (let b = 1; b <= 5; b++) {
      await until(allOn(b === 1 ? null : b - 1), 10_000, `every client answered from build ${b - 1}`);
      buildAndServe(dataDir, `B${b}`);
      await until(() => svc.holder.current?.generation === first + b, 5_000, `build ${b} serving`);
      await until(async () => (await get(svc.adminPort, '/readyz')).status === 200, 2_000, 'ready again');
    }
    await until(allOn(5), 10_000, 'every client answered from the last build');
    stop = true;
    await Promise.all(load);
    assert.deepEqual(failures, []);
    for (const seen of series) {
      assert.ok(seen.length > 10, `light load: ${seen.length} answers`);
      assert.ok(
        seen.every((b, i) => i === 0 || b >= seen[i - 1]),
        `a client went back to an older build: ${seen.join(',')}`,
      );
      assert.equal(seen[seen.length - 1], 5);
    }
  });

  test('a front-end thread that dies is replaced; lookups go on', async (t) => {
    // A worker thread stopped with uWS connections open aborts the process (uWS keeps no
    // handle the runtime can close): the replacement is shown on the servers that allow it.
    if (svc.httpServer === 'uws') return t.skip('stopping a uWS thread from outside aborts the process');
    const threads = svc.threads!;
    const dead = threads.workers()[0]!;
    await dead.terminate();
    await until(() => threads.workers()[0] !== dead && threads.workers()[0] !== null && threads.notReady() === 0, 5_000, 'the thread replaced and ready');
    const replies = await Promise.all(Array.from({ length: 50 }, () => get(svc.port, '/81.7.0.1')));
    assert.ok(replies.every((r) => r.status === 200));
  });
});

test('threads on PORT=0 whose free port another process takes first start again on another', async () => {
  const dir = tempDir();
  buildAndServe(dir, 'B0');
  // The port found free is taken before the threads bind it: what a busy machine can do
  // between the two steps, here on purpose.
  const holder = net.createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
  const taken = (holder.address() as net.AddressInfo).port;
  const handedOut: number[] = [];
  const freePorts = async (): Promise<number> => {
    const port = handedOut.length === 0 ? taken : await freePort();
    handedOut.push(port);
    return port;
  };
  let s: Service | undefined;
  try {
    s = await startTestService({ dataDir: dir, frontendThreads: 2, keylessTier: TIER_MAX }, undefined, { freePort: freePorts });
    assert.equal(handedOut.length, 2, 'one port more after the taken one');
    assert.equal(s.port, handedOut[1]);
    assert.equal((await get(s.port, '/81.7.0.1')).status, 200);
    assert.equal(s.threads!.notReady(), 0);
  } finally {
    await s?.close();
    holder.close();
  }
});

describe('the batch pool across threads', () => {
  test('a busy thread uses what the others leave idle, except each one’s reserve: no thread can take the others’ places', async () => {
    // Capacity 8 (1 worker + 7 queued) over 2 threads: 2 held for each.
    const pool = new BatchPool({ workers: 1, maxQueue: 7 });
    const shares = new BatchShares(pool.capacity, 2);
    const ends = [0, 1].map((n) => {
      const c = new MessageChannel();
      serveBatches(pool, c.port1);
      return { main: c.port1, thread: new RemoteBatchPool(c.port2, shares, n) };
    });
    try {
      assert.equal(shares.reserve, 2);
      const task = () => ({
        body: new TextEncoder().encode('{"ips":["1.2.3.4"]}').buffer as ArrayBuffer,
        tier: 0,
        generation: 0,
        index: null,
        budget: 1000,
        refusal: 0,
        out: null,
        coding: 0,
      });
      const outcome = (p: Promise<Uint8Array>) =>
        p.then(
          () => 'ok',
          (e: unknown) => (e instanceof QueueFullError ? 'full' : String(e)),
        );
      // Thread 0 floods: it gets everything but thread 1's reserve.
      const flood = Array.from({ length: 20 }, () => outcome(ends[0].thread.run(task())));
      assert.equal(ends[0].thread.full, true);
      assert.equal(ends[1].thread.full, false);
      const other = Array.from({ length: 3 }, () => outcome(ends[1].thread.run(task())));
      const a = await Promise.all(flood);
      const b = await Promise.all(other);
      assert.deepEqual([a.filter((x) => x === 'ok').length, a.filter((x) => x === 'full').length], [6, 14]);
      assert.deepEqual(b, ['ok', 'ok', 'full']);
      // Everything answered: nothing is counted in flight any more.
      assert.deepEqual([...shares.counts], [0, 0]);
    } finally {
      for (const e of ends) {
        e.thread.close();
        e.main.close();
      }
      await pool.close();
    }
  });
});

// The HTTP suites again, on two front-end threads: services started in this process
// (helpers.startTestService) and `ipsift serve` children both take FRONTEND_THREADS from the
// environment. Not the hostile requests and the fuzzing (the parser's, again on node:http),
// nor the stores' faults (test/again.ts).
process.env.FRONTEND_THREADS = '2';
runningAgainOn('threads');
await import('./http.test.js');
await import('./database.test.js');
await import('./accounts.test.js');
await import('./deploy.test.js');
await import('./resilience.test.js');
