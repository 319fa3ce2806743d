// `npm run real-build`: imports every file under ../shared/data/real (bogon lists aside: the
// bogon tests check the bogon table against them) into a fresh data directory, builds, and
// prints a report: rows and rejects per source, ranges per category, the IPv4/IPv6 split,
// build time and index size. Categories follow the folders; formats are detected.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runBuild } from '../src/build/build.js';
import { importSources, type Source } from '../src/feeds/sources.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const REAL = path.resolve(ROOT, '../shared/data/real');
const CATEGORY: Record<string, string> = { tor: 'tor', vpn: 'vpn', datacenter: 'hosting', cloud: 'hosting', cdn: 'cdn', relay: 'relay', proxy: 'dcproxy' };
/** Files that carry no addresses, or a layout no importer reads yet. */
const NOT_ADDRESSES = [/\/ASN\.txt$/, /_asns\.json$/, /Readme\.md$/i, /README/];

function walk(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

/** A provider name from the file name where it is one (mullvad.txt → Mullvad). */
function providerOf(file: string): string | undefined {
  const base = path.basename(file).replace(/\.(txt|lst|json|csv)$/, '');
  const known: Record<string, string> = {
    airvpn: 'AirVPN', ivpn: 'IVPN', mullvad: 'Mullvad', mullvadvpn: 'Mullvad', nordvpn: 'NordVPN', nordvpn_api: 'NordVPN', ovpn: 'OVPN', pia: 'Private Internet Access',
    protonvpn: 'ProtonVPN', protonvpn_ips: 'ProtonVPN', protonvpn_entry_ips: 'ProtonVPN', protonvpn_entry_ip_ranges: 'ProtonVPN', riseupvpn: 'RiseupVPN',
    surfshark: 'Surfshark', windscribe: 'Windscribe', expressvpn: 'ExpressVPN', apple: 'Apple iCloud Private Relay',
  };
  return known[base];
}

if (!fs.existsSync(REAL)) {
  process.stderr.write(`${REAL} is not present\n`);
  process.exit(1);
}
const files = walk(REAL).filter((f) => !f.startsWith(path.join(REAL, 'bogon')) && !f.endsWith('README.md'));
const skippedFiles = files.filter((f) => NOT_ADDRESSES.some((re) => re.test(f)));
const sources: Source[] = files
  .filter((f) => !skippedFiles.includes(f))
  .map((f, i) => {
    const rel = path.relative(REAL, f);
    const top = rel.split(path.sep)[0];
    const provider = providerOf(f);
    return {
      name: `s${String(i).padStart(3, '0')}`,
      path: f,
      format: 'auto',
      category: top === 'relay' ? 'relay' : undefined,
      details: provider ? { provider } : {},
      skipInvalid: true,
      rel,
      top,
    } as Source & { rel: string; top: string };
  });
// A format's own category wins (AWS CloudFront → cdn); plain lists take the folder's.
for (const s of sources as (Source & { top: string })[]) s.category ??= undefined;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipsift-real-'));
const started = performance.now();
let reports = await importSources(dataDir, sources);
// Sources whose format gives no category (plain lists): again with the folder's category.
const retry = sources.filter((s, k) => !reports[k].ok && /category/.test(reports[k].error ?? ''));
if (retry.length) {
  const again = await importSources(dataDir, retry.map((s) => ({ ...s, category: CATEGORY[(s as Source & { top: string }).top] })));
  reports = reports.map((r) => again.find((a) => a.name === r.name) ?? r);
}
const importMs = performance.now() - started;
const out = (line: string): void => void process.stdout.write(line + '\n');
out(`real build of ${REAL}`);
out(`sources: ${sources.length} files imported, ${skippedFiles.length} left out (no addresses, or no importer yet): ${skippedFiles.map((f) => path.relative(REAL, f)).join(', ')}`);
let rows = 0;
let rejects = 0;
for (const [k, r] of reports.entries()) {
  const rel = (sources[k] as Source & { rel: string }).rel;
  rows += r.rows;
  rejects += r.skipped;
  out(`  ${r.ok ? 'ok  ' : 'FAIL'} ${rel}: ${r.rows} rows${r.skipped ? `, ${r.skipped} rejected` : ''}${r.error && !r.ok ? ` — ${r.error}` : ''}`);
}
out(`imported ${rows} rows, ${rejects} rejected lines, in ${(importMs / 1000).toFixed(1)} s`);
const t = performance.now();
const { manifest } = runBuild({ dataDir });
out(`build: ${((performance.now() - t) / 1000).toFixed(1)} s, index ${(manifest.index.bytes / 2 ** 20).toFixed(1)} MiB, ${manifest.index.v4} IPv4 + ${manifest.index.v6} IPv6 intervals, ${manifest.index.records} records`);
out(`ranges IPv4: ${JSON.stringify(manifest.ranges.v4)}`);
out(`ranges IPv6: ${JSON.stringify(manifest.ranges.v6)}`);
out(`data directory: ${dataDir}`);
