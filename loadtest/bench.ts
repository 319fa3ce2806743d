// `npm run bench`: figures for the lookup path, all taken in one run on this machine.
//
//   1. build time of a 1 M-range synthetic feed set (cached between runs by seed)
//   2. in-process lookups/s (parse + bogon check + search), and with answer writing
//   3. GET /{ip} req/s, p50/p99 for ipsift (keyless, with a key, and keyless with the keyless
//      limits lifted) next to a fixed-body uWebSockets.js server (and one that also reads the
//      peer address, as keyless accounting must), with wrk (if
//      installed: it can show the ceiling) and autocannon; server CPU share; the ratios as
//      medians of BENCH_RATIO_ROUNDS back-to-back rounds; the same with a key on node:http
//   4. POST /batch of 1000 random addresses, max-tier answers, in IPs/s, on each server
//   5. per runtime and server (loadtest/runtimes.ts): keyed GET /{ip} against that server's own
//      fixed-body ceiling, and batches, on this Node and the runtimes .ci/run caches
//   6. front-end threads (loadtest/threads.ts): keyed GET /{ip} req/s and server CPU per
//      request, and batch IPs/s, at 1 thread and at N, in alternating rounds
//   7. RSS of the server with 1 and with 4 batch workers (the index is shared, not copied)
//   8. the public source registry from a loopback mirror: fetch + import, build, a refresh with
//      nothing changed, each timed with its peak RSS (loadtest/sources.ts)
//
// Options (environment): BENCH_RANGES (default 1000000), BENCH_SECONDS (default 5),
// BENCH_CONNECTIONS (default 64), BENCH_BATCH_CONNECTIONS (default 8), BENCH_RATIO_ROUNDS (default 8),
// BENCH_DIR (default $TMPDIR/ipsift-bench),
// BENCH_ONLY=in-process (build and in-process figures only), BENCH_ONLY=lookups (and the HTTP
// lookup and batch figures), BENCH_ONLY=history (and lookups as of a time against now), BENCH_ONLY=threads (build and the thread table), BENCH_ONLY=sources (the registry only), BENCH_THREADS
// (thread counts to compare, default 1 and the cores).

import fs from 'node:fs';
import nodeHttp from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import autocannon from 'autocannon';
import { openControlDb } from '../src/control/control-db.js';
import { publishExports, readExportsManifest } from '../src/pipeline/publish.js';
import { LocalStore } from '../src/objects/local-store.js';
import { readCurrentBuildId } from '../src/index/builds.js';
import { loadNativeUws } from '../src/http/server/uws.js';
import { loadIndexFile } from '../src/index/loader.js';
import { AddressBatch } from '../src/lookup/address-batch.js';
import { answerBytes, recordOf, writeAnswer } from '../src/lookup/answer.js';
import { MAX_BATCH_ADDRESSES, answerBatch } from '../src/lookup/batch.js';
import { TIER_MAX } from '../src/model/projection.js';
import { NOT_ADDRESS, ParsedAddress, formatIPv4, formatIPv6Words, parseAddress } from '../src/net/address.js';
import { prng } from '../scripts/gen-feeds.js';
import { lookupAll } from './lookup-all.js';
import { benchRuntimes } from './runtimes.js';
import { benchThreads } from './threads.js';
import { benchSources } from './sources.js';
import {
  CONNECTIONS,
  ROOT,
  prepareBuild,
  SECONDS,
  cpuSeconds,
  exec,
  haveWrk,
  median,
  out,
  range,
  scaleKey,
  show,
  startIpsift,
  startProcess,
  unlimitedKeylessPlans,
  wrk,
  type LoadResult,
  type Server,
} from './kit.js';
import { INDEX_FILE, buildDir } from '../src/data-dir.js';

const RATIO_ROUNDS = Number(process.env.BENCH_RATIO_ROUNDS ?? 8);
const BATCH_CONNECTIONS = Number(process.env.BENCH_BATCH_CONNECTIONS ?? 8);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function randomAddresses(n: number, seed: number): string[] {
  const rnd = prng(seed);
  const w = new Uint32Array(4);
  return Array.from({ length: n }, () => {
    if (rnd() < 0.8) return formatIPv4(Math.floor(rnd() * 2 ** 32));
    w[0] = (0x2001 + Math.floor(rnd() * 0xc00)) * 65536 + Math.floor(rnd() * 65536);
    w[1] = Math.floor(rnd() * 2 ** 32);
    w[2] = Math.floor(rnd() * 2 ** 32);
    w[3] = Math.floor(rnd() * 2 ** 32);
    return formatIPv6Words(w);
  });
}

