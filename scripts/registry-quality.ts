// How well SOURCES=public answers, judged by the real data (`npm run registry-quality`; the
// sources test holds it to its thresholds). The registry is fetched from a loopback mirror of
// ../shared/data/real into an empty data directory and built, twice: with every host the mirror
// holds, and with every host but GitHub's unreachable (the cloud owners' and providers' own
// hosts down on a first start). Each build is judged by the real data imported on its own
// (real-data.ts), as quality.ts does for a build of it: every VPN provider server list's
// addresses should answer is_vpn with that provider, the owners' space outside every server
// list should not answer is_vpn, nor should public resolvers.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runBuild } from '../src/build/build.js';
import { refreshSources } from '../src/feeds/refresh.js';
import { loadRegistry } from '../src/feeds/registry.js';
import type { Source } from '../src/feeds/sources.js';
import { loadIndexFile } from '../src/index/loader.js';
import { INDEX_FILE } from '../src/data-dir.js';
import { importRealData } from './real-data.js';
import { startRealMirror } from './real-mirror.js';
import { type Quality, qualityLines, qualityOf } from './quality.js';

export interface RegistryQuality {
  /** Which hosts answered. */
  hosts: 'all' | 'github only';
  quality: Quality;
  /** Sources that imported nothing (a host down, or no copy in the mirror). */
  missing: string[];
}

/** The real data, imported once into its own directory: what the registry's answers are judged by. */
export async function realTruth(): Promise<{ dataDir: string; sources: Awaited<ReturnType<typeof importRealData>>['sources'] }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipsift-real-truth-'));
  const { sources } = await importRealData(dataDir);
  return { dataDir, sources };
}

/** SOURCES=public from the mirror, built and judged by the truth. */
export async function registryQuality(
  truth: Awaited<ReturnType<typeof realTruth>>,
  hosts: RegistryQuality['hosts'],
  registry: readonly Source[] = loadRegistry(),
): Promise<RegistryQuality> {
  const mirror = await startRealMirror(registry, { unreachable: hosts === 'all' ? undefined : (host) => host !== 'raw.githubusercontent.com' });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipsift-registry-quality-'));
  try {
    const { reports } = await refreshSources(dataDir, registry, { mirror: mirror.url, timeoutMs: 10_000 });
    const build = runBuild({ dataDir, exports: false });
    const { index } = await loadIndexFile(path.join(build.dir, INDEX_FILE));
    return { hosts, quality: qualityOf(index, truth.dataDir, truth.sources), missing: reports.filter((r) => !r.ok).map((r) => r.name) };
  } finally {
    await mirror.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The share of server-list addresses answering their provider, over every list. */
export function providerShare(q: Quality): { answered: number; listed: number } {
  return q.providers.reduce((t, p) => ({ answered: t.answered + p.answered, listed: t.listed + p.listed }), { answered: 0, listed: 0 });
}

export function registryQualityLines(r: RegistryQuality): string[] {
  const { answered, listed } = providerShare(r.quality);
  return [
    `SOURCES=public, ${r.hosts === 'all' ? 'every host reachable' : "every host but GitHub's unreachable"} (${r.missing.length} sources without a copy: ${r.missing.join(', ') || 'none'})`,
    `  server-list addresses answering VPN with their provider: ${answered} of ${listed} (${((100 * answered) / listed).toFixed(1)} %)`,
    ...qualityLines(r.quality).slice(1),
  ];
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  const truth = await realTruth();
  try {
    for (const hosts of ['all', 'github only'] as const) for (const line of registryQualityLines(await registryQuality(truth, hosts))) console.log(line);
  } finally {
    fs.rmSync(truth.dataDir, { recursive: true, force: true });
  }
}
