// Freshness of a source, judged by its publisher's own evidence, not by when ipsift fetched it
// or whether the bytes changed. Two questions, each with a limit:
//
// - Is the publisher still publishing? Its latest sign of activity (active_at): a date inside
//   the document, a real Last-Modified, the last commit of the path or of its repository, or a
//   change ipsift saw itself. Silent past the silence limit (the source's max_age, or three of
//   its learned cadences where the publisher is slower than that) the source is stale; past
//   twice the limit, expired.
// - Is this content still the list it claims to be? Its date (changed_at): a live publisher
//   may leave a stable fleet's list unchanged for weeks, but not for ever. Unchanged past the
//   frozen limit (twelve max_ages, at least 90 days) the source is stale; past twice that (at
//   least 180 days), expired.
//
// Content whose date no evidence gives (a first fetch from a host that sends no date) is never
// fresh: it is stale until it is dated or seen to change. A stale source's claims fall one
// evidence band (and a stated confidence one step); an expired one's stop counting. The build
// and `explain` read this from the source states with their own clock. An operator's own file
// (a path source) is dated when ipsift first reads it: the operator's word is its date.

import type { Category } from '../model/categories.js';
import { DETAIL_FIELDS } from '../model/categories.js';
import { BAND_WIDTH, EVIDENCE, type EvidenceKind, effectivePriority } from './evidence.js';

/** What dated a source's content or activity. */
export type DateEvidence = 'document' | 'last-modified' | 'commit' | 'repository' | 'observed';

/** What freshness needs of a source's state (source-state.ts). */
export interface ContentDates {
  /** When the content last changed, by the best evidence; null: no evidence dates it. */
  changed_at: string | null;
  /** What dated it (absent in states written before publisher evidence was read: observed). */
  dated_by?: DateEvidence | null;
  /** The publisher's latest sign of activity (absent: changed_at). */
  active_at?: string | null;
  /** When ipsift first had a good copy (the start of an undated source's silence). */
  first_good_at?: string | null;
  max_age_s?: number | null;
  /** The publisher's learned interval between signs of activity (seconds). */
  cadence_s?: number | null;
}

export type Freshness = 'fresh' | 'stale' | 'expired';

/** Unchanged content stays fresh at least this long, whatever its max_age, and this many max_ages. */
export const FROZEN_FLOOR_MS = 90 * 86_400_000;
export const FROZEN_MAX_AGES = 12;
/** A publisher slower than its max_age may stay silent this many of its cadences. */
export const SILENT_CADENCES = 3;

export interface FreshnessLimits {
  silenceMs: number;
  frozenMs: number;
}

/** The limits a source is judged by. */
export function freshnessLimits(state: Pick<ContentDates, 'max_age_s' | 'cadence_s'>): FreshnessLimits | null {
  if (!state.max_age_s) return null;
  const maxAge = state.max_age_s * 1000;
  return {
    silenceMs: Math.max(maxAge, SILENT_CADENCES * (state.cadence_s ?? 0) * 1000),
    frozenMs: Math.max(FROZEN_FLOOR_MS, FROZEN_MAX_AGES * maxAge),
  };
}

const LEVELS: readonly Freshness[] = ['fresh', 'stale', 'expired'];
const levelOf = (age: number, limit: number): number => (age > 2 * limit ? 2 : age > limit ? 1 : 0);

/** The moments (ms) from which the publisher's silence and the content's age are counted. */
function startsOf(state: ContentDates): { silentSince: number; changed: number | null } | null {
  const changed = state.changed_at ? Date.parse(state.changed_at) : null;
  const since = state.active_at ?? state.changed_at ?? state.first_good_at;
  if (!since) return null;
  return { silentSince: Math.max(Date.parse(since), changed ?? -Infinity), changed };
}

/** A source's freshness at nowMs (fresh where it declares no max_age or has no content yet). */
export function freshnessOf(state: ContentDates | undefined, nowMs: number): Freshness {
  const limits = state && freshnessLimits(state);
  const starts = state && startsOf(state);
  if (!limits || !starts) return 'fresh';
  let level = levelOf(nowMs - starts.silentSince, limits.silenceMs);
  if (starts.changed === null) level = Math.max(level, 1);
  else level = Math.max(level, levelOf(nowMs - starts.changed, limits.frozenMs));
  return LEVELS[level];
}