async function inProcess(dataDir: string): Promise<void> {
  const id = readCurrentBuildId(dataDir)!;
  const { shared, index } = await loadIndexFile(path.join(buildDir(dataDir, id), INDEX_FILE));
  // Flat strings, as JSON.parse and uWS deliver them (formatting makes rope strings).
  const addresses: string[] = JSON.parse(JSON.stringify(randomAddresses(1 << 20, 11)));
  const p = new ParsedAddress();
  const outBuf = Buffer.allocUnsafe(64 * 1024);
  const rounds = (label: string, body: () => number): void => {
    const rates: number[] = [];
    let sink = 0;
    for (let r = 0; r < 6; r++) {
      const t = performance.now();
      sink += body();
      rates.push(addresses.length / ((performance.now() - t) / 1000));
    }
    rates.shift(); // warm-up
    rates.sort((a, b) => a - b);
    out(`in-process ${label}: median ${(rates[2] / 1e6).toFixed(2)} M/s, best ${(rates[4] / 1e6).toFixed(2)} M/s (checksum ${sink % 997})`);
  };
  const batch = new AddressBatch(MAX_BATCH_ADDRESSES);
  rounds(`lookups in batches of ${MAX_BATCH_ADDRESSES}, 1 thread (parse all + bogon check + search all)`, () => lookupAll(addresses, index, batch));
  await lookupThreads(shared, addresses, os.cpus().length);
  rounds('lookups one at a time (parse + bogon check + search)', () => {
    let sum = 0;
    for (const s of addresses) if (parseAddress(s, 0, s.length, p) !== NOT_ADDRESS) sum += recordOf(index, p);
    return sum;
  });
  rounds('answers (… + normalise + write max-tier JSON)', () => {
    let sum = 0;
    for (const s of addresses) {
      if (parseAddress(s, 0, s.length, p) === NOT_ADDRESS) continue;
      const record = recordOf(index, p);
      if (answerBytes(index, record, TIER_MAX) <= outBuf.length) sum += writeAnswer(outBuf, 0, p, index, record, TIER_MAX);
    }
    return sum;
  });
  const bodies: string[] = [];
  for (let at = 0; at < addresses.length; at += MAX_BATCH_ADDRESSES) {
    bodies.push(JSON.stringify({ ips: addresses.slice(at, at + MAX_BATCH_ADDRESSES) }));
  }
  rounds(`batch answers (answerBatch: JSON body in, max-tier JSON out, as a worker does)`, () => {
    let sum = 0;
    for (const body of bodies) sum += answerBatch(body, index, TIER_MAX).byteLength;
    return sum;
  });
}

/** The same loop on n threads at once, all reading the one shared index (as batch workers do). */
async function lookupThreads(shared: SharedArrayBuffer, addresses: string[], n: number): Promise<void> {
  const rounds = 5;
  const threads = Array.from({ length: n }, () => new Worker(path.join(ROOT, 'dist/loadtest/lookup-thread.js'), { workerData: { shared, addresses, rounds } }));
  try {
    await Promise.all(threads.map((t) => new Promise((r) => t.once('message', r)))); // warmed up
    const done = threads.map((t) => new Promise<{ ms: number }>((r) => t.once('message', r)));
    for (const t of threads) t.postMessage('go');
    const results = await Promise.all(done);
    const slowest = Math.max(...results.map((r) => r.ms));
    out(
      `in-process lookups in batches of ${MAX_BATCH_ADDRESSES}, ${n} threads on one shared index: ${((n * rounds * addresses.length) / (slowest / 1000) / 1e6).toFixed(2)} M/s in all`,
    );
  } finally {
    await Promise.all(threads.map((t) => t.terminate()));
  }
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) / 1024;
}

async function autocannonGet(server: Server, paths: string[], key?: string): Promise<LoadResult> {
  const pid = server.child.pid!;
  const before = cpuSeconds(pid);
  const mainBefore = cpuSeconds(pid, pid);
  const t = performance.now();
  let n = 0;
  const result = await autocannon({
    url: `http://127.0.0.1:${server.port}`,
    connections: CONNECTIONS,
    duration: SECONDS,
    headers: key ? { authorization: `Bearer ${key}` } : {},
    requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, path: paths[n++ % paths.length] }) }],
  });
  const elapsed = (performance.now() - t) / 1000;
  const cpu = (cpuSeconds(pid) - before) / elapsed;
  return {
    rps: result.requests.average,
    p50: `${result.latency.p50}ms`,
    p99: `${result.latency.p99}ms`,
    cpu,
    mainCpu: (cpuSeconds(pid, pid) - mainBefore) / elapsed,
    errors: result.non2xx + result.errors,
  };
}

