// The bench of front-end threads (`npm run bench:threads`, and part of `npm run bench`): for
// 1 thread and for N (BENCH_THREADS, ','-separated; default 1 and the machine's cores), keyed
// GET /{ip} in req/s with the server's CPU per request, and POST /batch of 1000 addresses in
// IPs/s, each thread count with as many batch workers, in alternating rounds (medians).
//
// Where wrk shares the machine's cores with the server, neither req/s nor CPU per request can
// show what threads cost: three busy threads on two cores pay for the scheduler's sharing.
// So GET is measured twice: as is, and with wrk pinned to CPU 0 and the server to the other
// CPUs (taskset), where CPU per request at N threads against 1 is the threads' own cost.

import os from 'node:os';
import { CONNECTIONS, haveTaskset, haveWrk, median, out, range, startIpsift, wrk, type Server } from './kit.js';

const ROUNDS = Number(process.env.BENCH_RATIO_ROUNDS ?? 6);
const BATCH_CONNECTIONS = Number(process.env.BENCH_BATCH_CONNECTIONS ?? 8);

export function threadCounts(): number[] {
  const given = process.env.BENCH_THREADS?.split(',')
    .map(Number)
    .filter((n) => n >= 1);
  return given?.length ? given : [...new Set([1, os.availableParallelism()])];
}

interface Row {
  threads: number;
  rps: number[];
  cpuUs: number[];
  pinnedRps: number[];
  pinnedCpuUs: number[];
  batchIps: number[];
  errors: number;
}

const env = (n: number): Record<string, string> => ({ FRONTEND_THREADS: String(n), BATCH_WORKERS: String(n), KEYLESS_TIER: 'max' });

export async function benchThreads(dataDir: string, key: string, counts = threadCounts()): Promise<void> {
  if (!(await haveWrk())) return out('front-end threads: not measured, wrk is not installed (apt-get install wrk)');
  const cores = os.availableParallelism();
  // wrk on CPU 0, the server on the rest.
  const pin = cores >= 2 && (await haveTaskset()) ? { wrk: '0', server: cores === 2 ? '1' : `1-${cores - 1}` } : null;
  const servers = new Map<number, Server>();
  const pinned = new Map<number, Server>();
  const rows = counts.map((threads): Row => ({ threads, rps: [], cpuUs: [], pinnedRps: [], pinnedCpuUs: [], batchIps: [], errors: 0 }));
  try {
    for (const n of counts) {
      servers.set(n, await startIpsift(dataDir, env(n)));
      if (pin) pinned.set(n, await startIpsift(dataDir, env(n), process.execPath, pin.server));
    }
    for (const n of counts) {
      await wrk(servers.get(n)!, 'random-get.lua', 1, CONNECTIONS, key, 1); // warm-up
      await wrk(servers.get(n)!, 'batch.lua', 1, BATCH_CONNECTIONS, undefined, 1);
      if (pin) await wrk(pinned.get(n)!, 'random-get.lua', 1, CONNECTIONS, key, 1, pin.wrk);
    }
    // Rounds alternate the thread counts, so that the machine's noise falls on all of them.
    for (let r = 0; r < ROUNDS; r++) {
      for (const row of rows) {
        const get = await wrk(servers.get(row.threads)!, 'random-get.lua', 20 + r, CONNECTIONS, key, 2);
        row.rps.push(get.rps);
        row.cpuUs.push((get.cpu / get.rps) * 1e6);
        row.errors += get.errors;
        if (pin) {
          const p = await wrk(pinned.get(row.threads)!, 'random-get.lua', 20 + r, CONNECTIONS, key, 2, pin.wrk);
          row.pinnedRps.push(p.rps);
          row.pinnedCpuUs.push((p.cpu / p.rps) * 1e6);
          row.errors += p.errors;
        }
        const batch = await wrk(servers.get(row.threads)!, 'batch.lua', 20 + r, BATCH_CONNECTIONS, undefined, 2);
        row.batchIps.push(batch.rps * 1000);
        row.errors += batch.errors;
      }
    }
  } finally {
    for (const s of [...servers.values(), ...pinned.values()]) await s.stop();
  }
  const num = (xs: number[]): number => Number(median(xs));
  const k = (xs: number[]): string => `${Math.round(num(xs)).toLocaleString('en')} (${range(xs.map((x) => x / 1000))} k)`;
  out(
    `front-end threads (wrk -t1, ${CONNECTIONS} connections for GET, ${BATCH_CONNECTIONS} for batches; medians of ${ROUNDS} alternating rounds of 2 s; ${cores} cores` +
      (pin ? `; pinned: wrk on CPU ${pin.wrk}, the server on CPU ${pin.server}` : '; taskset or a second core missing: nothing pinned') +
      '):',
  );
  out(
    '| FRONTEND_THREADS (= BATCH_WORKERS) | GET /{ip} with a key, req/s | server CPU per GET, µs | pinned: req/s | pinned: server CPU per GET, µs | POST /batch ×1000, IPs/s | non-2xx |',
  );
  out('|---|---|---|---|---|---|---|');
  for (const row of rows) {
    const pinnedCells = pin ? `${k(row.pinnedRps)} | ${num(row.pinnedCpuUs).toFixed(2)} (${range(row.pinnedCpuUs)})` : '– | –';
    out(
      `| ${row.threads} | ${k(row.rps)} | ${num(row.cpuUs).toFixed(2)} (${range(row.cpuUs)}) | ${pinnedCells} | ${Math.round(num(row.batchIps)).toLocaleString('en')} | ${row.errors} |`,
    );
  }
  const one = rows.find((r) => r.threads === 1);
  for (const row of one ? rows.filter((r) => r.threads > 1) : []) {
    const ratio = (a: number[], b: number[]): number[] => a.map((x, i) => x / b[i]);
    const cpu = ratio(row.cpuUs, one!.cpuUs);
    const rps = ratio(row.rps, one!.rps);
    const batch = ratio(row.batchIps, one!.batchIps);
    const pinnedCpu = pin ? ratio(row.pinnedCpuUs, one!.pinnedCpuUs) : [];
    out(
      `scaling at ${row.threads} threads against 1: ` +
        (pin ? `CPU per GET pinned ${median(pinnedCpu)}× (${range(pinnedCpu)}; the threads' own cost: the target is within 1.10), ` : '') +
        `CPU per GET with wrk sharing the cores ${median(cpu)}× (${range(cpu)}), req/s ${median(rps)}× (${range(rps)}; ${(0.8 * row.threads).toFixed(1)}× needs ${row.threads} cores free for the server), ` +
        `batch IPs/s ${median(batch)}× (${range(batch)})`,
    );
  }
}
