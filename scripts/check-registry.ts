// `npm run check:registry`: every registry URL fetched as a refresh fetches it, judged against
// what its format reads and dated as a refresh dates it. Run by hand or on a schedule where the
// Internet is reachable, never in CI (there is none there). Per source it reports: reachable (or
// why not), whether the layout is the one its format reads, entries, the content's date by the
// publisher's own evidence (a date inside the document, the GitHub path's last commit, a real
// Last-Modified) and the publisher's last sign of activity (the repository's last commit), with
// the freshness they give on the source's max_age: a source that reads as expired is flagged
// FROZEN. Exits 1 when a source is unreachable, in a layout its format does not read, or frozen
// while the registry does not say so (`frozen` in config/sources/public.json).
//
//   npm run check:registry                      # straight to the upstreams
//   npm run check:registry -- --mirror <base>   # through a SOURCES_MIRROR-style mirror
//   HTTPS_PROXY=http://proxy:3128 npm run check:registry   # Node 24+: NODE_USE_ENV_PROXY=1
//   GITHUB_TOKEN=… npm run check:registry       # GitHub's API past 60 requests an hour
//   npm run check:registry -- --json            # one JSON object per source

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { detectFormat, formatByName } from '../src/feeds/formats.js';
import { loadRegistry, mirroredUrl } from '../src/feeds/registry.js';
import { fetchSource, findLink, hopGuard } from '../src/feeds/source-fetch.js';
import type { Source } from '../src/feeds/sources.js';
import { lastModifiedEvidence, type Evidence } from '../src/feeds/content-dates.js';
import { documentDate, linkDate } from '../src/feeds/document-date.js';
import { GithubDates, githubFileOf } from '../src/feeds/github-dates.js';
import { freshnessOf, freshnessReason, type Freshness } from '../src/feeds/freshness.js';
import { redactUrl } from '../src/log.js';

export interface RegistryCheck {
  name: string;
  url: string;
  reachable: boolean;
  /** Why not reachable, or why the layout is not the format's. */
  problem: string | null;
  /** The format the content reads as (null: unreadable). */
  layout: string | null;
  layout_ok: boolean;
  entries: number;
  last_modified: string | null;
  /** When the content last changed by the publisher's evidence, and what says so (null: nothing dates it). */
  content_date: string | null;
  dated_by: Evidence['by'] | null;
  /** The publisher's latest sign of activity: its repository's last commit, or the content's date. */
  active_at: string | null;
  /** Days since each (null: unknown). */
  content_age_d: number | null;
  silent_d: number | null;
  /** What those dates make of the source on its max_age, and why. */
  freshness: Freshness;
  freshness_reason: string | null;
  /** The registry holds it as frozen (and why). */
  marked_frozen: string | null;
}

export interface CheckOptions {
  mirror?: string;
  timeoutMs: number;
  /** Downloads and GitHub's answers (github.json) go here. */
  dir: string;
  nowMs?: number;
  githubToken?: string;
  /** Shared across sources: one repository asked once. */
  github?: GithubDates;
}

const DAY_MS = 86_400_000;
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export async function checkSource(s: Source, o: CheckOptions): Promise<RegistryCheck> {
  const nowMs = o.nowMs ?? Date.now();
  const through = (url: string): string => (o.mirror ? mirroredUrl(url, o.mirror) : url);
  const out: RegistryCheck = {
    name: s.name,
    url: redactUrl(s.url!),
    reachable: false,
    problem: null,
    layout: null,
    layout_ok: false,
    entries: 0,
    last_modified: null,
    content_date: null,
    dated_by: null,
    active_at: null,
    content_age_d: null,
    silent_d: null,
    freshness: 'fresh',
    freshness_reason: null,
    marked_frozen: s.frozen ?? null,
  };
  const target = path.join(o.dir, s.name);
  let lastModified: Evidence | null = null;
  let found: string | null = null;
  try {
    const guard = hopGuard(s.url!, { mirror: o.mirror });
    found = s.find ? await findLink(through(s.url!), s.find, o.timeoutMs, guard) : null;
    const got = await fetchSource({ url: through(found ?? s.url!), target, timeoutMs: o.timeoutMs, maxBytes: s.maxBytes ?? 256 << 20, guard });
    out.reachable = true;
    if (got.kind === 'fetched') {
      out.last_modified = got.lastModified;
      lastModified = lastModifiedEvidence(got.lastModified, got.date);
    }
  } catch (e) {
    out.problem = (e as Error).message;
    return out;
  }
  const text = fs.readFileSync(target, 'utf8');
  const detected = detectFormat(text);
  out.layout = detected instanceof Error ? null : detected.name;
  // A plain list is what no other format claims.
  out.layout_ok = out.layout === (s.format === 'list' ? 'list' : s.format);
  if (!out.layout_ok) out.problem = `the content reads as ${out.layout ?? `nothing known (${(detected as Error).message})`}, not ${s.format}`;
  try {
    out.entries = formatByName(s.format)?.rows({ file: target, text }).length ?? 0;
  } catch (e) {
    out.problem ??= (e as Error).message;
  }
  await dateSource(s, out, target, found, lastModified, o, nowMs);
  return out;
}

