// `npm run bench:build-ab -- <other checkout>`: the build's CPU, this checkout (B) against
// another built one (A), in alternating rounds. Each run is a process of its own that calls
// that checkout's runBuild on a copy of the bench's feeds (RANGES synthetic ranges, seed 7),
// with exports on threads as `ipsift build` writes them and a fixed build time, so the two
// checkouts' files can be compared byte for byte. Prints each run's wall time, CPU of every
// thread (getrusage), stage timings and index checksum, then the medians and whether every
// export of the last two runs is the same. Where `bench:build` times the command a user runs,
// this one is for A/B work on the build itself.

import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { DIR, median, out, prepareBuild, ROOT } from './kit.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const other = process.argv[2];
if (!other || !fs.existsSync(path.join(other, 'dist/src/build/build.js'))) {
  process.stderr.write('usage: npm run bench:build-ab -- <another checkout, built>\n');
  process.exit(2);
}

interface Run {
  wallMs: number;
  cpuMs: number;
  timings: Record<string, number>;
  indexSha: string;
  exportsDir: string;
}

const source = await prepareBuild();
const work = path.join(DIR, 'build-ab');

/** One build by the checkout at `root`, in a process of its own, on a fresh copy of the feeds. */
function build(root: string): Run {
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(work, { recursive: true });
  fs.cpSync(path.join(source, 'feeds'), path.join(work, 'feeds'), { recursive: true });
  const script = `
    import { runBuild } from ${JSON.stringify(path.join(root, 'dist/src/build/build.js'))};
    const t = performance.now();
    const r = runBuild({ dataDir: ${JSON.stringify(work)}, serve: false, threadedExports: true, now: new Date('2026-11-28T06:00:00Z') });
    const wallMs = performance.now() - t;
    const u = process.resourceUsage();
    console.log(JSON.stringify({ wallMs, cpuMs: (u.userCPUTime + u.systemCPUTime) / 1000, timings: r.manifest.timings_ms, indexSha: r.manifest.index.sha256, dir: r.dir }));`;
  // A file, not `-e`: a build's main thread sleeps on its export threads, and an evaluated
  // script's threads did not start while it slept (seen on Node 20).
  const file = path.join(DIR, 'build-ab.mjs');
  fs.writeFileSync(file, script);
  const r = spawnSync(process.execPath, [file], { encoding: 'utf8', env: process.env, maxBuffer: 16 << 20 });
  if (r.status !== 0) throw new Error(`build in ${root} exited ${r.status}: ${r.stderr}`);
  const j = JSON.parse(r.stdout.trim().split('\n').pop()!) as Omit<Run, 'exportsDir'> & { dir: string };
  return { ...j, exportsDir: path.join(j.dir, 'exports') };
}

/** sha256 of every export file (its gzip forms included), by name. */
function sums(dir: string): Map<string, string> {
  return new Map(
    fs
      .readdirSync(dir)
      .filter((f) => f !== 'exports.json')
      .sort()
      .map((f) => [
        f,
        crypto
          .createHash('sha256')
          .update(fs.readFileSync(path.join(dir, f)))
          .digest('hex'),
      ]),
  );
}

const runs: Record<'A' | 'B', Run[]> = { A: [], B: [] };
const last: Partial<Record<'A' | 'B', Map<string, string>>> = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const side of round % 2 === 0 ? (['A', 'B'] as const) : (['B', 'A'] as const)) {
    const r = build(side === 'A' ? other : ROOT);
    runs[side].push(r);
    last[side] = sums(r.exportsDir);
    const stages = Object.entries(r.timings)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    out(`round ${round + 1} ${side}: ${(r.wallMs / 1000).toFixed(2)} s, CPU ${(r.cpuMs / 1000).toFixed(2)} s, index ${r.indexSha.slice(0, 12)} (${stages})`);
  }
}
fs.rmSync(work, { recursive: true, force: true });
const m = (side: 'A' | 'B', f: (r: Run) => number): number => Number(median(runs[side].map(f)));
const wall = (r: Run): number => r.wallMs / 1000;
const cpu = (r: Run): number => r.cpuMs / 1000;
const names = [...new Set([...last.A!.keys(), ...last.B!.keys()])].sort();
const differ = names.filter((f) => last.A!.get(f) !== last.B!.get(f));
out(
  `medians over ${ROUNDS} alternating rounds: A ${m('A', wall).toFixed(2)} s (CPU ${m('A', cpu).toFixed(2)} s), B ${m('B', wall).toFixed(2)} s (CPU ${m('B', cpu).toFixed(2)} s); ` +
    `B/A wall ${(m('B', wall) / m('A', wall)).toFixed(3)}, CPU ${(m('B', cpu) / m('A', cpu)).toFixed(3)}; ${differ.length === 0 ? 'every export file the same' : `files that differ: ${differ.join(' ')}`}`,
);