/** Why a source is not fresh, in a few words (null: it is). */
export function freshnessReason(state: ContentDates | undefined, nowMs: number): string | null {
  const limits = state && freshnessLimits(state);
  const starts = state && startsOf(state);
  if (!limits || !starts || freshnessOf(state, nowMs) === 'fresh') return null;
  const days = (ms: number): string => (ms < 2 * 86_400_000 ? `${Math.round(ms / 3_600_000)} h` : `${Math.round(ms / 86_400_000)} d`);
  const limit = (l: number): string => `stale past ${days(l)}, expired past ${days(2 * l)}`;
  if (nowMs - starts.silentSince > limits.silenceMs) return `the publisher silent for ${days(nowMs - starts.silentSince)} (${limit(limits.silenceMs)})`;
  if (starts.changed === null) return 'no evidence dates the content yet';
  return `the content unchanged for ${days(nowMs - starts.changed)} (${limit(limits.frozenMs)})`;
}

/** When a source's freshness next changes (ms since the epoch), or null: never. */
export function nextFreshnessChange(state: ContentDates | undefined, nowMs: number): number | null {
  const limits = state && freshnessLimits(state);
  const starts = state && startsOf(state);
  if (!limits || !starts) return null;
  const at = [starts.silentSince + limits.silenceMs, starts.silentSince + 2 * limits.silenceMs];
  if (starts.changed !== null) at.push(starts.changed + limits.frozenMs, starts.changed + 2 * limits.frozenMs);
  const next = Math.min(...at.filter((t) => t > nowMs));
  return Number.isFinite(next) ? next : null;
}

/** The calendar day of a time, as details write it. */
const dayOf = (iso: string): string => iso.slice(0, 10);

/** The date a source's claims were last confirmed, as a detail's last_seen: its publisher's latest evidence. */
export function confirmedDay(state: (ContentDates & { good_at?: string | null }) | undefined, fallbackMs: number, nowMs: number): string {
  const at = state?.active_at ?? state?.changed_at ?? state?.good_at;
  const ms = at ? Math.min(Date.parse(at), nowMs) : Math.min(fallbackMs, nowMs);
  return dayOf(new Date(ms).toISOString());
}

/** How a feed's claims stand in a build at nowMs: their order, whether they count, and their detail. */
export interface FeedStanding {
  freshness: Freshness;
  /** Its order inside a category (evidence band, then priority), one band lower when stale. */
  order: number;
  /**
   * A claim's detail as answered: completed where the row is silent (the evidence kind's
   * confidence, the source's last confirmation as last_seen), and a stale feed's confidence
   * one step down ("high" → "medium").
   */
  detail: (detail: string, category: Category) => string;
}

const LOWER: Record<string, string> = { high: 'medium', medium: 'low', low: 'low' };

/**
 * A detail completed: a true flag never answers `{}`. Fields keep the category's canonical
 * order (model/categories.ts), so equal details stay one text.
 */
function completed(detail: string, category: Category, fill: Record<string, string>, lower: boolean): string {
  const d = JSON.parse(detail) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const field of DETAIL_FIELDS[category]) {
    const v = d[field] ?? fill[field];
    if (v === undefined) continue;
    out[field] = field === 'confidence' && lower ? LOWER[v as string] : v;
  }
  return JSON.stringify(out);
}

export function feedStanding(
  feed: { name: string; evidence: EvidenceKind; priority: number; importedMs?: number },
  states: Readonly<Record<string, ContentDates & { good_at?: string | null }>>,
  nowMs: number,
): FeedStanding {
  const state = states[feed.name];
  const freshness = freshnessOf(state, nowMs);
  const order = effectivePriority(feed.evidence, feed.priority);
  const fill = { confidence: EVIDENCE[feed.evidence].confidence, last_seen: confirmedDay(state, feed.importedMs ?? nowMs, nowMs) };
  const stale = freshness !== 'fresh';
  // Each distinct detail text of a feed is completed once (a feed repeats a few details over
  // many rows), in a table per category: no key is made per row.
  const memo = new Map<Category, Map<string, string>>();
  return {
    freshness,
    order: stale ? order - BAND_WIDTH : order,
    detail: (detail, category) => {
      let texts = memo.get(category);
      if (texts === undefined) memo.set(category, (texts = new Map()));
      let text = texts.get(detail);
      if (text === undefined) {
        text = completed(detail, category, fill, stale);
        texts.set(detail, text);
      }
      return text;
    },
  };
}
