// What ipsift knows about each fetched source between runs (DATA_DIR/sources/state.json): the
// validators for conditional requests, the last good copy's checksum, size and entries, when it
// was fetched and changed, and how the last attempt went. Written whole and renamed.

import { makeDirectory, readJsonFile, writeFileWhole } from '../files.js';
import { sourceStateFile, sourcesDir } from '../data-dir.js';
import { type DateEvidence, type Freshness, freshnessOf, freshnessReason } from './freshness.js';
import { redactUrl } from '../log.js';
import type { Disabled, DisabledSources } from './source-switches.js';

/** How the last attempt went: ok (fetched, or unchanged), refused (bad data), failed (no answer). */
export type Attempt = 'ok' | 'refused' | 'failed';

export interface SourceState {
  url: string | null;
  /** The last attempt, and what came of it. */
  attempted_at: string;
  attempt: Attempt;
  reason: string | null;
  /** The last good copy: when it was last confirmed (fetched or 304). */
  good_at: string | null;
  /** When its content last changed, by the best evidence (freshness.ts); null: nothing dates it yet. */
  changed_at: string | null;
  /** What dated it: the document, a Last-Modified, the path's last commit, or a change ipsift saw. */
  dated_by?: DateEvidence | null;
  /** The publisher's latest sign of activity, and what showed it. */
  active_at?: string | null;
  active_by?: DateEvidence | null;
  /** The last few signs of activity, and the cadence learnt from them (seconds). */
  activity?: string[];
  cadence_s?: number | null;
  /** When ipsift first had a good copy. */
  first_good_at?: string | null;
  etag: string | null;
  last_modified: string | null;
  sha256: string | null;
  bytes: number;
  entries: number;
  /** How long the content may go unchanged (the source's max_age), as of the last refresh; null: no limit. */
  max_age_s?: number | null;
  /** Where a page named the file (a source with `find`): the URL fetched last. */
  found_url?: string | null;
  /** The content's freshness as of the last refresh (a change of it calls for a build). */
  freshness?: Freshness;
  /** Whether it was disabled as of the last refresh (a switch calls for a build). */
  disabled?: boolean;
}

export type SourceStates = Record<string, SourceState>;

export function readSourceStates(dataDir: string): SourceStates {
  return readJsonFile<SourceStates>(sourceStateFile(dataDir), {});
}

export function writeSourceStates(dataDir: string, states: SourceStates): void {
  makeDirectory(sourcesDir(dataDir));
  writeFileWhole(sourceStateFile(dataDir), JSON.stringify(states, null, 1));
}

/**
 * What an operator sees per source: ok; stale (its content unchanged past its max_age, or no
 * good copy confirmed within two intervals); expired (content unchanged past twice max_age:
 * its claims no longer count); refused; failed; never fetched; disabled by an operator (neither
 * fetched nor built from, whatever its last state).
 */
export type SourceHealth = 'ok' | 'stale' | 'expired' | 'refused' | 'failed' | 'never' | 'disabled';

export interface SourceStatus {
  name: string;
  url: string | null;
  state: SourceHealth;
  reason: string | null;
  /** Whether a good copy answers (the last one, when the latest attempt was refused or failed). */
  serving: boolean;
  entries: number;
  bytes: number;
  fetched_at: string | null;
  changed_at: string | null;
  good_at: string | null;
  /** Seconds since the good copy was last confirmed (null: none). */
  age_s: number | null;
  /** Seconds since the content last changed (null: none yet), and how long it may (null: no limit). */
  content_age_s: number | null;
  max_age_s: number | null;
  /** The content's freshness: fresh, stale (claims a band lower), expired (claims not counted); null while no good copy exists. */
  freshness: Freshness | null;
  /** Why it is not fresh (null: it is). */
  freshness_reason: string | null;
  /** What dated the content (null: nothing yet), and the publisher's latest sign of activity. */
  dated_by: DateEvidence | null;
  active_at: string | null;
  active_by: DateEvidence | null;
  /** The publisher's learnt cadence (seconds; null: too few signs yet). */
  cadence_s: number | null;
  interval_s: number;
  /** When it is next fetched (null: never tried yet, or disabled). */
  next_at: string | null;
  /** Who disabled it and when (null: enabled). */
  disabled: Disabled | null;
}

/** The status of each configured source, from its state. */
export function sourceStatuses(
  sources: readonly { name: string; url?: string; path?: string; intervalMs?: number; maxAgeMs?: number }[],
  states: SourceStates,
  nowMs: number,
  defaultIntervalMs: number,
  disabled: DisabledSources = {},
): SourceStatus[] {
  return sources.map((s) => {
    const st = states[s.name];
    const interval = s.intervalMs ?? defaultIntervalMs;
    const goodMs = st?.good_at ? Date.parse(st.good_at) : null;
    const maxAgeS = s.maxAgeMs ? Math.round(s.maxAgeMs / 1000) : null;
    const dates = st && { ...st, max_age_s: maxAgeS };
    const freshness = freshnessOf(dates, nowMs);
    let state: SourceHealth = 'never';
    if (st) {
      if (st.attempt !== 'ok') state = st.attempt;
      else if (freshness !== 'fresh') state = freshness;
      else state = goodMs !== null && nowMs - goodMs > 2 * interval ? 'stale' : 'ok';
    }
    const off = disabled[s.name] ?? null;
    if (off) state = 'disabled';
    const changedMs = st?.changed_at ? Date.parse(st.changed_at) : null;
    return {
      name: s.name,
      url: s.url ? redactUrl(s.url) : (s.path ?? null),
      state,
      reason: st?.reason ?? null,
      serving: !!st?.sha256,
      entries: st?.entries ?? 0,
      bytes: st?.bytes ?? 0,
      fetched_at: st?.attempted_at ?? null,
      changed_at: st?.changed_at ?? null,
      good_at: st?.good_at ?? null,
      age_s: goodMs === null ? null : Math.max(0, Math.round((nowMs - goodMs) / 1000)),
      content_age_s: changedMs === null ? null : Math.max(0, Math.round((nowMs - changedMs) / 1000)),
      max_age_s: maxAgeS,
      // No good copy yet: there is nothing to be fresh.
      freshness: st?.sha256 ? freshness : null,
      freshness_reason: st?.sha256 ? freshnessReason(dates, nowMs) : null,
      dated_by: st?.sha256 ? (st.dated_by ?? (st.changed_at ? 'observed' : null)) : null,
      active_at: st?.active_at ?? st?.changed_at ?? null,
      active_by: st?.active_by ?? null,
      cadence_s: st?.cadence_s ?? null,
      interval_s: Math.round(interval / 1000),
      next_at: st && !off ? new Date(Date.parse(st.attempted_at) + retryMs(st.attempt, interval)).toISOString() : null,
      disabled: off,
    };
  });
}

/** A failed or refused source is tried again sooner than its interval: within 15 minutes. */
export function retryMs(attempt: Attempt, intervalMs: number): number {
  return attempt === 'ok' ? intervalMs : Math.min(intervalMs, 15 * 60_000);
}
