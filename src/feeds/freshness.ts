// Freshness of a source's content, not of its fetch: an upstream can answer 200 for a year with
// content frozen since. Each source declares how long its content may go unchanged (max_age:
// Tor lists hours, VPN server lists days, cloud ranges weeks); the refresh records when the
// content last changed (changed_at: a new SHA-256, never a new Last-Modified over the same
// bytes). Past max_age the source is stale: its claims fall one evidence band (and a stated
// confidence one step). Past twice max_age it is expired: its claims stop counting. The build
// and `explain` read this from the source states with their own clock.

import { BAND_WIDTH, type EvidenceKind, effectivePriority } from './evidence.js';

/** What freshness needs of a source's state (source-state.ts). */
export interface ContentDates {
  changed_at: string | null;
  max_age_s?: number | null;
}

export type Freshness = 'fresh' | 'stale' | 'expired';

/** A source's freshness at nowMs (fresh where it declares no max_age or has no content yet). */
export function freshnessOf(state: ContentDates | undefined, nowMs: number): Freshness {
  if (!state?.changed_at || !state.max_age_s) return 'fresh';
  const age = nowMs - Date.parse(state.changed_at);
  const max = state.max_age_s * 1000;
  return age > 2 * max ? 'expired' : age > max ? 'stale' : 'fresh';
}

/** When a source's freshness next changes (ms since the epoch), or null: never. */
export function nextFreshnessChange(state: ContentDates | undefined, nowMs: number): number | null {
  if (!state?.changed_at || !state.max_age_s) return null;
  const changed = Date.parse(state.changed_at);
  for (const at of [changed + state.max_age_s * 1000, changed + 2 * state.max_age_s * 1000]) if (at > nowMs) return at;
  return null;
}

/** How a feed's claims stand in a build at nowMs: their order, whether they count, and why not. */
export interface FeedStanding {
  freshness: Freshness;
  /** Its order inside a category (evidence band, then priority), one band lower when stale. */
  order: number;
  /** A stale feed's stated confidence, one step down ("high" → "medium"); identity otherwise. */
  detail: (detail: string) => string;
}

const LOWER: Record<string, string> = { '"confidence":"high"': '"confidence":"medium"', '"confidence":"medium"': '"confidence":"low"' };
const lowered = (detail: string): string => detail.replace(/"confidence":"(high|medium)"/, (m) => LOWER[m]);
const same = (detail: string): string => detail;

export function feedStanding(
  feed: { name: string; evidence: EvidenceKind; priority: number },
  states: Readonly<Record<string, ContentDates>>,
  nowMs: number,
): FeedStanding {
  const freshness = freshnessOf(states[feed.name], nowMs);
  const order = effectivePriority(feed.evidence, feed.priority);
  return freshness === 'fresh' ? { freshness, order, detail: same } : { freshness, order: order - BAND_WIDTH, detail: lowered };
}
