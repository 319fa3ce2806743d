// The shared counters every thread and process (and, on Redis, every node) spends from:
// allowance per window and token buckets. Two implementations: LMDB in the data directory
// (one machine, the default) and Redis (a cluster). Both are synchronous to their callers —
// the Meter (meter.ts) goes to the store once per lease, not per request — and both throw when
// they cannot be written, which puts the Meter in its degraded mode. A store across a network
// (Redis) also takes the same calls without blocking (LatentCounters), which the Meter uses on
// the request path so that no lookup waits on a round trip.

export interface AccountingStore {
  /** Units spent (granted) on a counter. */
  spent(counter: string): number;

  /**
   * Grants `need` units plus up to `extra` more, never taking the counter past `limit`
   * (null: no limit). Near the limit the extra shrinks, so few units sit unused in leases:
   * granted = min(room, need + min(extra, ⌊max(0, room − need) / 16⌋)), room = limit − spent.
   * Returns the units granted and the counter after the grant.
   */
  reserve(counter: string, need: number, extra: number, limit: number | null): { granted: number; spent: number };

  /** Gives back units granted but not used (never below zero). */
  release(counter: string, units: number): void;

  /**
   * Takes up to `want` whole tokens from a token bucket (rate per second, capacity burst),
   * refilled since its last use. Returns the tokens granted and those left after the grant.
   */
  takeTokens(bucket: string, want: number, perSecond: number, burst: number, nowMs: number): { granted: number; left: number };

  /**
   * Deletes what no longer counts: day counters of days before `dayBefore`, month counters
   * of months before `monthBefore`, and token buckets untouched for `bucketIdleMs` (full
   * again, which is what a missing bucket means). Returns the keys deleted (0 where the
   * store expires keys itself).
   */
  prune(dayBefore: string, monthBefore: string, bucketIdleMs: number, nowMs: number): number;

  close(): Promise<void>;
}

/** Why a call that does not block failed (the store could not be reached or written). */
export type StoreFailure = string;

/** The calls of an AccountingStore that answer later, on the caller's event loop. */
export interface LatentCounters {
  /** Longest a call may take before the store counts as unavailable. */
  readonly timeoutMs: number;
  reserveLater(
    counter: string,
    need: number,
    extra: number,
    limit: number | null,
    done: (failure: StoreFailure | null, r: { granted: number; spent: number }) => void,
  ): void;
  takeTokensLater(
    bucket: string,
    want: number,
    perSecond: number,
    burst: number,
    done: (failure: StoreFailure | null, r: { granted: number; left: number }) => void,
  ): void;
  /** Gives units back; a failure leaves them counted (an over-count, never an under-count). */
  releaseLater(counter: string, units: number): void;
  /** Handles now the answers that have come in but wait for the event loop. */
  deliver(): void;
  /** Adds units already answered to many counters in one round trip; `totals` are the counters after it. */
  addLater(counters: string[], units: number[], done: (failure: StoreFailure | null, totals: number[]) => void): void;
}

/** The store's calls that do not block, where it has them (a store across a network). */
export function latentCounters(store: AccountingStore): LatentCounters | null {
  return 'reserveLater' in store ? (store as AccountingStore & LatentCounters) : null;
}

/** Grants for `need` (+ up to `extra`) on a counter at `spent` under `limit`: the rule of reserve(). */
export function grantFor(spent: number, need: number, extra: number, limit: number | null): number {
  if (limit === null) return need + extra;
  const room = Math.max(0, limit - spent);
  return Math.min(room, need + Math.min(extra, Math.floor(Math.max(0, room - need) / 16)));
}
