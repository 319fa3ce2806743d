// `npm run bench:cluster`: accounting in Redis against LMDB, and one node against three.
//
// 1. Keyed GET /{ip} for each plan shape the accounting treats differently (a key whose
//    organisation has no hard limit, its quota only counted; one with a hard limit, where a
//    late refill is waited for and grants shrink near the limit) and keyless GET /{ip} from
//    20 000 sources (forwarded by a trusted proxy), on three servers of one build: accounting
//    in LMDB, in Redis on loopback, and in Redis 1 ms away (through a proxy that holds every
//    chunk 1 ms each way). Each pinned to CPU 1 with wrk on CPU 0 where taskset is at hand,
//    rounds in rotated order: req/s, p50 and p99 latency, the server's CPU µs per request (and
//    its main thread's part), and each against LMDB in the same round. Every plan's rate and
//    quota are far above what one core serves, so nothing is refused.
// 2. Three nodes (ipsift processes on the same data, ACCOUNTING=redis, one front-end thread
//    each) under one wrk each, against one node under one wrk: requests/s summed. On a
//    machine with fewer cores than nodes + wrk processes this shows sharing, not scaling.
//
// Redis is a redis-server of the bench's own on a free port (nothing kept on disk). Where the
// machine's PostgreSQL answers (IPSIFT_BENCH_POSTGRES, default postgres://postgres@127.0.0.1/test),
// the nodes of part 2 keep their control plane in a database of the bench's own there, as a
// cluster does (CONTROL_DB); otherwise in the shared data directory's SQLite file.

import { spawn } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import { PostgresDb } from '../src/control/postgres.js';
import type { ControlDbConfig } from '../src/config.js';
import { startDelayProxy } from './delay-proxy.js';
import { CONNECTIONS, SECONDS, haveTaskset, haveWrk, median, out, prepareBuild, range, scaleKey, startIpsift, wrk, type Server } from './kit.js';

const ROUNDS = Number(process.env.BENCH_RATIO_ROUNDS ?? 6);
const SOURCES = Number(process.env.BENCH_SOURCES ?? 20_000);
const stops: (() => Promise<void>)[] = [];

/** wrk's latency text (850.00us, 1.20ms, 1.02s) in milliseconds. */
function latencyMs(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (m === null) return NaN;
  return Number(m[1]) * { us: 0.001, ms: 1, s: 1000, m: 60_000 }[m[2] as 'us' | 'ms' | 's' | 'm'];
}
if (!(await haveWrk())) {
  process.stderr.write('bench:cluster needs wrk\n');
  process.exit(2);
}
const port = await new Promise<number>((resolve) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => {
    const p = (s.address() as net.AddressInfo).port;
    s.close(() => resolve(p));
  });
});
const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--logfile', ''], { stdio: 'ignore' });
await new Promise((r) => setTimeout(r, 300));
const redisEnv = { ACCOUNTING: 'redis', REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_PREFIX: 'bench:' };

