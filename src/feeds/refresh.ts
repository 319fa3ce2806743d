// Fetch and import the configured sources that are due (or all of them): each URL fetched
// conditionally (source-fetch.ts), at most `concurrency` at once; each new body imported as the
// source's feed only when it passes every check, else refused with the reason while the last
// good copy keeps answering. One source's failure never stops the others. A path source is
// imported again when its content changed. Sources no longer configured lose their feeds.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { FeedImportError, importFeed, type ImportResult } from './import.js';
import { findFeed, removeFeed } from './feed-store.js';
import { fetchSource, findLink, hopGuard, RefusedBody, type FetchOutcome } from './source-fetch.js';
import { type Freshness, freshnessOf } from './freshness.js';
import { readDisabledSources } from './source-switches.js';
import { datedLater, datesOfNewContent, type Evidence, lastModifiedEvidence, noteActivity } from './content-dates.js';
import { documentDate, linkDate } from './document-date.js';
import { GithubDates, githubFileOf } from './github-dates.js';
import { redactUrl } from '../log.js';
import { readSourceStates, retryMs, writeSourceStates, type SourceState } from './source-state.js';
import { DEFAULT_INTERVAL_MS, type Source } from './sources.js';
import { mirroredUrl } from './registry.js';
import { makeDirectory } from '../files.js';
import { sourcesDir } from '../data-dir.js';

export interface RefreshOptions {
  nowMs?: number;
  /** Every source, due or not. */
  all?: boolean;
  /**
   * Only these sources are fetched (an operator's refresh of one); the others stay configured:
   * kept, dated and judged fresh or not as in any refresh.
   */
  only?: readonly string[];
  /** Fetch https://HOST/PATH as <mirror>/HOST/PATH. */
  mirror?: string;
  concurrency?: number;
  timeoutMs?: number;
  /** The most any fetch may bring. */
  maxBytes?: number;
  /** A body more than this many times the last good copy's size (and over 1 MiB) is refused. */
  growthLimit?: number;
  /** A copy with fewer than (1 - shrinkLimit) × the last good copy's entries is refused. */
  shrinkLimit?: number;
  /** A copy with more entries is refused (SOURCES_MAX_ENTRIES), before it is parsed where it can be. */
  maxEntries?: number;
  /** Remove the feeds of sources that were fetched before and are no longer configured. */
  prune?: boolean;
  /** Ports no redirect may lead to on a loopback or private address (this server's admin port). */
  guardedPorts?: number[];
  /** A GitHub token for the commits API (GITHUB_TOKEN): 5 000 requests an hour instead of 60. */
  githubToken?: string;
}

export const REFRESH_DEFAULTS = { concurrency: 4, timeoutMs: 60_000, maxBytes: 64 << 20, growthLimit: 5, shrinkLimit: 0.5, maxEntries: 1_000_000 } as const;

/** How a source's attempt went: a new copy imported, nothing new, the last good copy kept, or nothing to serve. */
export type FetchResult = 'fetched' | 'unchanged' | 'stale' | 'refused' | 'failed' | 'read';

export interface SourceReport {
  name: string;
  /** Whether a good copy of the source answers. */
  ok: boolean;
  /** Entries of the copy that answers. */
  rows: number;
  skipped: number;
  /** The first few reasons for skipped lines. */
  skippedExamples: string[];
  fetch?: FetchResult;
  /** Whether this run replaced the source's feed. */
  changed: boolean;
  error?: string;
  byCategory?: ImportResult['byCategory'];
}

export interface RefreshResult {
  reports: SourceReport[];
  /** Whether any feed changed, or any source's freshness did (a new build is worth making). */
  changed: boolean;
  removed: string[];
  /** Sources whose content freshness changed since the last refresh (fresh → stale → expired, or back). */
  freshness: { name: string; from: Freshness; to: Freshness }[];
}

const GROWTH_FLOOR = 1 << 20;
/** Where skip_invalid is set, the most lines a copy may skip. */
const MAX_SKIPPED_SHARE = 0.1;

/** Whether a source is due at nowMs, given its last attempt. */
export function isDue(state: SourceState | undefined, intervalMs: number, nowMs: number): boolean {
  return !state || nowMs >= Date.parse(state.attempted_at) + retryMs(state.attempt, intervalMs);
}

/** A tiny limiter: runs at most n of the tasks at once, in order of start. */
async function limited<T>(n: number, tasks: (() => Promise<T>)[], each: (i: number, r: T) => void): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tasks.length) {
      const i = next++;
      each(i, await tasks[i]());
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, tasks.length) }, worker));
}

