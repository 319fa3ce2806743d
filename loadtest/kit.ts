// What the bench scripts share: settings, starting servers as child processes (on any
// runtime), the bench plans and key, wrk runs with the server's CPU share, and medians.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createKey, createOrganisation } from '../src/control/accounts.js';
import type { ControlDbConfig } from '../src/config.js';
import { openControlDb } from '../src/control/control-db.js';
import { loadPlans } from '../src/model/plans.js';
import { runBuild } from '../src/build/build.js';
import { listBuilds, readCurrentBuildId } from '../src/index/builds.js';
import { importFeed } from '../src/feeds/import.js';
import { writeFeedCsv } from '../scripts/gen-feeds.js';
import { buildDir } from '../src/data-dir.js';

export const exec = promisify(execFile);
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
export const RANGES = Number(process.env.BENCH_RANGES ?? 1_000_000);
export const DIR = process.env.BENCH_DIR ?? path.join(os.tmpdir(), 'ipsift-bench');

export function out(line: string): void {
  process.stdout.write(line + '\n');
}

export interface Server {
  child: ChildProcess;
  port: number;
  stop(): Promise<void>;
}

/** Starts `runtime args` (the runtime: node or bun, this process's by default) and waits for `ready` in its output. */
export function startProcess(args: string[], env: Record<string, string>, ready: RegExp, runtime = process.execPath): Promise<Server> {
  const child = spawn(runtime, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  return new Promise((resolve, reject) => {
    const onData = (c: Buffer): void => {
      log += c;
      const m = ready.exec(log);
      if (m) {
        resolve({
          child,
          port: Number(m[1]),
          stop: () =>
            new Promise((r) => {
              child.once('exit', () => r());
              child.kill('SIGKILL');
            }),
        });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`exited ${code}: ${log}`)));
  });
}

/**
 * Limits far above what the bench can reach, so every request is answered and accounted
 * (rate leases and allowance leases are taken as in production, just never refused).
 */
export function benchPlans(): string {
  const rate = { per_second: 1e9, burst: 1e9 };
  const file = path.join(DIR, 'bench-plans.json');
  const plans: { key: string; tier: string; quota: number; rate: typeof rate; hard_limit: 'quota' | null }[] = ['free', 'starter', 'scale', 'max'].map(
    (tier) => ({ key: tier, tier, quota: 1e12, rate, hard_limit: null }),
  );
  // The scale tier with its quota as a hard limit: the counter has a limit, so a late refill
  // is waited for and grants shrink near it (one of the plan shapes of bench:cluster).
  plans.push({ key: 'scale-limited', tier: 'scale', quota: 1e12, rate, hard_limit: 'quota' });
  fs.writeFileSync(file, JSON.stringify({ keyless: { daily_cap: 1e12, rate }, plans }));
  return file;
}

/** benchPlans() with the keyless limits lifted, as a private deployment may configure them. */
export function unlimitedKeylessPlans(): string {
  const file = path.join(DIR, 'bench-plans-unlimited-keyless.json');
  const doc = JSON.parse(fs.readFileSync(benchPlans(), 'utf8')) as { keyless: unknown };
  doc.keyless = { daily_cap: null, rate: null };
  fs.writeFileSync(file, JSON.stringify(doc));
  return file;
}

/**
 * A scale-plan organisation with one key in the bench's data directory; `plan` another of
 * benchPlans()'s (scale-limited: the same with a hard limit).
 */
export function scaleKey(dataDir: string, control: ControlDbConfig = null, plan = 'scale'): string {
  const db = openControlDb(dataDir, control);
  try {
    const org = createOrganisation(db, loadPlans(benchPlans()), `bench-${plan}`, plan);
    return createKey(db, { orgId: org.id, name: 'bench' }).secret;
  } finally {
    db.close();
  }
}

/** The log line of `ipsift serve` that says it is listening; its port is the first group. */
export const LISTENING = /"msg":"listening","url":"http:\/\/[^:]+:(\d+)"/;

/**
 * `ipsift serve` on the bench's data: one front-end thread (per-core figures) unless env says
 * otherwise; `cpus`: on these CPUs only (taskset's list); `root`: another checkout's build.
 */
export function startIpsift(dataDir: string, env: Record<string, string>, runtime = process.execPath, cpus?: string, root = ROOT): Promise<Server> {
  // Node as every launcher of the service starts it (package.json, bin, the image, the systemd
  // unit): with room in the old generation (docs/contributing/decisions.md). Bun has no such flag.
  const flags = path.basename(runtime).startsWith('bun') ? [] : ['--initial-old-space-size=64'];
  const args = [...flags, path.join(root, 'dist/src/cli.js'), 'serve'];
  return startProcess(
    cpus ? ['-c', cpus, runtime, ...args] : args,
    { DATA_DIR: dataDir, PORT: '0', ADMIN_PORT: '0', DEMO: '0', PLANS_FILE: benchPlans(), FRONTEND_THREADS: '1', ...env },
    LISTENING,
    cpus ? 'taskset' : runtime,
  );
}

/** Whether taskset can pin processes to CPUs here. */
export async function haveTaskset(): Promise<boolean> {
  return exec('taskset', ['-c', '0', 'true']).then(
    () => true,
    () => false,
  );
}

/** The address whose keyed answer the fixed-body servers send (bench:peers, bench:runtimes). */
export const PROBE = '81.7.3.20';

/**
 * Writes ipsift's keyed answer for PROBE into DIR/`name` and returns the file: the body a
 * fixed-body ceiling sends, so that it and ipsift send bodies alike.
 */