async function lookups(dataDir: string): Promise<void> {
  const useWrk = await haveWrk();
  if (!useWrk) out('wrk is not installed (apt-get install wrk): autocannon only, which saturates near 68 k req/s here');
  const paths = randomAddresses(20000, 3).map((a) => '/' + a);

  const fixed = await startProcess([path.join(ROOT, 'dist/loadtest/fixed-server.js')], { PORT: '0' }, /listening (\d+)/);
  const fixedPeer = await startProcess([path.join(ROOT, 'dist/loadtest/fixed-server.js')], { PORT: '0', READ_PEER: '1' }, /listening (\d+)/);
  const fixedNode = await startProcess([path.join(ROOT, 'dist/loadtest/fixed-server.js')], { PORT: '0', HTTP_SERVER: 'node' }, /listening (\d+)/);
  const ipsift = await startIpsift(dataDir, { BATCH_WORKERS: '1' });
  const onNode = await startIpsift(dataDir, { BATCH_WORKERS: '1', HTTP_SERVER: 'node' });
  const unlimited = await startIpsift(dataDir, { BATCH_WORKERS: '1', PLANS_FILE: unlimitedKeylessPlans() });
  const key = scaleKey(dataDir);
  try {
    for (const [name, server, k] of [
      ['fixed-body uWS', fixed, undefined],
      ['fixed-body uWS reading the peer', fixedPeer, undefined],
      ['ipsift GET /{ip} keyless', ipsift, undefined],
      ['ipsift GET /{ip} scale key', ipsift, key],
      ['ipsift GET /{ip} keyless, keyless limits lifted', unlimited, undefined],
      ['fixed-body node:http', fixedNode, undefined],
      ['ipsift GET /{ip} scale key, HTTP_SERVER=node', onNode, key],
    ] as const) {
      await autocannonGet(server, paths.slice(0, 1000), k); // warm-up
      if (useWrk) out(show(`wrk        ${name}`, await wrk(server, 'random-get.lua', 5, CONNECTIONS, k)));
      out(show(`autocannon ${name}`, await autocannonGet(server, paths, k)));
    }
    if (useWrk) {
      // The machine is shared and noisy: short runs back to back, the median of each ratio.
      const rounds = {
        keyless: [] as number[],
        key: [] as number[],
        peer: [] as number[],
        keylessPeer: [] as number[],
        keyKeyless: [] as number[],
        unlimited: [] as number[],
        node: [] as number[],
        nodeCeiling: [] as number[],
      };
      let errors = 0;
      for (let r = 0; r < RATIO_ROUNDS; r++) {
        const a = await wrk(fixed, 'random-get.lua', 9 + r, CONNECTIONS, undefined, 2);
        const p = await wrk(fixedPeer, 'random-get.lua', 9 + r, CONNECTIONS, undefined, 2);
        const b = await wrk(ipsift, 'random-get.lua', 9 + r, CONNECTIONS, undefined, 2);
        const c = await wrk(ipsift, 'random-get.lua', 9 + r, CONNECTIONS, key, 2);
        const u = await wrk(unlimited, 'random-get.lua', 9 + r, CONNECTIONS, undefined, 2);
        const n = await wrk(onNode, 'random-get.lua', 9 + r, CONNECTIONS, key, 2);
        const fn = await wrk(fixedNode, 'random-get.lua', 9 + r, CONNECTIONS, undefined, 2);
        const a2 = await wrk(fixed, 'random-get.lua', 9 + r, CONNECTIONS, undefined, 2);
        const ceiling = (a.rps + a2.rps) / 2;
        rounds.keyless.push(b.rps / ceiling);
        rounds.key.push(c.rps / ceiling);
        rounds.peer.push(p.rps / ceiling);
        rounds.keylessPeer.push(b.rps / p.rps);
        rounds.keyKeyless.push(c.rps / b.rps);
        rounds.unlimited.push(u.rps / ceiling);
        rounds.node.push(n.rps / c.rps);
        rounds.nodeCeiling.push(n.rps / fn.rps);
        errors += b.errors + c.errors + u.errors + n.errors;
      }
      out(
        `ratios (wrk, medians of ${RATIO_ROUNDS} back-to-back rounds of 2 s; range in brackets): ` +
          `scale key / fixed-body ${median(rounds.key)} (${range(rounds.key)}), keyless / fixed-body ${median(rounds.keyless)} (${range(rounds.keyless)}), ` +
          `fixed-body reading the peer / fixed-body ${median(rounds.peer)} (${range(rounds.peer)}), keyless / fixed-body reading the peer ${median(rounds.keylessPeer)} (${range(rounds.keylessPeer)}), ` +
          `scale key / keyless ${median(rounds.keyKeyless)}, keyless with the keyless limits lifted / fixed-body ${median(rounds.unlimited)} (${range(rounds.unlimited)}), ` +
          `scale key on node:http / on uWS ${median(rounds.node)} (${range(rounds.node)}), ` +
          `scale key on node:http / fixed-body node:http ${median(rounds.nodeCeiling)} (${range(rounds.nodeCeiling)}); ${errors} non-2xx`,
      );
    }
  } finally {
    await fixed.stop();
    await fixedPeer.stop();
    await fixedNode.stop();
    await ipsift.stop();
    await onNode.stop();
    await unlimited.stop();
  }

  for (const server of 'uws' in loadNativeUws() ? (['uws', 'node'] as const) : (['node'] as const)) await batches(dataDir, server, useWrk);
}