type Got = { outcome: FetchOutcome; foundUrl: string | null } | { refused: string } | { failed: string };

export async function refreshSources(dataDir: string, sources: readonly Source[], options: RefreshOptions = {}): Promise<RefreshResult> {
  const o = { ...REFRESH_DEFAULTS, ...options };
  const nowMs = options.nowMs ?? Date.now();
  const now = new Date(nowMs).toISOString();
  const states = readSourceStates(dataDir);
  const dir = sourcesDir(dataDir);
  makeDirectory(dir);
  const reports: SourceReport[] = [];
  let changed = false;

  const removed: string[] = [];
  if (o.prune) {
    const configured = new Set(sources.map((s) => s.name));
    for (const name of Object.keys(states)) {
      if (configured.has(name)) continue;
      if (removeFeed(dataDir, name)) changed = true;
      fs.rmSync(path.join(dir, name), { force: true });
      delete states[name];
      removed.push(name);
    }
  }

  // Due by its interval, or its good copy's feed is gone (removed by hand): imported again.
  // A disabled source is neither fetched nor imported, asked for or not (source-switches.ts).
  const disabled = readDisabledSources(dataDir);
  const due = sources.filter(
    (s) =>
      !(s.name in disabled) &&
      (o.only === undefined || o.only.includes(s.name)) &&
      (o.all || isDue(states[s.name], s.intervalMs ?? DEFAULT_INTERVAL_MS, nowMs) || (!!states[s.name]?.sha256 && !findFeed(dataDir, s.name))),
  );
  const fetched = due.filter((s) => s.url);
  const tasks = fetched.map((s) => async (): Promise<Got> => {
    const last = states[s.name];
    const good = path.join(dir, s.name);
    const haveGood = !!last?.sha256 && fs.existsSync(good) && !!findFeed(dataDir, s.name);
    const cap = Math.min(s.maxBytes ?? o.maxBytes, haveGood ? Math.max(o.growthLimit * last.bytes, GROWTH_FLOOR) : Infinity);
    const through = (url: string): string => (o.mirror ? mirroredUrl(url, o.mirror) : url);
    // Every hop is checked: internal hosts only where the operator named them.
    const guard = hopGuard(s.url!, { mirror: o.mirror, operatorsOwn: !s.registry, guardedPorts: o.guardedPorts });
    // The URL last asked (the page, then the file found on it), named in a failure's reason.
    let asked = through(s.url!);
    try {
      // A source with `find` names a page; the file is the link found on it.
      const foundUrl = s.find ? await findLink(asked, s.find, o.timeoutMs, guard) : null;
      asked = through(foundUrl ?? s.url!);
      const sameFile = foundUrl === null || foundUrl === last?.found_url;
      const outcome = await fetchSource({
        url: asked,
        target: `${good}.download`,
        timeoutMs: o.timeoutMs,
        maxBytes: cap,
        etag: haveGood && sameFile ? last.etag : null,
        lastModified: haveGood && sameFile ? last.last_modified : null,
        // A found link is checked like a redirect: only the hosts the operator named may be internal.
        guard,
      });
      return { outcome, foundUrl };
    } catch (e) {
      fs.rmSync(`${good}.download`, { force: true });
      const why = `${(e as Error).message} (from ${redactUrl(asked)})`;
      return e instanceof RefusedBody ? { refused: why } : { failed: why };
    }
  });
  const got = new Map<string, Got>();
  await limited(o.concurrency, tasks, (i, r) => got.set(fetched[i].name, r));

  const dueNames = new Set(due.map((s) => s.name));
  const newContent = new Set<string>();
  for (const s of sources) {
    if (!dueNames.has(s.name)) continue;
    const last = states[s.name];
    const good = path.join(dir, s.name);
    const base = { url: s.url ? redactUrl(s.url) : (s.path ?? null), attempted_at: now };
    const kept = (fetch: FetchResult, error: string): SourceReport => ({
      name: s.name,
      ok: !!last?.sha256,
      rows: last?.entries ?? 0,
      skipped: 0,
      skippedExamples: [],
      fetch: last?.sha256 ? fetch : 'failed',
      changed: false,
      error: last?.sha256 ? `${error}; the last good copy answers` : error,
    });
    /** Nothing new: the good copy is confirmed as it is. */
    const unchanged = (): SourceReport => {
      states[s.name] = { ...last, ...base, attempt: 'ok', reason: null, good_at: now };
      return { name: s.name, ok: true, rows: last.entries, skipped: 0, skippedExamples: [], fetch: 'unchanged', changed: false };
    };
    let file: string;
    let validators = { etag: null as string | null, last_modified: null as string | null, found_url: null as string | null };
    let sentAt: string | null = null;
    let digest: { sha256: string; bytes: number };
    if (s.url) {
      const r = got.get(s.name)!;
      if ('failed' in r || 'refused' in r) {
        const failed = 'failed' in r;
        const reason = failed ? r.failed : r.refused;
        states[s.name] = { ...emptyState(), ...last, ...base, attempt: failed ? 'failed' : 'refused', reason };
        reports.push(kept(failed ? 'stale' : 'refused', `${failed ? 'fetch failed' : 'refused'}: ${reason}`));
        continue;
      }
      if (r.outcome.kind === 'unchanged' || r.outcome.sha256 === last?.sha256) {
        fs.rmSync(`${good}.download`, { force: true });
        reports.push(unchanged());
        continue;
      }
      file = `${good}.download`;
      validators = { etag: r.outcome.etag, last_modified: r.outcome.lastModified, found_url: r.foundUrl };
      sentAt = r.outcome.date;
      digest = { sha256: r.outcome.sha256, bytes: r.outcome.bytes };
    } else {
      file = s.path!;
      try {
        const body = fs.readFileSync(file);
        digest = { sha256: crypto.createHash('sha256').update(body).digest('hex'), bytes: body.length };
      } catch (e) {
        states[s.name] = { ...emptyState(), ...last, ...base, attempt: 'failed', reason: `cannot read: ${(e as NodeJS.ErrnoException).code ?? e}` };
        reports.push(kept('stale', `cannot read ${file}`));
        continue;
      }
      if (digest.sha256 === last?.sha256 && findFeed(dataDir, s.name) && !o.all) {
        reports.push(unchanged());
        continue;
      }
    }
    const lastEntries = last?.sha256 ? last.entries : 0;
    // Messages name the source's URL, not the download file beside its last good copy.
    const named = (message: string): string => (s.url ? message.split(file).join(s.url) : message);
    try {
      const r = importFeed({
        dataDir,
        file,
        sourcePath: s.url ? good : undefined,
        terms: { licence: s.licence, redistribute: s.redistribute, origin: s.url ? redactUrl(s.url) : undefined },
        name: s.name,
        // A source owns its name: each run replaces what the last one imported.
        replace: true,
        format: s.format,
        category: s.category,
        fallbackCategory: s.fallbackCategory,
        details: s.details,
        skipInvalid: s.skipInvalid,
        priority: s.priority,
        not: s.not,
        evidence: s.evidence,
        allowLargeBlocks: s.allowLargeBlocks,
        maxEntries: { limit: o.maxEntries, setting: 'SOURCES_MAX_ENTRIES' },
        accept: (rows, skipped) => {
          if (lastEntries > 0 && rows < lastEntries * (1 - o.shrinkLimit)) {
            return `${rows} entries, down from ${lastEntries} in the last good copy (more than ${Math.round(o.shrinkLimit * 100)} % fewer)`;
          }
          // A few bad lines are skipped and counted; a file mostly of them is not the list.
          if (skipped > MAX_SKIPPED_SHARE * (rows + skipped) && skipped > 10)
            return `${skipped} of ${rows + skipped} lines are not networks: this is not the list it was`;
          return null;
        },
      });
      // The publisher's own date of the content: inside the document, in the link it was
      // found by, or a real Last-Modified (a GitHub path's commit is asked below).
      const docMs = s.url ? (documentDate(r.format, file) ?? (validators.found_url ? linkDate(validators.found_url) : null)) : null;
      const evidence: Evidence | null = docMs !== null ? { ms: docMs, by: 'document' } : lastModifiedEvidence(validators.last_modified, sentAt);
      if (s.url) fs.renameSync(file, good);
      // The same bytes imported again (`--all`) are no change of content.
      const same = digest.sha256 === last?.sha256;
      const dates = same
        ? { changed_at: last.changed_at, dated_by: last.dated_by ?? null, first_good_at: last.first_good_at ?? last.good_at }
        : datesOfNewContent(last, evidence, nowMs, !s.url);
      const next: SourceState = {
        ...base,
        attempt: 'ok',
        reason: null,
        good_at: now,
        ...dates,
        active_at: last?.active_at ?? null,
        active_by: last?.active_by ?? null,
        activity: last?.activity,
        cadence_s: last?.cadence_s ?? null,
        ...validators,
        ...digest,
        entries: r.rows,
        freshness: last?.freshness,
      };
      if (!same) {
        newContent.add(s.name);
        noteActivity(next, evidence, nowMs);
        if (dates.dated_by === 'observed') noteActivity(next, { ms: nowMs, by: 'observed' }, nowMs);
      }
      states[s.name] = next;
      changed = true;
      reports.push({
        name: s.name,
        ok: true,
        rows: r.rows,
        skipped: r.skipped,
        skippedExamples: r.skippedExamples.map(named),
        fetch: s.url ? 'fetched' : 'read',
        changed: true,
        byCategory: r.byCategory,
      });
    } catch (e) {
      if (!(e instanceof FeedImportError)) throw e;
      if (s.url) fs.rmSync(file, { force: true });
      const reason = named(e.reason);
      states[s.name] = { ...emptyState(), ...last, ...base, attempt: 'refused', reason };
      const report = kept('refused', `refused: ${reason}`);
      // Without a copy, the error says the line as before (file:line: reason).
      reports.push(last?.sha256 ? report : { ...report, error: named(e.message) });
    }
  }
  await datePublishers(dataDir, sources, states, newContent, o, nowMs);
  // Freshness is of content, whether or not the source was due: each configured source's
  // allowed age is recorded, and a change of level (fresh → stale → expired) calls for a build.
  const freshness: RefreshResult['freshness'] = [];
  for (const s of sources) {
    const st = states[s.name];
    if (!st) continue;
    st.max_age_s = s.maxAgeMs ? Math.round(s.maxAgeMs / 1000) : null;
    const to = freshnessOf(st, nowMs);
    const from = st.freshness ?? 'fresh';
    st.freshness = to;
    if (from !== to) {
      freshness.push({ name: s.name, from, to });
      if (st.sha256) changed = true;
    }
    // Disabled or enabled since the last refresh: a build leaves its feed out, or takes it back.
    const off = s.name in disabled;
    if ((st.disabled ?? false) !== off) {
      st.disabled = off;
      if (st.sha256) changed = true;
    }
  }
  writeSourceStates(dataDir, states);
  return { reports, changed, removed, freshness };
}

