// The bench of front-end threads (`npm run bench:threads`, and part of `npm run bench`): for
// 1 thread and for N (BENCH_THREADS, ','-separated; default 1 and the machine's cores), keyed
// GET /{ip} in req/s with the server's CPU per request, and POST /batch of 1000 addresses in
// IPs/s, each thread count with as many batch workers, in alternating rounds (medians).
//
// Where wrk shares the machine's cores with the server, req/s cannot show scaling; CPU per
// request can: at N threads it stays what it is at 1 when threads add no cost of their own.

import os from 'node:os';
import { CONNECTIONS, median, out, range, startIpsift, wrk, type Server } from './kit.js';

const ROUNDS = Number(process.env.BENCH_RATIO_ROUNDS ?? 6);
const BATCH_CONNECTIONS = Number(process.env.BENCH_BATCH_CONNECTIONS ?? 8);

export function threadCounts(): number[] {
  const given = process.env.BENCH_THREADS?.split(',').map(Number).filter((n) => n >= 1);
  return given?.length ? given : [...new Set([1, os.availableParallelism()])];
}

interface Row {
  threads: number;
  rps: number[];
  cpuUs: number[];
  batchIps: number[];
  errors: number;
}

export async function benchThreads(dataDir: string, key: string, counts = threadCounts()): Promise<void> {
  const servers = new Map<number, Server>();
  const rows = counts.map((threads): Row => ({ threads, rps: [], cpuUs: [], batchIps: [], errors: 0 }));
  try {
    for (const n of counts) servers.set(n, await startIpsift(dataDir, { FRONTEND_THREADS: String(n), BATCH_WORKERS: String(n), KEYLESS_TIER: 'max' }));
    for (const n of counts) {
      await wrk(servers.get(n)!, 'random-get.lua', 1, CONNECTIONS, key, 1); // warm-up
      await wrk(servers.get(n)!, 'batch.lua', 1, BATCH_CONNECTIONS, undefined, 1);
    }
    // Rounds alternate the thread counts, so that the machine's noise falls on all of them.
    for (let r = 0; r < ROUNDS; r++) {
      for (const row of rows) {
        const server = servers.get(row.threads)!;
        const get = await wrk(server, 'random-get.lua', 20 + r, CONNECTIONS, key, 2);
        row.rps.push(get.rps);
        row.cpuUs.push((get.cpu / get.rps) * 1e6);
        const batch = await wrk(server, 'batch.lua', 20 + r, BATCH_CONNECTIONS, undefined, 2);
        row.batchIps.push(batch.rps * 1000);
        row.errors += get.errors + batch.errors;
      }
    }
  } finally {
    for (const s of servers.values()) await s.stop();
  }
  const num = (xs: number[]): number => Number(median(xs));
  out(`front-end threads (wrk -t1, ${CONNECTIONS} connections for GET, ${BATCH_CONNECTIONS} for batches; medians of ${ROUNDS} alternating rounds of 2 s; ${os.availableParallelism()} cores, wrk on them too):`);
  out('| FRONTEND_THREADS (= BATCH_WORKERS) | GET /{ip} with a key, req/s | server CPU per GET, µs | POST /batch ×1000, IPs/s | non-2xx |');
  out('|---|---|---|---|---|');
  for (const row of rows) {
    out(`| ${row.threads} | ${Math.round(num(row.rps)).toLocaleString('en')} (${range(row.rps.map((x) => x / 1000))} k) | ${num(row.cpuUs).toFixed(2)} (${range(row.cpuUs)}) | ${Math.round(num(row.batchIps)).toLocaleString('en')} | ${row.errors} |`);
  }
  const one = rows.find((r) => r.threads === 1);
  if (one) {
    for (const row of rows.filter((r) => r.threads > 1)) {
      const perRound = row.cpuUs.map((c, i) => c / one.cpuUs[i]);
      const rpsRatio = row.rps.map((x, i) => x / one.rps[i]);
      out(
        `scaling at ${row.threads} threads: CPU per GET ${median(perRound)}× one thread's (${range(perRound)}; within 1.10 means threads cost nothing of their own), ` +
          `req/s ${median(rpsRatio)}× (${range(rpsRatio)}; the target ${(0.8 * row.threads).toFixed(1)}× needs ${row.threads} cores free for the server)`,
      );
    }
  }
}
