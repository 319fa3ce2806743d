// What is wrong, in the words the console's banner shows first: the node not ready, a build
// older than its schedule allows, the accounting store refusing writes (lookups answered from
// memory), a serving node behind the store's build or no longer reading it. Each problem says
// where the detail is; sources in trouble are told by the sources API (the console adds them).

import type { FollowerState } from '../../replica/index-replica.js';
import type { OwedReading } from './metrics-text.js';

export interface HealthProblem {
  /** What is wrong, as a key a client may switch on. */
  kind: 'not_ready' | 'build_old' | 'accounting_degraded' | 'replica_behind' | 'replica_unchecked';
  /** One sentence for the operator. */
  message: string;
  /** Where the console shows the detail (a route of its own). */
  see: string;
}

export interface HealthInput {
  nowMs: number;
  ready: boolean;
  draining: boolean;
  /** The serving build (null: none). */
  build: { id: string; builtAtMs: number } | null;
  /** How often a build is due here (s): daily where this node builds on a schedule; null: no schedule. */
  buildEveryS: number | null;
  owed: OwedReading | null;
  /** A serving node's view of the store (null: not a serving node). */
  replica: FollowerState | null;
  replicaPollMs: number;
  /** Sources are configured here: before the first build, lookups answer 503 (their first fetch is under way), not 500. */
  sourcesConfigured?: boolean;
}

/** Past its due time, how late a build may be before it is called old: the run itself, a retry. */
const BUILD_SLACK_S = 2 * 3600;

const span = (s: number): string => (s < 7200 ? `${Math.round(s / 60)} minutes` : `${Math.round(s / 3600)} hours`);

export function healthProblems(h: HealthInput): HealthProblem[] {
  const out: HealthProblem[] = [];
  if (!h.ready)
    out.push({
      kind: 'not_ready',
      message: h.draining
        ? 'Not ready: shutting down.'
        : h.build === null
          ? h.sourcesConfigured
            ? "Not ready: no build serves yet, while the sources' first fetch is under way: lookups answer 503 with Retry-After: 30 until it builds."
            : 'Not ready: no build serves, so lookups answer 500 until one does (ipsift build, or sources to fetch).'
          : 'Not ready: a front-end thread is not serving the build yet.',
      see: '#/overview',
    });
  if (h.build && h.buildEveryS !== null) {
    const ageS = Math.round((h.nowMs - h.build.builtAtMs) / 1000);
    if (ageS > h.buildEveryS + BUILD_SLACK_S)
      out.push({
        kind: 'build_old',
        message: `The serving build ${h.build.id} was made ${span(ageS)} ago; one is due every ${span(h.buildEveryS)}.`,
        see: '#/data',
      });
  }
  if (h.owed && h.owed.counters > 0)
    out.push({
      kind: 'accounting_degraded',
      message: `The accounting store refuses writes: ${h.owed.units} requests on ${h.owed.counters} counters were answered from memory and are written once it takes writes again (ACCOUNTING_GRACE_S).`,
      see: '#/overview',
    });
  if (h.replica) {
    const r = h.replica;
    const staleMs = 3 * h.replicaPollMs + 60_000;
    if (r.checkedAt === null || h.nowMs - r.checkedAt.getTime() > staleMs || r.error !== null)
      out.push({
        kind: 'replica_unchecked',
        message: `The store's build pointer ${r.checkedAt === null ? 'has not been read yet' : `was last read ${span(Math.round((h.nowMs - r.checkedAt.getTime()) / 1000))} ago`}${r.error ? `: ${r.error}` : ''}.`,
        see: '#/data',
      });
    else if (r.published !== null && r.published !== h.build?.id)
      out.push({
        kind: 'replica_behind',
        message: `Serving ${h.build?.id ?? 'no build'} while the store publishes ${r.published}: fetching it, or it failed its check.`,
        see: '#/data',
      });
  }
  return out;
}
