// Exactness of accounting across threads and processes, and after kill -9.

import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { createKey, createOrganisation } from '../src/accounts/accounts.js';
import { openControlDb } from '../src/accounts/control-db.js';
import { loadPlans } from '../src/accounts/plans.js';
import { LEASE_MAX } from '../src/accounting/meter.js';
import { AccountingStore } from '../src/accounting/store.js';
import { WindowClock, orgCounter } from '../src/accounting/windows.js';
import { runBuild } from '../src/build/build.js';
import { importFeed } from '../src/feeds/import.js';
import { openServer } from '../src/http/server/open.js';
import { PROJECT_ROOT, get, plansFile, request, serveProcess, tempDir, writeFile, type ServeProcess } from './helpers.js';

const rate = { per_second: 1_000_000, burst: 1_000_000 };

/** A server process with one batch worker (the tests here count, they do not load). */
const serveOne = (env: Record<string, string>): Promise<ServeProcess> => serveProcess({ BATCH_WORKERS: '1', ...env });

const stopped = (c: ChildProcess): Promise<void> => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r())));

/** A data directory with a build, a plans file and one organisation with a key. */
function setup(plan: Record<string, unknown>): { dataDir: string; plans: string; orgId: string; secret: string } {
  const dataDir = tempDir();
  importFeed({ dataDir, file: writeFile(dataDir, 'f.csv', 'network,category,provider\n81.7.0.0/16,vpn,Alpha\n') });
  runBuild({ dataDir });
  const plans = plansFile(dataDir, { keyless: { daily_cap: 10, rate }, plans: [{ key: 'metered', tier: 'scale', rate, ...plan }] });
  const db = openControlDb(dataDir);
  const org = createOrganisation(db, loadPlans(plans), 'Metered', 'metered');
  const { secret } = createKey(db, { orgId: org.id, name: 'load' });
  db.close();
  return { dataDir, plans, orgId: org.id, secret };
}