export async function probeAnswerFile(ipsift: Server, key: string, name: string): Promise<string> {
  const r = await fetch(`http://127.0.0.1:${ipsift.port}/${PROBE}`, { headers: { authorization: `Bearer ${key}` } });
  if (r.status !== 200) throw new Error(`ipsift: answered ${r.status} for /${PROBE}`);
  const file = path.join(DIR, name);
  fs.writeFileSync(file, Buffer.from(await r.arrayBuffer()));
  return file;
}

export function cpuSeconds(pid: number, thread?: number): number {
  const stat = fs.readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in clock ticks
}

export interface LoadResult {
  rps: number;
  p50: string;
  p99: string;
  cpu: number;
  /** The main thread's part of `cpu` (the rest: worker threads, the GC's, libuv's). */
  mainCpu: number;
  errors: number;
}

export async function haveWrk(): Promise<boolean> {
  try {
    await exec('wrk', ['--version']).catch((e: { stdout?: string }) => {
      if (!String(e.stdout ?? '').includes('wrk')) throw e;
    });
    return true;
  } catch {
    return false;
  }
}

/** `cpus`: run wrk on these CPUs only (taskset's list, e.g. "0"). */
export async function wrk(
  server: Server,
  script: string,
  seed: number,
  connections = CONNECTIONS,
  key?: string,
  seconds = SECONDS,
  cpus?: string,
): Promise<LoadResult> {
  const pid = server.child.pid!;
  const before = cpuSeconds(pid);
  const mainBefore = cpuSeconds(pid, pid);
  const t = performance.now();
  const { stdout } = await exec(cpus ? 'taskset' : 'wrk', [
    ...(cpus ? ['-c', cpus, 'wrk'] : []),
    '-t1',
    `-c${connections}`,
    `-d${seconds}s`,
    '--latency',
    '-s',
    path.join(ROOT, 'loadtest', script),
    `http://127.0.0.1:${server.port}`,
    '--',
    String(seed),
    ...(key ? [key] : []),
  ]);
  const elapsed = (performance.now() - t) / 1000;
  const cpu = (cpuSeconds(pid) - before) / elapsed;
  const mainCpu = (cpuSeconds(pid, pid) - mainBefore) / elapsed;
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1] ?? 0);
  const p50 = /\s50%\s+(\S+)/.exec(stdout)?.[1] ?? '?';
  const p99 = /\s99%\s+(\S+)/.exec(stdout)?.[1] ?? '?';
  const errors = Number(/Non-2xx or 3xx responses: (\d+)/.exec(stdout)?.[1] ?? 0);
  return { rps, p50, p99, cpu, mainCpu, errors };
}

export function show(label: string, r: LoadResult, unit = 'req/s', scale = 1): string {
  return `${label}: ${Math.round(r.rps * scale).toLocaleString('en')} ${unit}, p50 ${r.p50}, p99 ${r.p99}, server CPU ${(r.cpu * 100).toFixed(0)}% of a core, non-2xx ${r.errors}`;
}

export function median(xs: number[]): string {
  const s = [...xs].sort((x, y) => x - y);
  return ((s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2).toFixed(2);
}

export const range = (xs: number[]): string => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;

/** The bench's data directory: RANGES synthetic ranges imported once (kept by seed), built anew each run. */
export async function prepareBuild(): Promise<string> {
  const dataDir = path.join(DIR, `data-${RANGES}`);
  if (readCurrentBuildId(dataDir)) {
    out(`build: reusing ${dataDir} (delete it to rebuild)`);
  } else {
    fs.mkdirSync(dataDir, { recursive: true });
    const csv = path.join(DIR, `feed-${RANGES}.csv`);
    let t = performance.now();
    writeFeedCsv(csv, { ranges: RANGES, seed: 7 });
    out(`feed: ${RANGES} synthetic ranges generated in ${Math.round(performance.now() - t)} ms`);
    t = performance.now();
    // Random synthetic ranges fall in 6to4 and NAT64 space too, which real imports refuse.
    importFeed({ dataDir, file: csv, name: 'synthetic', allowLargeBlocks: true });
    out(`feed: imported in ${Math.round(performance.now() - t)} ms`);
  }
  const t = performance.now();
  const { id, manifest } = runBuild({ dataDir });
  // Each run builds anew (the build time is a figure); keep only this run's build on disk.
  for (const old of listBuilds(dataDir)) if (old !== id) fs.rmSync(buildDir(dataDir, old), { recursive: true, force: true });
  const i = manifest.index;
  out(
    `build: ${RANGES} ranges → ${i.v4} IPv4 + ${i.v6} IPv6 intervals, ${i.records} records, ${(i.bytes / 2 ** 20).toFixed(1)} MiB index ` +
      `in ${((performance.now() - t) / 1000).toFixed(2)} s (${Object.entries(manifest.timings_ms)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')} ms)`,
  );
  const exportsMs = manifest.timings_ms.exports ?? 0;
  const indexMs = Object.values(manifest.timings_ms).reduce((a, b) => a + b, 0) - exportsMs;
  const sizes = Object.entries(manifest.exports)
    .map(
      ([db, e]) =>
        `${db} ${Object.entries(e.bytes)
          .map(([f, b]) => `${f} ${(b / 2 ** 20).toFixed(1)} MiB`)
          .join(' ')}`,
    )
    .join('; ');
  out(
    `build: index ${(indexMs / 1000).toFixed(2)} s, then ${(exportsMs / 1000).toFixed(2)} s more until every export was written (large builds export on other threads while the index is written), together ${((indexMs + exportsMs) / 1000).toFixed(2)} s`,
  );
  out(`exports: ${sizes}`);
  return dataDir;
}
