// `npm run bench:build`: `ipsift build` as a user runs it, against the build alone. On the
// bench's data directory (RANGES synthetic ranges, seed 7: the same as `npm run bench`), it
// runs `ipsift build --no-publish --json` (index, every export, made serving) and
// `ipsift build --json` (the same, then published to the local object store), alternating,
// ROUNDS rounds each, and prints each run's stage timings and the medians: the end-to-end
// figure and its ratio to the build alone. Each run's build and published objects are
// removed after it, so the disk holds one build at a time.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { storeObjectsDir } from '../src/data-dir.js';
import { listBuilds, readCurrentBuildId } from '../src/index/builds.js';
import { buildDir } from '../src/data-dir.js';
import { median, out, prepareBuild, RANGES, ROOT } from './kit.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

interface Run {
  wallMs: number;
  build_ms: number;
  publish_ms: number;
  timings_ms: Record<string, number>;
}

function ipsiftBuild(dataDir: string, publish: boolean): Run {
  const t = performance.now();
  const r = spawnSync(process.execPath, [path.join(ROOT, 'dist/src/cli.js'), 'build', '--json', ...(publish ? [] : ['--no-publish'])], {
    env: { ...process.env, DATA_DIR: dataDir, DEMO: 'false' },
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const wallMs = performance.now() - t;
  if (r.status !== 0) throw new Error(`ipsift build exited ${r.status}: ${r.stderr}`);
  const j = JSON.parse(r.stdout) as Omit<Run, 'wallMs'>;
  return { wallMs, build_ms: j.build_ms, publish_ms: j.publish_ms, timings_ms: j.timings_ms };
}

/** Keeps the serving build only, and an empty store: the next run starts where this one did. */
function tidy(dataDir: string): void {
  const current = readCurrentBuildId(dataDir);
  for (const b of listBuilds(dataDir)) if (b !== current) fs.rmSync(buildDir(dataDir, b), { recursive: true, force: true });
  fs.rmSync(storeObjectsDir(dataDir), { recursive: true, force: true });
}

const dataDir = await prepareBuild();
tidy(dataDir);
const alone: Run[] = [];
const whole: Run[] = [];
for (let round = 0; round < ROUNDS; round++) {
  // Alternate which goes first, so a drift of the machine falls on both.
  for (const publish of round % 2 === 0 ? [false, true] : [true, false]) {
    const r = ipsiftBuild(dataDir, publish);
    (publish ? whole : alone).push(r);
    const stages = Object.entries(r.timings_ms)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    out(
      `round ${round + 1}, ipsift build${publish ? '' : ' --no-publish'}: ${(r.wallMs / 1000).toFixed(2)} s (build ${(r.build_ms / 1000).toFixed(2)} s${publish ? `, publish ${(r.publish_ms / 1000).toFixed(2)} s` : ''}; stages ms: ${stages})`,
    );
    tidy(dataDir);
  }
}
const m = (runs: Run[]): number => Number(median(runs.map((r) => r.wallMs / 1000)));
out(
  `ipsift build of ${RANGES.toLocaleString('en')} ranges with every export, ${ROUNDS} alternating rounds, medians: build alone (--no-publish) ${m(alone).toFixed(2)} s, ` +
    `end to end (published to the local store) ${m(whole).toFixed(2)} s, ratio ${(m(whole) / m(alone)).toFixed(3)}; publish alone ${median(whole.map((r) => r.publish_ms / 1000))} s`,
);
