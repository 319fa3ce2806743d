// How well SOURCES=public answers, judged by the real data (`npm run registry-quality`; the
// sources test holds it to its thresholds). The registry is fetched from a loopback mirror of
// ../shared/data/real into an empty data directory and built: with every host the mirror holds,
// and with every host but GitHub's unreachable (the cloud owners' and providers' own hosts down
// on a first start). The mirror replays the upstreams as they stood on a day (REPLAY_AT, by
// default 2026-08-23, the day after the data's newest commit) with their real dates: GitHub's
// raw host sends no Last-Modified, GitHub's commits API answers each path's and repository's
// last commit. Two servers are replayed: a new install on that day, and one that has refreshed
// every day since 2026-07-01 (REPLAY_SINCE). Each build is judged by the real data imported on
// its own (real-data.ts), as quality.ts does: the addresses of every live VPN server list
// (changed within 180 days of the day) should answer is_vpn with their provider, those found
// only in frozen lists should not answer it with confidence high, the owners' space outside
// every server list should not answer is_vpn, nor should public resolvers.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runBuild } from '../src/build/build.js';
import { refreshSources } from '../src/feeds/refresh.js';
import { loadRegistry, selectSources } from '../src/feeds/registry.js';
import type { Source } from '../src/feeds/sources.js';
import { loadIndexFile } from '../src/index/loader.js';
import { INDEX_FILE } from '../src/data-dir.js';
import { NOT_IN_CATEGORY, readFeed } from '../src/feeds/feed-store.js';
import { formatBigIPv4, formatBigIPv6 } from '../src/net/network.js';
import type { RangeIndex } from '../src/index/range-index.js';
import { importRealData } from './real-data.js';
import { startRealMirror, upstreamDates } from './real-mirror.js';
import { classify, type Quality, qualityLines, qualityOf } from './quality.js';

const DAY = 86_400_000;
/** A list unchanged this long before the day is frozen, not live. */
export const FROZEN_AFTER_MS = 180 * DAY;
export const REPLAY_AT = Date.parse(process.env.REPLAY_AT ?? '2026-08-23T12:00:00Z');
export const REPLAY_SINCE = Date.parse(process.env.REPLAY_SINCE ?? '2026-07-01T00:00:00Z');

/** How a server is replayed: a new install on `at`, or one refreshing every day from `since`. */
export interface Replay {
  at: number;
  since?: number;
}

export interface RegistryQuality {
  /** Which hosts answered. */
  hosts: 'all' | 'github only';
  replay: Replay;
  /** Judged by the live server lists only. */
  quality: Quality;
  /** Addresses found only in frozen server lists, and how many answer VPN with confidence high (the top band). */
  frozen: { addresses: number; vpn: number; high: number; lists: string[] };
  /** Sources that imported nothing (a host down, or no copy in the mirror). */
  missing: string[];
  /** Sources not fresh on the day, with why. */
  setAside: { name: string; freshness: string }[];
}

/** The real data, imported once into its own directory: what the registry's answers are judged by. */
export async function realTruth(): Promise<{ dataDir: string; sources: Awaited<ReturnType<typeof importRealData>>['sources'] }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipsift-real-truth-'));
  const { sources } = await importRealData(dataDir);
  return { dataDir, sources };
}

/** The truth's server lists, split by their last commit: live, or frozen on the day. */
function splitLists(truth: Awaited<ReturnType<typeof realTruth>>, at: number): { live: typeof truth.sources; frozen: typeof truth.sources } {
  const { paths } = upstreamDates();
  const dateOf = (rel: string): number | undefined => {
    const [, ownerRepo, ...rest] = rel.split(path.sep);
    return paths.get(`${ownerRepo.replace('__', '/')}/${rest.join('/')}`);
  };
  const frozen = truth.sources.filter((s) => s.evidence === 'server_list' && at - (dateOf(s.rel) ?? at) > FROZEN_AFTER_MS);
  return { live: truth.sources.filter((s) => !frozen.includes(s)), frozen };
}

/** IPv4 keys above every IPv6 one, so one set of bigints holds both families. */
const keyOf = (family: number, v: bigint): string => `${family}:${v}`;

