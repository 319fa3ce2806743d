// The bench per runtime and server (`npm run bench:runtimes`, and the end of `npm run bench`):
// for each runtime at hand — this Node, and the node@N and bun packages that .ci/run keeps in
// ~/.cache/ipsift-runtimes (or BENCH_RUNTIMES, a ':'-separated list of node or bun binaries) —
// and each server that loads there (BENCH_SERVERS narrows them), GET /{ip} with a scale key in
// alternating rounds of wrk against that same server's fixed-body ceiling on that runtime
// (loadtest/fixed-server.ts sending the bytes of ipsift's keyed answer for one address), and
// against the same body sent with a keyed answer's head, which
// shows what the server itself charges for those header lines; then POST /batch of 1000
// addresses in IPs/s. Where taskset works and there are two cores or more, each server runs on
// CPU 1 and wrk on CPU 0: per-core figures, so a runtime's helper threads or wrk itself cannot
// lend the server a second core.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CONNECTIONS, ROOT, SECONDS, exec, probeAnswerFile, haveTaskset, median, out, range, startIpsift, startProcess, wrk, type Server } from './kit.js';

const ROUNDS = Number(process.env.BENCH_RATIO_ROUNDS ?? 5);
const BATCH_CONNECTIONS = Number(process.env.BENCH_BATCH_CONNECTIONS ?? 8);

interface Runtime {
  name: string;
  bin: string;
  servers: string[];
}

/** BENCH_SERVERS: only these servers (a ','-separated list of uws, bun, node). */
const onlyServers = process.env.BENCH_SERVERS?.split(',');

async function runtimeOf(bin: string): Promise<Runtime> {
  const { stdout } = await exec(bin, ['--version']);
  const version = stdout.trim();
  const bun = path.basename(bin).startsWith('bun');
  const servers = (bun ? ['bun', 'node'] : ['uws', 'node']).filter((s) => onlyServers?.includes(s) ?? true);
  return { name: bun ? `Bun ${version}` : `Node ${version}`, bin, servers };
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
  sameHead: number[];
  keyed: number[];
  ratios: number[];
  headRatios: number[];
  cpuUs: number[];
  batchIps: number;
  note: string;
}

/** CPUs for the server and for wrk, or null to let them share every core. */
interface Pinning {
  server: string;
  wrk: string;
}

function startFixed(rt: Runtime, server: string, pin: Pinning | null, sameHead: boolean, bodyFile: string): Promise<Server> {
  const args = [path.join(ROOT, 'dist/loadtest/fixed-server.js')];
  const env = { PORT: '0', HTTP_SERVER: server, SAME_HEAD: sameHead ? '1' : '0', BODY_FILE: bodyFile };
  return pin ? startProcess(['-c', pin.server, rt.bin, ...args], env, /listening (\d+)/, 'taskset') : startProcess(args, env, /listening (\d+)/, rt.bin);
}

/**
 * Rounds of the fixed-body ceiling, the same with a keyed answer's head, keyed ipsift, and
 * the ceiling again (its mean is the round's ceiling).
 */
async function measurePair(rt: Runtime, server: string, dataDir: string, key: string, pin: Pinning | null): Promise<Row> {
  const row: Row = { runtime: rt.name, server, ceiling: [], sameHead: [], keyed: [], ratios: [], headRatios: [], cpuUs: [], batchIps: 0, note: '' };
  const started: Server[] = [];
  let fixed: Server, head: Server, ipsift: Server;
  try {
    started.push((ipsift = await startIpsift(dataDir, { BATCH_WORKERS: '1', HTTP_SERVER: server }, rt.bin, pin?.server)));
    const bodyFile = await probeAnswerFile(ipsift, key, 'fixed-body.json');
    started.push((fixed = await startFixed(rt, server, pin, false, bodyFile)));
    started.push((head = await startFixed(rt, server, pin, true, bodyFile)));
  } catch (e) {
    await Promise.all(started.map((s) => s.stop()));
    const why = /cannot serve: ([^\n]*)|ipsift: ([^\n]*)/.exec(e instanceof Error ? e.message : String(e));
    row.note = `does not start: ${(why?.[1] ?? why?.[2] ?? 'see its log').replace(/: Cannot find module.*/, '')}`.slice(0, 120);
    return row;
  }
  try {
    for (const s of started) await wrk(s, 'random-get.lua', 1, CONNECTIONS, s === ipsift ? key : undefined, 1, pin?.wrk); // warm-up
    for (let r = 0; r < ROUNDS; r++) {
      const a = await wrk(fixed, 'random-get.lua', 9 + r, CONNECTIONS, undefined, 2, pin?.wrk);
      const h = await wrk(head, 'random-get.lua', 9 + r, CONNECTIONS, undefined, 2, pin?.wrk);
      const k = await wrk(ipsift, 'random-get.lua', 9 + r, CONNECTIONS, key, 2, pin?.wrk);
      const b = await wrk(fixed, 'random-get.lua', 9 + r, CONNECTIONS, undefined, 2, pin?.wrk);
      const ceiling = (a.rps + b.rps) / 2;
      row.ceiling.push(ceiling);
      row.sameHead.push(h.rps);
      row.keyed.push(k.rps);
      row.ratios.push(k.rps / ceiling);
      row.headRatios.push(k.rps / h.rps);
      row.cpuUs.push((k.cpu * 1e6) / k.rps);
      if (k.errors > 0) row.note = `${k.errors} non-2xx`;
    }
  } finally {
    await Promise.all(started.map((s) => s.stop()));
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
  const pin = os.cpus().length >= 2 && (await haveTaskset()) ? { server: '1', wrk: '0' } : null;
  const where = pin ? 'each server on CPU 1, wrk on CPU 0' : 'server and wrk sharing the cores';
  out(
    `runtimes: ${runtimes.map((r) => r.name).join(', ')}; GET /{ip} with a scale key against the same server's fixed-body ceiling and against a fixed body with a keyed answer's head (same head), wrk, ${ROUNDS} rounds of 2 s (ceiling, same head, ipsift, ceiling), medians, ${where}; POST /batch ×1000 over ${BATCH_CONNECTIONS} connections, ${SECONDS} s, unpinned`,
  );
  out(
    '| runtime | server | fixed-body req/s | same head req/s | keyed GET /{ip} req/s | keyed / fixed-body | keyed / same head | server CPU µs per keyed lookup | POST /batch IPs/s |',
  );
  out('|---|---|---|---|---|---|---|---|---|');
  for (const rt of runtimes) {
    for (const server of rt.servers) {
      const r = await measurePair(rt, server, dataDir, key, pin);
      if (r.ratios.length === 0) {
        out(`| ${r.runtime} | ${server} | — | — | — | — | — | — | — (${r.note}) |`);
        continue;
      }
      const cpu = median(r.cpuUs);
      out(
        `| ${r.runtime} | ${server} | ${k(Number(median(r.ceiling)))} | ${k(Number(median(r.sameHead)))} | ${k(Number(median(r.keyed)))} | ${median(r.ratios)} (${range(r.ratios)}) | ${median(r.headRatios)} (${range(r.headRatios)}) | ${Number(cpu).toFixed(1)} | ${k(r.batchIps)}${r.note ? ` (${r.note})` : ''} |`,
      );
    }
  }
}
