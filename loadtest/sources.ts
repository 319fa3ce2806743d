// The public registry end to end, from a loopback mirror of the real data: `ipsift sources
// import` (fetch + import of every source) and `ipsift build` on an empty data directory, each
// timed, with the peak RSS of its process; then a refresh with nothing changed (conditional
// requests only). Part of `npm run bench`; alone: BENCH_ONLY=sources.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadRegistry } from '../src/feeds/registry.js';
import { startRealMirror } from '../scripts/real-mirror.js';
import { ROOT, out } from './kit.js';

interface Run {
  ms: number;
  peakMiB: number;
  stdout: string;
}

/** Runs the CLI with env, timed, its peak RSS read from /proc while it runs. */
function cli(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const child = spawn(process.execPath, [path.join(ROOT, 'dist/src/cli.js'), ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let peak = 0;
    const poll = setInterval(() => {
      try {
        const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        if (m) peak = Math.max(peak, Number(m[1]) / 1024);
      } catch {
        // gone
      }
    }, 20);
    child.stdout.on('data', (c: Buffer) => (stdout += c));
    child.stderr.on('data', (c: Buffer) => (stderr += c));
    child.on('exit', (code) => {
      clearInterval(poll);
      if (code !== 0) reject(new Error(`ipsift ${args.join(' ')} exited ${code}: ${stderr.trim()}`));
      else resolve({ ms: performance.now() - t, peakMiB: peak, stdout });
    });
  });
}

export async function benchSources(): Promise<void> {
  const registry = loadRegistry();
  const mirror = await startRealMirror(registry);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipsift-bench-sources-'));
  const env = { DATA_DIR: dataDir, SOURCES: 'public', SOURCES_MIRROR: mirror.url, DEMO: 'false' };
  try {
    const imported = await cli(['sources', 'import', '--json'], env);
    const reports = JSON.parse(imported.stdout) as { name: string; ok: boolean; rows: number }[];
    const rows = reports.reduce((n, r) => n + r.rows, 0);
    const bytes = fs.readdirSync(path.join(dataDir, 'sources')).reduce((n, f) => n + fs.statSync(path.join(dataDir, 'sources', f)).size, 0);
    const built = await cli(['build', '--no-publish', '--json'], env);
    const manifest = JSON.parse(built.stdout) as { index: { v4: number; v6: number; bytes: number } };
    const asked = mirror.requests.length;
    const again = await cli(['sources', 'refresh', '--all', '--json'], env);
    const second = mirror.requests.slice(asked);
    out(
      `sources: ${registry.length} in the registry, ${reports.filter((r) => r.ok).length} imported (${rows} entries, ${(bytes / 2 ** 20).toFixed(1)} MiB fetched) from a loopback mirror; ` +
        `fetch + import ${(imported.ms / 1000).toFixed(1)} s, peak RSS ${imported.peakMiB.toFixed(0)} MiB; ` +
        `build ${(built.ms / 1000).toFixed(1)} s (${manifest.index.v4} IPv4 + ${manifest.index.v6} IPv6 intervals, ${(manifest.index.bytes / 2 ** 20).toFixed(1)} MiB), peak RSS ${built.peakMiB.toFixed(0)} MiB; ` +
        `refresh with nothing changed ${(again.ms / 1000).toFixed(1)} s: ${second.filter((r) => r.status === 304).length} of ${second.length} requests answered 304, no build`,
    );
  } finally {
    await mirror.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
