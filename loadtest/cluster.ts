// `npm run bench:cluster`: accounting in Redis against LMDB, and one node against three.
//
// 1. Keyed GET /{ip}, one server with ACCOUNTING=lmdb and one with ACCOUNTING=redis on the same
//    build, each pinned to CPU 1 with wrk on CPU 0 where taskset is at hand, alternating
//    rounds: req/s, the server's CPU µs per request, and Redis's own CPU µs per request.
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
import { CONNECTIONS, SECONDS, cpuSeconds, haveTaskset, haveWrk, median, out, prepareBuild, range, scaleKey, startIpsift, wrk, type Server } from './kit.js';

const ROUNDS = Number(process.env.BENCH_RATIO_ROUNDS ?? 6);
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
const servers: Server[] = [];
try {
  const lmdb = await startIpsift(dataDir, {}, process.execPath, pinned ? '1' : undefined);
  const onRedis = await startIpsift(dataDir, redisEnv, process.execPath, pinned ? '1' : undefined);
  servers.push(lmdb, onRedis);
  const names = ['lmdb', 'redis'];
  const rps: number[][] = [[], []];
  const us: number[][] = [[], []];
  const redisUs: number[] = [];
  for (const s of [lmdb, onRedis]) await wrk(s, 'random-get.lua', 1, CONNECTIONS, key, 1, pinned ? '0' : undefined); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
      const redisBefore = cpuSeconds(redis.pid!);
      const res = await wrk(servers[i], 'random-get.lua', 300 + round, CONNECTIONS, key, SECONDS, pinned ? '0' : undefined);
      if (res.errors > 0) throw new Error(`${names[i]}: ${res.errors} non-2xx answers`);
      rps[i].push(res.rps);
      us[i].push((res.cpu / res.rps) * 1e6);
      if (i === 1) redisUs.push(((cpuSeconds(redis.pid!) - redisBefore) / SECONDS / res.rps) * 1e6);
    }
  }
  await Promise.all(servers.splice(0).map((s) => s.stop()));
  out(`keyed GET /{ip}, scale plan, ${ROUNDS} alternating rounds of ${SECONDS} s${pinned ? ', server on CPU 1, wrk on CPU 0' : ''}`);
  for (const i of [0, 1]) out(`ACCOUNTING=${names[i]}: ${Math.round(Number(median(rps[i]))).toLocaleString('en')} req/s (${range(rps[i].map((x) => x / 1000))} k), ${median(us[i])} µs server CPU per request (${range(us[i])})`);
  out(`redis-server's own CPU: ${median(redisUs)} µs per request (${range(redisUs)})`);
  const ratio = (xs: number[], ys: number[]): number[] => xs.map((x, k) => ys[k] / x);
  out(`redis/lmdb: req/s ${median(ratio(rps[0], rps[1]))} (${range(ratio(rps[0], rps[1]))}), server CPU per request ${median(ratio(us[0], us[1]))} (${range(ratio(us[0], us[1]))})`);

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
  out(`nodes on one Redis${control === null ? '' : ' and one PostgreSQL'} (${os.availableParallelism()} cores here, one front-end thread a node, one wrk a node, ${CONNECTIONS} connections in all):`);
  out(`1 node: ${Math.round(Number(median(total[0]))).toLocaleString('en')} req/s; 3 nodes: ${Math.round(Number(median(total[1]))).toLocaleString('en')} req/s; 3/1 ${median(ratio(total[0], total[1]))}`);
} finally {
  await Promise.all(servers.map((s) => s.stop()));
  redis.kill('SIGKILL');
  dropPg();
}
