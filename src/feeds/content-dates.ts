// How a refresh dates a source from what it learnt (freshness.ts judges the dates): the
// content's date from the publisher's evidence, its activity, and the cadence learnt from it.
// Pure functions over the source's state, so the rules are tested on their own.

import type { DateEvidence } from './freshness.js';
import type { SourceState } from './source-state.js';

/** A publisher's date further ahead of our clock than this is not believed. */
const SKEW_MS = 5 * 60_000;
/** Signs of activity kept for the cadence. */
const ACTIVITY_KEPT = 9;

export interface Evidence {
  ms: number;
  by: DateEvidence;
}

const iso = (ms: number): string => new Date(ms).toISOString();
const believable = (e: Evidence | null, nowMs: number): e is Evidence =>
  e !== null && Number.isFinite(e.ms) && e.ms <= nowMs + SKEW_MS && e.ms > Date.UTC(2000, 0, 1);

/**
 * The dates of content new to ipsift (a first copy, or bytes that differ from the last good
 * copy's). Its date is the publisher's own where one is believable (not ahead of the clock,
 * not before the content it replaces); else, for a change ipsift saw or an operator's own
 * file, the moment it was seen; else none: a first copy nothing dates.
 */
export function datesOfNewContent(
  last: SourceState | undefined,
  evidence: Evidence | null,
  nowMs: number,
  operatorsFile: boolean,
): Pick<SourceState, 'changed_at' | 'dated_by' | 'first_good_at'> {
  const hadCopy = !!last?.sha256;
  const previous = hadCopy && last.changed_at ? Date.parse(last.changed_at) : -Infinity;
  const first_good_at = last?.first_good_at ?? iso(nowMs);
  if (believable(evidence, nowMs) && evidence.ms > previous) return { changed_at: iso(Math.min(evidence.ms, nowMs)), dated_by: evidence.by, first_good_at };
  if (hadCopy || operatorsFile) return { changed_at: iso(nowMs), dated_by: 'observed', first_good_at };
  return { changed_at: null, dated_by: null, first_good_at };
}

/**
 * The content dated later than it was fetched (a path's last commit, asked after the fetch):
 * taken where nothing better dates it, or it replaces a date ipsift only observed.
 */
export function datedLater(state: SourceState, evidence: Evidence | null, nowMs: number): void {
  if (!believable(evidence, nowMs)) return;
  const by = state.dated_by ?? 'observed';
  if (state.changed_at !== null && by === 'document') return;
  // A commit before the change ipsift saw dates it; one after does not belong to these bytes.
  if (state.changed_at !== null && by === 'observed' && evidence.ms > Date.parse(state.changed_at) + SKEW_MS) return;
  state.changed_at = iso(Math.min(evidence.ms, nowMs));
  state.dated_by = evidence.by;
}

/** A sign that the publisher is at work (its content dated, its repository committed to, a change seen). */
export function noteActivity(state: SourceState, evidence: Evidence | null, nowMs: number): void {
  if (!believable(evidence, nowMs)) return;
  const ms = Math.min(evidence.ms, nowMs);
  const current = state.active_at ? Date.parse(state.active_at) : -Infinity;
  if (ms <= current) return;
  state.active_at = iso(ms);
  state.active_by = evidence.by;
  const seen = [...(state.activity ?? []), iso(ms)].slice(-ACTIVITY_KEPT);
  state.activity = seen;
  state.cadence_s = cadenceOf(seen);
}

/** The median gap between signs of activity (seconds), or null with fewer than three. */
export function cadenceOf(times: readonly string[]): number | null {
  if (times.length < 3) return null;
  const gaps: number[] = [];
  for (let i = 1; i < times.length; i++) gaps.push((Date.parse(times[i]) - Date.parse(times[i - 1])) / 1000);
  gaps.sort((a, b) => a - b);
  return Math.round(gaps[gaps.length >> 1]);
}

/**
 * The upstream's Last-Modified as evidence of the content's date, where it is a real one: a
 * host that stamps every answer with the time it sent it (Last-Modified equal to Date) says
 * nothing of the content.
 */
export function lastModifiedEvidence(lastModified: string | null, date: string | null): Evidence | null {
  const lm = lastModified ? Date.parse(lastModified) : NaN;
  if (!Number.isFinite(lm)) return null;
  const sent = date ? Date.parse(date) : NaN;
  return Number.isFinite(sent) && lm >= sent - 1000 ? null : { ms: lm, by: 'last-modified' };
}