/**
 * GitHub-hosted sources dated by the commits API, whether or not they were due: a path's last
 * commit dates new bytes and any copy nothing dates yet; its repository's last commit is a
 * sign that the publisher is at work.
 */
async function datePublishers(
  dataDir: string,
  sources: readonly Source[],
  states: Record<string, SourceState>,
  newContent: ReadonlySet<string>,
  o: RefreshOptions & { concurrency: number; timeoutMs: number },
  nowMs: number,
): Promise<void> {
  const hosted = sources.flatMap((s) => {
    const file = s.url ? githubFileOf(s.url) : null;
    const st = states[s.name];
    return file && st?.sha256 ? [{ s, file, st }] : [];
  });
  if (hosted.length === 0) return;
  const github = new GithubDates({
    dataDir,
    nowMs,
    timeoutMs: Math.min(o.timeoutMs, 15_000),
    mirror: o.mirror,
    token: o.githubToken,
    guard: hopGuard('https://api.github.com/', { mirror: o.mirror, guardedPorts: o.guardedPorts }),
  });
  await limited(
    o.concurrency,
    hosted.map(({ s, file, st }) => async () => {
      const fresh = newContent.has(s.name);
      const pathMs = await github.pathDate(file, fresh || st.changed_at === null);
      const path: Evidence | null = pathMs === null ? null : { ms: pathMs, by: 'commit' };
      datedLater(st, path, nowMs);
      noteActivity(st, path, nowMs);
      const repoMs = await github.repoDate(file);
      noteActivity(st, repoMs === null ? null : { ms: repoMs, by: 'repository' }, nowMs);
    }),
    () => {},
  );
  github.save();
}

function emptyState(): SourceState {
  return {
    url: null,
    attempted_at: '',
    attempt: 'ok',
    reason: null,
    good_at: null,
    changed_at: null,
    etag: null,
    last_modified: null,
    sha256: null,
    bytes: 0,
    entries: 0,
  };
}

/** Imports every source now (`ipsift sources import`): the refresh with nothing skipped as not due. */
export async function importSources(dataDir: string, sources: readonly Source[], options: RefreshOptions = {}): Promise<SourceReport[]> {
  return (await refreshSources(dataDir, sources, { ...options, all: true })).reports;
}
