// `npm run bench:token`: keyed GET /{ip} with the scale key against the same requests with a
// short-lived token of that key (POST /api/v1/auth/token), on one server pinned to CPU 1 and
// wrk on CPU 0 where taskset is at hand, in alternating rounds; prints req/s, server CPU µs
// per request and token/key. A token is verified once per key-cache lifetime and then costs
// what a key costs: the figure shows it.

import { CONNECTIONS, SECONDS, haveTaskset, haveWrk, median, out, prepareBuild, range, scaleKey, startIpsift, wrk } from './kit.js';

const ROUNDS = Number(process.env.BENCH_RATIO_ROUNDS ?? 8);
if (!(await haveWrk())) {
  process.stderr.write('bench:token needs wrk\n');
  process.exit(2);
}
const pinned = await haveTaskset();
const dataDir = await prepareBuild();
const key = scaleKey(dataDir);
const server = await startIpsift(dataDir, {}, process.execPath, pinned ? '1' : undefined);
const r = await fetch(`http://127.0.0.1:${server.port}/api/v1/auth/token`, {
  method: 'POST',
  headers: { Authorization: `Bearer ${key}` },
  body: JSON.stringify({ lifetime_s: 86400 }),
});
const token = ((await r.json()) as { token?: string }).token;
if (r.status !== 201 || !token) throw new Error(`token exchange answered ${r.status}`);
const names = ['key', 'token'];
const credentials = [key, token];
const rps: number[][] = [[], []];
const us: number[][] = [[], []];
try {
  for (const c of credentials) await wrk(server, 'random-get.lua', 1, CONNECTIONS, c, 1, pinned ? '0' : undefined); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
      const res = await wrk(server, 'random-get.lua', 200 + round, CONNECTIONS, credentials[i], SECONDS, pinned ? '0' : undefined);
      if (res.errors > 0) throw new Error(`${names[i]}: ${res.errors} non-2xx answers`);
      rps[i].push(res.rps);
      us[i].push((res.cpu / res.rps) * 1e6);
    }
  }
} finally {
  await server.stop();
}
out(`keyed GET /{ip}, scale plan, ${ROUNDS} alternating rounds of ${SECONDS} s${pinned ? ', server on CPU 1, wrk on CPU 0' : ''}`);
for (const i of [0, 1])
  out(
    `${names[i]}: ${Math.round(Number(median(rps[i]))).toLocaleString('en')} req/s (${range(rps[i].map((x) => x / 1000))} k), ${median(us[i])} µs server CPU per request (${range(us[i])})`,
  );
const ratio = (xs: number[], ys: number[]): number[] => xs.map((x, k) => ys[k] / x);
out(
  `token/key: req/s ${median(ratio(rps[0], rps[1]))} (${range(ratio(rps[0], rps[1]))}), CPU per request ${median(ratio(us[0], us[1]))} (${range(ratio(us[0], us[1]))})`,
);