/** Dates the content and the publisher's activity as a refresh would, and judges them on the source's max_age. */
async function dateSource(
  s: Source,
  out: RegistryCheck,
  target: string,
  found: string | null,
  lastModified: Evidence | null,
  o: CheckOptions,
  nowMs: number,
): Promise<void> {
  const docMs = documentDate(s.format, target) ?? (found ? linkDate(found) : null);
  let content: Evidence | null = docMs !== null ? { ms: docMs, by: 'document' } : null;
  let activeMs: number | null = null;
  const file = githubFileOf(s.url!);
  if (file) {
    const github =
      o.github ??
      new GithubDates({
        dataDir: o.dir,
        nowMs,
        timeoutMs: o.timeoutMs,
        mirror: o.mirror,
        token: o.githubToken,
        guard: hopGuard('https://api.github.com/', { mirror: o.mirror }),
      });
    const pathMs = await github.pathDate(file, true);
    if (content === null && pathMs !== null) content = { ms: pathMs, by: 'commit' };
    activeMs = await github.repoDate(file);
  }
  content ??= lastModified;
  const contentMs = content?.ms ?? null;
  activeMs = Math.max(activeMs ?? -Infinity, contentMs ?? -Infinity);
  const active = Number.isFinite(activeMs) ? activeMs : null;
  out.content_date = iso(contentMs);
  out.dated_by = content?.by ?? null;
  out.active_at = iso(active);
  out.content_age_d = contentMs === null ? null : Math.floor((nowMs - contentMs) / DAY_MS);
  out.silent_d = active === null ? null : Math.floor((nowMs - active) / DAY_MS);
  // Undated content is judged as new to ipsift today: never fresh for long.
  const dates = {
    changed_at: out.content_date,
    dated_by: out.dated_by,
    active_at: out.active_at,
    first_good_at: iso(nowMs),
    max_age_s: s.maxAgeMs ? s.maxAgeMs / 1000 : null,
    cadence_s: null,
  };
  out.freshness = freshnessOf(dates, nowMs);
  out.freshness_reason = freshnessReason(dates, nowMs);
}

/** Content unchanged this long is named in the report even while its publisher is at work (a person judges it). */
export const AGED_DAYS = 180;

/** ok, STALE, AGED (unchanged past AGED_DAYS, publisher active), FROZEN (expired on its own dates) or FAIL. */
export function verdictOf(c: RegistryCheck): 'ok' | 'STALE' | 'AGED' | 'FROZEN' | 'FAIL' {
  if (!c.reachable || !c.layout_ok) return 'FAIL';
  if (c.freshness === 'expired') return 'FROZEN';
  if (c.freshness === 'stale') return 'STALE';
  return (c.content_age_d ?? 0) > AGED_DAYS ? 'AGED' : 'ok';
}

/** One line of the report: the verdict and the facts. */
export function reportLine(c: RegistryCheck): string {
  const verdict = verdictOf(c).padEnd(6);
  const day = (t: string | null): string => (t ? t.slice(0, 10) : 'unknown');
  const facts = c.reachable
    ? `${c.layout ?? '?'}, ${c.entries} entries, content ${day(c.content_date)}${c.dated_by ? ` by ${c.dated_by}` : ''}` +
      `${c.content_age_d !== null ? ` (${c.content_age_d} d)` : ''}, publisher active ${day(c.active_at)}${c.silent_d !== null ? ` (${c.silent_d} d)` : ''}`
    : 'unreachable';
  const why = [c.problem, c.freshness_reason, c.marked_frozen ? `marked frozen: ${c.marked_frozen}` : null].filter((x) => x);
  return `${verdict} ${c.name}: ${facts}${why.length ? ` — ${why.join('; ')}` : ''}`;
}

/** Whether a check is a fault of the registry: unreachable, misread, or frozen without saying so. */
export const registryFault = (c: RegistryCheck): boolean => !c.reachable || !c.layout_ok || (c.freshness === 'expired' && c.marked_frozen === null);

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  const args = process.argv.slice(2);
  const mirror = args.includes('--mirror') ? args[args.indexOf('--mirror') + 1] : undefined;
  const json = args.includes('--json');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipsift-check-registry-'));
  const nowMs = Date.now();
  const github = new GithubDates({
    dataDir: dir,
    nowMs,
    timeoutMs: 60_000,
    mirror,
    token: process.env.GITHUB_TOKEN,
    guard: hopGuard('https://api.github.com/', { mirror }),
  });
  let bad = 0;
  try {
    for (const s of loadRegistry()) {
      const c = await checkSource(s, { mirror, timeoutMs: 60_000, dir, nowMs, github });
      if (registryFault(c)) bad++;
      console.log(json ? JSON.stringify(c) : reportLine(c));
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  process.exitCode = bad > 0 ? 1 : 0;
}