// Every test runs on servers of one front-end thread, then of two (each thread its own leases).
// (Not where the server under test cannot share a port between threads: node:http on Node 20.)
const sharing = (await openServer(process.env.HTTP_SERVER === 'node' ? 'node' : 'auto', { keepAliveTimeoutMs: 1000 })).server.cannotSharePort;
for (const frontEnds of [1, 2]) describe(`accounting exactness, FRONTEND_THREADS=${frontEnds}`, { skip: frontEnds > 1 && sharing !== null ? sharing : false }, () => {
  const serve = (env: Record<string, string>): Promise<ServeProcess> => serveOne({ FRONTEND_THREADS: String(frontEnds), ...env });
  // Connections spread over every thread of both processes.
  const CONNECTIONS = frontEnds === 1 ? 12 : 240;

  test(`threads and two processes of ${frontEnds} front-end threads on one data directory answer exactly hard_limit lookups`, async (t) => {
    const HARD_LIMIT = 1500;
    const { dataDir, plans, orgId, secret } = setup({ quota: HARD_LIMIT, hard_limit: 'quota' });
    const servers = [await serve({ DATA_DIR: dataDir, PLANS_FILE: plans }), await serve({ DATA_DIR: dataDir, PLANS_FILE: plans })];
    const counter = orgCounter(orgId, new WindowClock().month(Date.now()));
    // Two more threads spend the same allowance directly, through their own LMDB handles.
    const threads = [0, 1].map(() => new Worker(path.join(PROJECT_ROOT, 'dist/test/fixtures/spend-thread.js'), { workerData: { dataDir, counter, limit: HARD_LIMIT, extra: 8 } }));
    try {
      let ok = 0;
      let lastOk = Date.now();
      const client = async (i: number): Promise<void> => {
        const port = servers[i % 2].port;
        // Until nothing has been answered for 1.5 s: leases idle elsewhere return within 1 s.
        while (Date.now() - lastOk < 1500) {
          const r = await get(port, `/81.7.${i}.1`, { Authorization: `Bearer ${secret}` });
          if (r.status === 200) {
            ok++;
            lastOk = Date.now();
          } else {
            assert.equal(r.status, 429, r.text);
            assert.equal(r.json.error, 'request allowance exceeded; raise or remove your overage limit');
          }
        }
      };
      await Promise.all(Array.from({ length: CONNECTIONS }, (_, i) => client(i)));
      const granted = await Promise.all(threads.map((t) => new Promise<number>((r) => (t.once('message', r), t.postMessage('stop')))));
      const byThreads = granted.reduce((a, b) => a + b, 0);
      assert.ok(ok > 0 && byThreads > 0, `both sides spent: http ${ok}, threads ${byThreads}`);
      // Threads may still hold a returned lease; together everything granted is the limit.
      const store = new AccountingStore(dataDir);
      const spent = store.spent(counter);
      await store.close();
      assert.equal(ok + byThreads, spent, `answered ${ok} + ${byThreads}, counted ${spent}`);
      assert.ok(spent <= HARD_LIMIT, `counted ${spent} > ${HARD_LIMIT}`);
      assert.equal(ok + byThreads, HARD_LIMIT);
      t.diagnostic(`hard_limit ${HARD_LIMIT}: ${ok} HTTP 200s on two processes of ${frontEnds} front-end threads over ${CONNECTIONS} connections + ${byThreads} grants on two threads; counted ${spent}`);
    } finally {
      for (const s of servers) s.child.kill('SIGKILL');
      await Promise.all(servers.map((s) => stopped(s.child)));
      await Promise.all(threads.map((t) => t.terminate()));
    }
  });

  test('after kill -9 under load nothing answered is uncounted, and the over-count is at most one lease a thread', async (t) => {
    const { dataDir, plans, orgId, secret } = setup({ quota: 1_000_000, hard_limit: null });
    const counter = orgCounter(orgId, new WindowClock().month(Date.now()));
    const server = await serve({ DATA_DIR: dataDir, PLANS_FILE: plans });
    let ok = 0;
    let stop = false;
    const CLIENTS = 8;
    const client = async (i: number): Promise<void> => {
      while (!stop) {
        try {
          const r = await get(server.port, `/81.7.${i}.9`, { Authorization: `Bearer ${secret}` });
          if (r.status === 200) ok++;
        } catch {
          return; // the server is gone
        }
      }
    };
    const load = Promise.all(Array.from({ length: CLIENTS }, (_, i) => client(i)));
    while (ok < 2000) await new Promise((r) => setTimeout(r, 20));
    server.child.kill('SIGKILL');
    await stopped(server.child);
    stop = true;
    await load;
    const restarted = await serve({ DATA_DIR: dataDir, PLANS_FILE: plans });
    try {
      const me = await get(restarted.port, '/api/v1/account/me', { Authorization: `Bearer ${secret}` });
      const store = new AccountingStore(dataDir);
      const spent = store.spent(counter);
      await store.close();
      assert.equal(me.json.usage.requests, spent);
      assert.ok(spent >= ok, `counted ${spent} < ${ok} answered`);
      // Each thread's unused lease in the killed process (≤ LEASE_MAX + 1 a thread), plus answers
      // in flight when it died.
      const bound = frontEnds * (LEASE_MAX + 1) + CLIENTS;
      assert.ok(spent - ok <= bound, `over-count ${spent - ok}`);
      t.diagnostic(`kill -9 after ${ok} answered 200s: counted ${spent}, over-count ${spent - ok} (bound ${bound})`);
    } finally {
      restarted.child.kill('SIGKILL');
      await stopped(restarted.child);
    }
  });

  test('batches whose every entry is a 400 leave nothing counted after kill -9', async (t) => {
    const { dataDir, plans, orgId, secret } = setup({ quota: 1_000_000, hard_limit: null });
    const counter = orgCounter(orgId, new WindowClock().month(Date.now()));
    const server = await serve({ DATA_DIR: dataDir, PLANS_FILE: plans, BATCH_WORKERS: '2' });
    const body = JSON.stringify({ ips: Array.from({ length: 1000 }, (_, i) => `not-an-address-${i}`) }) + ' '.repeat(100_000);
    let answered = 0;
    let stop = false;
    const client = async (): Promise<void> => {
      while (!stop) {
        try {
          const r = await request(server.port, 'POST', '/batch', body, { Authorization: `Bearer ${secret}` });
          if (r.status === 200) answered++;
        } catch {
          return; // the server is gone
        }
      }
    };
    const load = Promise.all(Array.from({ length: 16 }, client));
    while (answered < 200) await new Promise((r) => setTimeout(r, 20));
    server.child.kill('SIGKILL');
    await stopped(server.child);
    stop = true;
    await load;
    const store = new AccountingStore(dataDir);
    const spent = store.spent(counter);
    await store.close();
    t.diagnostic(`kill -9 after ${answered} all-400 batches: ${spent} units counted`);
    assert.ok(spent <= 300, `phantom usage ${spent}`);
    assert.equal(spent, 0);
  });
});
