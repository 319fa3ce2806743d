// Per-thread leases on the shared counters of accounting-store.ts: requests spend from memory,
// and a thread goes to the store only when its lease runs out. Allowance is reserved before it
// is spent, so no answered lookup is ever uncounted; a killed process can only over-count, by
// what its threads' leases held unused (HELD_MAX per counter and thread). Idle leases go back
// within 1.5 × LEASE_IDLE_MS (idle that long, then the next sweep), so usage reads exact once
// traffic pauses.
//
// One interface, a module per mechanism:
// - blocking-meter.ts: a store on this machine (LMDB), reserved from with blocking calls;
// - latent-meter.ts: a store across a network (Redis), refilled ahead of need and never
//   waited on by a request its lease can serve;
// - degraded-mode.ts: what both do while the store refuses writes (answers counted in memory
//   for a grace period, written when it recovers);
// - lease.ts: the lease records and the arithmetic both share.

import type { Logger } from '../log.js';
import type { Rate } from '../model/plans.js';
import { type AccountingStore, type LatentCounters, latentCounters } from './accounting-store.js';
import type { RateDecision, Wake } from './answers.js';
import { BlockingMeter } from './blocking-meter.js';
import type { EdgeCounts } from './edge-counts.js';
import { LatentMeter } from './latent-meter.js';
import { OwedTable } from './owed-table.js';

export { AccountingUnavailable, LATE_MS, PENDING, PENDING_TOKENS, type RateDecision, type Wake } from './answers.js';
export { MAX_OWED_COUNTERS } from './degraded-mode.js';
export { HELD_MAX, LEASE_IDLE_MS, LEASE_MAX, MAX_BOOST, leaseExtra } from './lease.js';

export interface Meter {
  /** Keyless sources counted at the edge (a latent store's; see edge-counts.ts). */
  readonly edge: EdgeCounts | null;
  /** Whether spend() and take() may answer PENDING (the store is across a network). */
  readonly defers: boolean;
  /** True while the store refuses writes and lookups are counted in memory. */
  readonly degraded: boolean;
  /** Calls to a latent store still unanswered or not yet sent (refills, debts, keyless answers). */
  readonly unanswered: number;
  /**
   * Spends up to `units` of the counter's allowance (limit null: unlimited); returns the units
   * granted, which are fewer only when the limit is reached, or PENDING (then wait()).
   */
  spend(counter: string, units: number, extra: number, limit: number | null, nowMs: number): number;
  /**
   * One token from the bucket (rate per key or per source), leased in blocks; PENDING_TOKENS
   * while the lease is being refilled (then wait()), unless `defer` is false.
   */
  take(bucket: string, rate: Rate, nowMs: number, defer?: boolean): RateDecision;
  /** Registers the request that got PENDING: `wake` runs when what it waits on has changed. */
  wait(wake: Wake): void;
  /** Returns units spent but not used (a batch that answered fewer than it reserved). */
  refund(counter: string, units: number): void;
  /** Estimated units used on the counter by all threads, without touching the store. */
  used(counter: string): number;
  /** Units spent on the counter minus what this thread holds unused (exact when idle elsewhere). */
  usage(counter: string): number;
  /** Gives back leases idle for LEASE_IDLE_MS and writes what is owed (run every half of it). */
  sweep(nowMs: number): void;
  /** Returns every lease's unused units and writes what is owed (graceful shutdown). */
  close(): void;
}

export interface MeterOptions {
  /** How long lookups are answered from memory while the store refuses writes. */
  graceMs?: number;
  log?: Logger;
  /** The process's threads' debts (one table for all of them; a table of its own alone). */
  table?: OwedTable;
  /** Calls that do not block (null: always block, whatever the store). */
  latent?: LatentCounters | null;
  /** The meter's clock where it reads one itself (sweeps, replies that land); Date.now by default. */
  now?: () => number;
}

/** The meter for the store: a latent one where the store offers calls that do not block. */
export function openMeter(store: AccountingStore, options: MeterOptions = {}): Meter {
  const { graceMs = 300_000, log, table = new OwedTable(), now = Date.now } = options;
  const latent = options.latent === undefined ? latentCounters(store) : options.latent;
  return latent === null ? new BlockingMeter(store, graceMs, log, table, now) : new LatentMeter(store, latent, graceMs, log, table, now);
}