const pinned = await haveTaskset();
const pgUrl = process.env.IPSIFT_BENCH_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';
const pgDatabase = `ipsift_bench_${process.pid}`;
let control: ControlDbConfig = null;
try {
  const admin = new PostgresDb({ url: pgUrl, timeoutMs: 10_000, connectTimeoutMs: 2000 });
  admin.exec(`CREATE DATABASE ${pgDatabase}`);
  admin.close();
  const u = new URL(pgUrl);
  u.pathname = `/${pgDatabase}`;
  control = { url: u.toString(), timeoutMs: 1000 };
} catch (e) {
  out(`PostgreSQL not used (${(e as Error).message}): part 2's control plane is the data directory's SQLite`);
}
const dropPg = (): void => {
  if (control === null) return;
  const admin = new PostgresDb({ url: pgUrl, timeoutMs: 10_000 });
  admin.exec(`DROP DATABASE IF EXISTS ${pgDatabase} WITH (FORCE)`);
  admin.close();
};
const dataDir = await prepareBuild();
const key = scaleKey(dataDir);
const limitedKey = scaleKey(dataDir, null, 'scale-limited');
const servers: Server[] = [];
try {
  // Redis 1 ms away: every chunk held 1 ms each way (a network between hosts).
  const proxy = await startDelayProxy(port, 1);
  stops.push(() => proxy.close());
  const stores = [
    { name: 'LMDB', env: {} },
    { name: 'Redis, loopback', env: redisEnv },
    { name: 'Redis, 1 ms away', env: { ...redisEnv, REDIS_URL: `redis://127.0.0.1:${proxy.port}`, REDIS_PREFIX: 'bench-far:' } },
  ];
  const traffics = [
    { name: 'keyed GET /{ip}, no hard limit', script: 'random-get.lua', arg: key },
    { name: 'keyed GET /{ip}, a hard limit', script: 'random-get.lua', arg: limitedKey },
    { name: `keyless GET /{ip}, ${SOURCES.toLocaleString('en')} forwarded sources`, script: 'many-sources.lua', arg: String(SOURCES) },
  ];
  const nodes: Server[] = [];
  for (const s of stores) nodes.push(await startIpsift(dataDir, { ...s.env, TRUSTED_PROXIES: '127.0.0.1/32' }, process.execPath, pinned ? '1' : undefined));
  servers.push(...nodes);
  const wrkCpu = pinned ? '0' : undefined;
  out(
    `one front-end thread a server${pinned ? ' on CPU 1, wrk on CPU 0' : ''}; ${CONNECTIONS} connections; ${ROUNDS} rounds of ${SECONDS} s, each in a rotated order`,
  );
  out(
    '| traffic | accounting | req/s (median, range) | p50 ms | p99 ms | server CPU µs a request (main thread) | CPU against LMDB | req/s against LMDB (median, range) |',
  );
  out('|---|---|---|---|---|---|---|---|');
  for (const t of traffics) {
    for (const n of nodes) await wrk(n, t.script, 1, CONNECTIONS, t.arg, 1, wrkCpu); // warm-up
    const rps: number[][] = stores.map(() => []);
    const p50: number[][] = stores.map(() => []);
    const p99: number[][] = stores.map(() => []);
    const us: number[][] = stores.map(() => []);
    const mainUs: number[][] = stores.map(() => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < stores.length; k++) {
        const i = (round + k) % stores.length;
        const r = await wrk(nodes[i], t.script, 300 + round, CONNECTIONS, t.arg, SECONDS, wrkCpu);
        if (r.errors > 0) throw new Error(`${stores[i].name}, ${t.name}: ${r.errors} non-2xx answers`);
        rps[i].push(r.rps);
        p50[i].push(latencyMs(r.p50));
        p99[i].push(latencyMs(r.p99));
        us[i].push((r.cpu / r.rps) * 1e6);
        mainUs[i].push((r.mainCpu / r.rps) * 1e6);
      }
    }
    for (let i = 0; i < stores.length; i++) {
      const against = rps[i].map((x, k) => x / rps[0][k]);
      const cpuAgainst = us[i].map((x, k) => x / us[0][k]);
      out(
        `| ${t.name} | ${stores[i].name} | ${Math.round(Number(median(rps[i]))).toLocaleString('en')} (${range(rps[i].map((x) => x / 1000))} k) | ${median(p50[i])} | ${median(p99[i])} | ${median(us[i])} (${median(mainUs[i])}) | ${median(cpuAgainst)} | ${i === 0 ? '1.00' : `${median(against)} (${range(against)})`} |`,
      );
    }
  }
  await Promise.all(servers.splice(0).map((s) => s.stop()));

  // One node against three, all on Redis (and on PostgreSQL where it answers).
  const clusterKey = control === null ? key : scaleKey(dataDir, control);
  const clusterEnv = control === null ? redisEnv : { ...redisEnv, CONTROL_DB: control.url };
  const total: number[][] = [[], []];
  for (let round = 0; round < Math.max(2, ROUNDS / 2); round++) {
    for (const n of round % 2 === 0 ? [1, 3] : [3, 1]) {
      const nodes = await Promise.all(Array.from({ length: n }, () => startIpsift(dataDir, clusterEnv)));
      servers.push(...nodes);
      const results = await Promise.all(nodes.map((s, k) => wrk(s, 'random-get.lua', 400 + round * 3 + k, Math.ceil(CONNECTIONS / n), clusterKey, SECONDS)));
      if (results.some((r) => r.errors > 0)) throw new Error(`${n} nodes: non-2xx answers`);
      total[n === 1 ? 0 : 1].push(results.reduce((a, r) => a + r.rps, 0));
      await Promise.all(servers.splice(0).map((s) => s.stop()));
    }
  }
  out(
    `nodes on one Redis${control === null ? '' : ' and one PostgreSQL'} (${os.availableParallelism()} cores here, one front-end thread a node, one wrk a node, ${CONNECTIONS} connections in all):`,
  );
  out(
    `1 node: ${Math.round(Number(median(total[0]))).toLocaleString('en')} req/s; 3 nodes: ${Math.round(Number(median(total[1]))).toLocaleString('en')} req/s; 3/1 ${median(total[1].map((x, k) => x / total[0][k]))}`,
  );
} finally {
  await Promise.all(servers.map((s) => s.stop()));
  await Promise.all(stops.map((stop) => stop()));
  redis.kill('SIGKILL');
  dropPg();
}