/** Addresses of the frozen lists that no live server list holds, and how they answer. */
function frozenAnswers(
  index: RangeIndex,
  dataDir: string,
  live: readonly { name: string; evidence: string }[],
  frozen: readonly { name: string }[],
): RegistryQuality['frozen'] {
  const feed = (name: string) => [...readFeed(path.join(dataDir, 'feeds', `${name}.feed`))].filter((r) => r.detail !== NOT_IN_CATEGORY);
  const inLive = new Set<string>();
  for (const s of live) {
    if (s.evidence !== 'server_list') continue;
    for (const r of feed(s.name))
      if (BigInt(r.end) - BigInt(r.start) < 256n) for (let v = BigInt(r.start); v <= BigInt(r.end); v++) inLive.add(keyOf(r.family, v));
  }
  const out = { addresses: 0, vpn: 0, high: 0, lists: frozen.map((s) => s.name) };
  const seen = new Set<string>();
  for (const s of frozen) {
    for (const r of feed(s.name)) {
      const v = BigInt(r.start);
      const key = keyOf(r.family, v);
      if (inLive.has(key) || seen.has(key)) continue;
      seen.add(key);
      out.addresses++;
      const a = classify(index, r.family === 4 ? formatBigIPv4(v) : formatBigIPv6(v));
      if (a.is_vpn === true) {
        out.vpn++;
        if ((a.vpn as { confidence?: string }).confidence === 'high') out.high++;
      }
    }
  }
  return out;
}

/** SOURCES=public from the mirror, replayed, built and judged by the truth. */
export async function registryQuality(
  truth: Awaited<ReturnType<typeof realTruth>>,
  hosts: RegistryQuality['hosts'],
  registry: readonly Source[] = selectSources('public', loadRegistry()),
  replay: Replay = { at: REPLAY_AT },
): Promise<RegistryQuality> {
  const mirror = await startRealMirror(registry, {
    unreachable: hosts === 'all' ? undefined : (host) => host !== 'raw.githubusercontent.com' && host !== 'api.github.com',
    replayAt: replay.since ?? replay.at,
  });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipsift-registry-quality-'));
  try {
    const days: number[] = [];
    for (let t = replay.since ?? replay.at; t < replay.at; t += DAY) days.push(t);
    days.push(replay.at);
    let reports: Awaited<ReturnType<typeof refreshSources>>['reports'] = [];
    const last = new Map<string, boolean>();
    for (const t of days) {
      mirror.replayAt(t);
      reports = (await refreshSources(dataDir, registry, { mirror: mirror.url, timeoutMs: 10_000, nowMs: t })).reports;
      for (const r of reports) last.set(r.name, r.ok);
    }
    const build = runBuild({ dataDir, exports: false, now: new Date(replay.at) });
    const { index } = await loadIndexFile(path.join(build.dir, INDEX_FILE));
    const { live, frozen } = splitLists(truth, replay.at);
    return {
      hosts,
      replay,
      quality: qualityOf(index, truth.dataDir, live),
      frozen: frozenAnswers(index, truth.dataDir, live, frozen),
      missing: registry.filter((s) => !last.get(s.name)).map((s) => s.name),
      setAside: build.manifest.set_aside.map((a) => ({ name: a.name, freshness: a.freshness })),
    };
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
  const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
  const as =
    r.replay.since === undefined ? `a new install on ${day(r.replay.at)}` : `a server refreshing daily from ${day(r.replay.since)} to ${day(r.replay.at)}`;
  return [
    `SOURCES=public, ${as}, ${r.hosts === 'all' ? 'every host reachable' : "every host but GitHub's unreachable"} (${r.missing.length} sources without a copy: ${r.missing.join(', ') || 'none'})`,
    `  set aside: ${r.setAside.map((a) => `${a.name} (${a.freshness})`).join(', ') || 'none'}`,
    `  live server-list addresses answering VPN with their provider: ${answered} of ${listed} (${((100 * answered) / listed).toFixed(2)} %)`,
    `  addresses only in server lists frozen over 180 days (${r.frozen.lists.length} lists): ${r.frozen.addresses}, answering VPN ${r.frozen.vpn}, with confidence high ${r.frozen.high}`,
    ...qualityLines(r.quality).slice(1),
  ];
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  const truth = await realTruth();
  try {
    for (const replay of [{ at: REPLAY_AT }, { at: REPLAY_AT, since: REPLAY_SINCE }])
      for (const hosts of ['all', 'github only'] as const)
        for (const line of registryQualityLines(await registryQuality(truth, hosts, undefined, replay))) console.log(line);
  } finally {
    fs.rmSync(truth.dataDir, { recursive: true, force: true });
  }
}
