// `npm run real-build`: imports every file under ../shared/data/real (see real-data.ts) into
// data/real-build (REAL_DATA_DIR; replaced by each run), builds, and prints a report: rows and
// rejects per source, ranges per category, the IPv4/IPv6 split, build time and index size,
// the quality report (quality.ts), and how to serve it.

import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { runBuild } from '../src/build/build.js';
import { REAL, importRealData } from './real-data.js';
import { qualityLines, qualityOf } from './quality.js';
import { unknownProvidersLine } from '../src/model/providers.js';
import { loadIndexFile } from '../src/index/loader.js';
import { INDEX_FILE } from '../src/data-dir.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
if (!fs.existsSync(REAL)) {
  process.stderr.write(`${REAL} is not present\n`);
  process.exit(1);
}
// One data directory, replaced by each run (no temporary directories pile up): serve it after.
const dataDir = path.resolve(process.env.REAL_DATA_DIR ?? path.join(ROOT, 'data', 'real-build'));
fs.rmSync(dataDir, { recursive: true, force: true });
fs.mkdirSync(dataDir, { recursive: true });
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
  const rank = `, ${s.evidence}${s.priority ? `, priority ${s.priority}` : ''}${s.not ? `, not ${s.not.join(',')}` : ''}`;
  out(`  ${r.ok ? 'ok  ' : 'FAIL'} ${s.rel}: ${r.rows} rows${rank}${r.skipped ? `, ${r.skipped} rejected` : ''}${r.error && !r.ok ? ` — ${r.error}` : ''}`);
}
out(`imported ${rows} rows, ${rejects} rejected lines, in ${(importMs / 1000).toFixed(1)} s`);
const t = performance.now();
const { manifest, dir } = runBuild({ dataDir });
out(
  `build: ${((performance.now() - t) / 1000).toFixed(1)} s, index ${(manifest.index.bytes / 2 ** 20).toFixed(1)} MiB, ${manifest.index.v4} IPv4 + ${manifest.index.v6} IPv6 intervals, ${manifest.index.records} records`,
);
out(`ranges IPv4: ${JSON.stringify(manifest.ranges.v4)}`);
out(`ranges IPv6: ${JSON.stringify(manifest.ranges.v6)}`);
out(`addresses IPv4: ${JSON.stringify(manifest.addresses.v4)}`);
// IPv6 counts in /64s where they are that large (a /64 is one site), else in addresses.
const v6Count = (n: bigint): string => (n >= 1n << 64n ? `${n >> 64n} /64s` : `${n} addresses`);
out(`addresses IPv6: ${JSON.stringify(Object.fromEntries(Object.entries(manifest.addresses.v6).map(([c, n]) => [c, v6Count(BigInt(n!))])))}`);
out(unknownProvidersLine(manifest.unknown_providers) || 'every provider name is in the registry');
const { index } = await loadIndexFile(path.join(dir, INDEX_FILE));
for (const line of qualityLines(qualityOf(index, dataDir, sources))) out(line);
out(`data directory: ${dataDir}`);
out(`serve it: DATA_DIR=${dataDir} npm start`);