async function batches(dataDir: string, server: 'uws' | 'node', useWrk: boolean): Promise<void> {
  const batchServer = await startIpsift(dataDir, { KEYLESS_TIER: 'max', BATCH_WORKERS: '2', HTTP_SERVER: server });
  try {
    if (useWrk) {
      // A few connections keep both workers busy; more would only fill the queue (429s).
      await wrk(batchServer, 'batch.lua', 1, BATCH_CONNECTIONS);
      out(
        show(
          `wrk        ipsift POST /batch ×1000, max tier, ${BATCH_CONNECTIONS} connections, HTTP_SERVER=${server}`,
          await wrk(batchServer, 'batch.lua', 2, BATCH_CONNECTIONS),
          'IPs/s',
          1000,
        ),
      );
    } else {
      const bodies = Array.from({ length: 32 }, (_, b) => JSON.stringify({ ips: randomAddresses(1000, 100 + b) }));
      let n = 0;
      const r = await autocannon({
        url: `http://127.0.0.1:${batchServer.port}/batch`,
        connections: 16,
        duration: SECONDS,
        method: 'POST',
        requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, body: bodies[n++ % bodies.length] }) }],
      });
      out(
        `autocannon ipsift POST /batch ×1000, max tier, HTTP_SERVER=${server}: ${Math.round(r.requests.average * 1000).toLocaleString('en')} IPs/s, non-2xx ${r.non2xx}`,
      );
    }
  } finally {
    await batchServer.stop();
  }
}

/**
 * Lookups as of a time (GET /{ip}?at=) against the same addresses now, scale key, one front-end
 * thread: alternating rounds, the median of the ratio, and each side's p99. The timeline is
 * what the server's start made of the serving log (this run's build and the runs' before).
 */
async function history(dataDir: string): Promise<void> {
  const server = await startIpsift(dataDir, { BATCH_WORKERS: '1' });
  const key = scaleKey(dataDir);
  try {
    const addresses = randomAddresses(20000, 5);
    const now = addresses.map((a) => `/${a}`);
    const at = `?at=${encodeURIComponent(new Date().toISOString())}`;
    const asOf = addresses.map((a) => `/${a}${at}`);
    await autocannonGet(server, now.slice(0, 1000), key); // warm-up, both paths
    await autocannonGet(server, asOf.slice(0, 1000), key);
    const ratios: number[] = [];
    // Server CPU per request, at= over now: what the ratio would be on a saturated core.
    const cpuRatios: number[] = [];
    const p99: { now: string[]; at: string[] } = { now: [], at: [] };
    let errors = 0;
    for (let r = 0; r < Math.max(3, RATIO_ROUNDS / 2); r++) {
      const a = await autocannonGet(server, now, key);
      const b = await autocannonGet(server, asOf, key);
      ratios.push(b.rps / a.rps);
      cpuRatios.push(b.cpu / b.rps / (a.cpu / a.rps));
      p99.now.push(a.p99);
      p99.at.push(b.p99);
      errors += a.errors + b.errors;
      if (r === 0) {
        out(show('autocannon GET /{ip} scale key', a));
        out(show('autocannon GET /{ip}?at= scale key', b));
      }
    }
    out(
      `as of a time / now (autocannon, ${ratios.length} alternating rounds of ${SECONDS} s): median ${median(ratios)} (${range(ratios)}); server CPU per request ${median(cpuRatios)}× now (${range(cpuRatios)}); ` +
        `p99 at= ${p99.at.join(', ')}, now ${p99.now.join(', ')}; ${errors} non-2xx`,
    );
  } finally {
    await server.stop();
  }
}

