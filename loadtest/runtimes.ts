// The bench per runtime and server (`npm run bench:runtimes`, and the end of `npm run bench`):
// for each runtime at hand — this Node, and the node@N and bun packages that .ci/run keeps in
// ~/.cache/ipsift-runtimes (or BENCH_RUNTIMES, a ':'-separated list of node or bun binaries) —
// and each server that loads there, GET /{ip} with a scale key against that same server's
// fixed-body ceiling on that runtime (loadtest/fixed-server.ts), in alternating rounds of wrk
// (ceiling, ipsift, ceiling), and POST /batch of 1000 addresses in IPs/s.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CONNECTIONS, ROOT, SECONDS, exec, median, out, range, startIpsift, startProcess, wrk, type Server } from './kit.js';

const ROUNDS = Number(process.env.BENCH_RATIO_ROUNDS ?? 5);
const BATCH_CONNECTIONS = Number(process.env.BENCH_BATCH_CONNECTIONS ?? 8);

interface Runtime {
  name: string;
  bin: string;
  servers: string[];
}

async function runtimeOf(bin: string): Promise<Runtime> {
  const { stdout } = await exec(bin, ['--version']);
  const version = stdout.trim();
  const bun = path.basename(bin).startsWith('bun');
  return bun ? { name: `Bun ${version}`, bin, servers: ['bun', 'node'] } : { name: `Node ${version}`, bin, servers: ['uws', 'node'] };
}

/** This Node first, then the cached runtimes (or BENCH_RUNTIMES). */
export async function runtimesAtHand(): Promise<Runtime[]> {
  let bins: string[];
  if (process.env.BENCH_RUNTIMES) bins = process.env.BENCH_RUNTIMES.split(':').filter(Boolean);
  else {
    const cache = path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'ipsift-runtimes');
    const dirs = fs.existsSync(cache) ? fs.readdirSync(cache).sort() : [];
    bins = dirs.flatMap((d) => ['node', 'bun'].map((b) => path.join(cache, d, 'node_modules/.bin', b))).filter((b) => fs.existsSync(b));
  }
  return Promise.all([process.execPath, ...bins].map(runtimeOf));
}

interface Row {
  runtime: string;
  server: string;
  ceiling: number[];
  keyed: number[];
  ratios: number[];
  cpuUs: number[];
  batchIps: number;
  note: string;
}

async function measurePair(rt: Runtime, server: string, dataDir: string, key: string): Promise<Row> {
  const row: Row = { runtime: rt.name, server, ceiling: [], keyed: [], ratios: [], cpuUs: [], batchIps: 0, note: '' };
  let fixed: Server | null = null;
  let ipsift: Server | null = null;
  try {
    fixed = await startProcess([path.join(ROOT, 'dist/loadtest/fixed-server.js')], { PORT: '0', HTTP_SERVER: server }, /listening (\d+)/, rt.bin);
    ipsift = await startIpsift(dataDir, { BATCH_WORKERS: '1', HTTP_SERVER: server }, rt.bin);
  } catch (e) {
    await fixed?.stop();
    const why = /cannot serve: ([^\n]*)|ipsift: ([^\n]*)/.exec(e instanceof Error ? e.message : String(e));
    row.note = `does not start: ${(why?.[1] ?? why?.[2] ?? 'see its log').replace(/: Cannot find module.*/, '')}`.slice(0, 120);
    return row;
  }
  try {
    await wrk(fixed, 'random-get.lua', 1, CONNECTIONS, undefined, 1); // warm-up
    await wrk(ipsift, 'random-get.lua', 1, CONNECTIONS, key, 1);
    for (let r = 0; r < ROUNDS; r++) {
      const a = await wrk(fixed, 'random-get.lua', 9 + r, CONNECTIONS, undefined, 2);
      const k = await wrk(ipsift, 'random-get.lua', 9 + r, CONNECTIONS, key, 2);
      const b = await wrk(fixed, 'random-get.lua', 9 + r, CONNECTIONS, undefined, 2);
      const ceiling = (a.rps + b.rps) / 2;
      row.ceiling.push(ceiling);
      row.keyed.push(k.rps);
      row.ratios.push(k.rps / ceiling);
      row.cpuUs.push((k.cpu * 1e6) / k.rps);
      if (k.errors > 0) row.note = `${k.errors} non-2xx`;
    }
  } finally {
    await fixed.stop();
    await ipsift.stop();
  }
  const batch = await startIpsift(dataDir, { KEYLESS_TIER: 'max', BATCH_WORKERS: '2', HTTP_SERVER: server }, rt.bin);
  try {
    await wrk(batch, 'batch.lua', 1, BATCH_CONNECTIONS, undefined, 1);
    row.batchIps = (await wrk(batch, 'batch.lua', 2, BATCH_CONNECTIONS)).rps * 1000;
  } finally {
    await batch.stop();
  }
  return row;
}

const k = (v: number): string => `${Math.round(v / 1000).toLocaleString('en')} k`;

/** Measures every runtime/server pair and prints the table. */
export async function benchRuntimes(dataDir: string, key: string): Promise<void> {
  const runtimes = await runtimesAtHand();
  out(`runtimes: ${runtimes.map((r) => r.name).join(', ')}; GET /{ip} with a scale key against the same server's fixed-body ceiling, wrk, ${ROUNDS} rounds of 2 s (ceiling, ipsift, ceiling), medians; POST /batch ×1000 over ${BATCH_CONNECTIONS} connections, ${SECONDS} s`);
  out('| runtime | server | fixed-body req/s | keyed GET /{ip} req/s | keyed / fixed-body | server CPU µs per keyed lookup | POST /batch IPs/s |');
  out('|---|---|---|---|---|---|---|');
  for (const rt of runtimes) {
    for (const server of rt.servers) {
      const r = await measurePair(rt, server, dataDir, key);
      if (r.ratios.length === 0) {
        out(`| ${r.runtime} | ${server} | — | — | — | — | — (${r.note}) |`);
        continue;
      }
      const cpu = median(r.cpuUs);
      out(
        `| ${r.runtime} | ${server} | ${k(Number(median(r.ceiling)))} | ${k(Number(median(r.keyed)))} | ${median(r.ratios)} (${range(r.ratios)}) | ${Number(cpu).toFixed(1)} | ${k(r.batchIps)}${r.note ? ` (${r.note})` : ''} |`,
      );
    }
  }
}
