// `npm run real-build`: imports every file under ../shared/data/real (see real-data.ts) into
// a fresh data directory, builds, and prints a report: rows and rejects per source, ranges
// per category, the IPv4/IPv6 split, build time and index size.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runBuild } from '../src/build/build.js';
import { REAL, importRealData } from './real-data.js';

if (!fs.existsSync(REAL)) {
  process.stderr.write(`${REAL} is not present\n`);
  process.exit(1);
}
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipsift-real-'));
const started = performance.now();
const { sources, reports, left } = await importRealData(dataDir);
const importMs = performance.now() - started;
const out = (line: string): void => void process.stdout.write(line + '\n');
out(`real build of ${REAL}`);
out(`sources: ${sources.length} files imported, ${left.length} left out (no addresses, or no importer yet): ${left.join(', ')}`);
let rows = 0;
let rejects = 0;
for (const [k, r] of reports.entries()) {
  rows += r.rows;
  rejects += r.skipped;
  const s = sources[k];
  const rank = `${s.priority ? `, priority ${s.priority}` : ''}${s.not ? `, not ${s.not.join(',')}` : ''}`;
  out(`  ${r.ok ? 'ok  ' : 'FAIL'} ${s.rel}: ${r.rows} rows${rank}${r.skipped ? `, ${r.skipped} rejected` : ''}${r.error && !r.ok ? ` — ${r.error}` : ''}`);
}
out(`imported ${rows} rows, ${rejects} rejected lines, in ${(importMs / 1000).toFixed(1)} s`);
const t = performance.now();
const { manifest } = runBuild({ dataDir });
out(`build: ${((performance.now() - t) / 1000).toFixed(1)} s, index ${(manifest.index.bytes / 2 ** 20).toFixed(1)} MiB, ${manifest.index.v4} IPv4 + ${manifest.index.v6} IPv6 intervals, ${manifest.index.records} records`);
out(`ranges IPv4: ${JSON.stringify(manifest.ranges.v4)}`);
out(`ranges IPv6: ${JSON.stringify(manifest.ranges.v6)}`);
out(`data directory: ${dataDir}`);