async function memory(dataDir: string): Promise<void> {
  const body = JSON.stringify({ ips: randomAddresses(1000, 77) });
  const line: string[] = [];
  for (const workers of [1, 4]) {
    const server = await startIpsift(dataDir, { BATCH_WORKERS: String(workers), KEYLESS_TIER: 'max' });
    try {
      // Enough concurrent batches that every worker has mapped the index and answered.
      await autocannon({ url: `http://127.0.0.1:${server.port}/batch`, connections: 8, amount: 400, method: 'POST', body });
      await sleep(200);
      line.push(`${workers} worker${workers > 1 ? 's' : ''} ${rssMiB(server.child.pid!).toFixed(0)} MiB`);
    } finally {
      await server.stop();
    }
  }
  const id = readCurrentBuildId(dataDir)!;
  const indexMiB = fs.statSync(path.join(buildDir(dataDir, id), INDEX_FILE)).size / 2 ** 20;
  out(`server RSS after batches on every worker: ${line.join(', ')} (index ${indexMiB.toFixed(0)} MiB, held once in shared memory)`);
}

/** Download throughput of the largest published file over loopback, with the server's RSS before and after. */
async function downloads(dataDir: string): Promise<void> {
  const id = readCurrentBuildId(dataDir)!;
  const db = openControlDb(dataDir);
  try {
    await publishExports(db, new LocalStore(dataDir), dataDir, id);
  } finally {
    db.close();
  }
  const manifest = readExportsManifest(dataDir, id);
  const biggest = Object.values(manifest.databases)
    .flatMap((d) => Object.values(d.artifacts).map((a) => ({ id: d.id, art: a!.full })))
    .sort((a, b) => b.art.bytes - a.art.bytes)[0];
  const server = await startIpsift(dataDir, { BATCH_WORKERS: '1' });
  try {
    const store = new LocalStore(dataDir);
    const url = await store.signedUrl(`${biggest.id}/${id}/${biggest.art.file}`, Date.now() + 600_000, biggest.art.file, `http://127.0.0.1:${server.port}`);
    const before = rssMiB(server.child.pid!);
    const rates: number[] = [];
    let after = before;
    for (let round = 0; round < 3; round++) {
      const t = performance.now();
      const bytes = await new Promise<number>((resolve, reject) => {
        nodeHttp
          .get(url, (res) => {
            let n = 0;
            res.on('data', (c: Buffer) => (n += c.length));
            res.on('end', () => resolve(n));
          })
          .on('error', reject);
      });
      if (bytes !== biggest.art.bytes) throw new Error(`downloaded ${bytes} of ${biggest.art.bytes} bytes`);
      rates.push(bytes / ((performance.now() - t) / 1000) / 1e6);
      after = Math.max(after, rssMiB(server.child.pid!));
    }
    rates.sort((a, b) => a - b);
    out(
      `download of ${biggest.art.file} (${(biggest.art.bytes / 2 ** 20).toFixed(0)} MiB) over loopback: median ${rates[1].toFixed(0)} MB/s, best ${rates[2].toFixed(0)} MB/s; ` +
        `server RSS ${before.toFixed(0)} MiB before, at most ${after.toFixed(0)} MiB during`,
    );
  } finally {
    await server.stop();
  }
}

out(`ipsift bench — ${os.cpus().length} cores, Node ${process.version}, ${new Date().toISOString()}`);
if (process.env.BENCH_ONLY === 'sources') {
  await benchSources();
  process.exit(0);
}
const dataDir = await prepareBuild();
await inProcess(dataDir);
if (process.env.BENCH_ONLY === 'lookups') await lookups(dataDir);
else if (process.env.BENCH_ONLY === 'history') await history(dataDir);
else if (process.env.BENCH_ONLY === 'threads') await benchThreads(dataDir, scaleKey(dataDir));
else if (process.env.BENCH_ONLY !== 'in-process') {
  await lookups(dataDir);
  await history(dataDir);
  await benchThreads(dataDir, scaleKey(dataDir));
  await benchRuntimes(dataDir, scaleKey(dataDir));
  await memory(dataDir);
  await downloads(dataDir);
  await benchSources();
  // The long fuzz run and the memory attacks (#11), each in its own process.
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const [script, args] of [
    ['fuzz.js', ['200000']],
    ['attacks.js', []],
  ] as const) {
    const r = await exec(process.execPath, [path.join(here, script), ...args], { maxBuffer: 1 << 24 }).catch((e: { stdout?: string; message: string }) => ({
      stdout: e.stdout ?? e.message,
    }));
    for (const line of r.stdout.split('\n').filter((l) => l && !l.startsWith('{'))) out(line);
  }
}
