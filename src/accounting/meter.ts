// Per-thread leases on the shared counters of store.ts: requests spend from memory, and a
// thread goes to LMDB only when its lease runs out. Allowance is reserved before it is
// spent, so no answered lookup is ever uncounted; a killed process can only over-count, by
// what its threads' leases held unused (≤ LEASE_MAX + 1 per counter and thread). Idle leases
// go back within 1.5 × LEASE_IDLE_MS (idle that long, then the next sweep), so usage reads
// exact once traffic pauses.
//
// Degraded mode: when the store cannot be written (a full disk, an I/O error), lookups go on
// being answered for `graceMs`, counted in memory against the last counter value known and
// the limit, with token buckets kept per thread; what was answered meanwhile is written to
// the store as soon as it takes writes again. Past the grace period spend and take throw
// AccountingUnavailable, which the lookup routes answer with the contract's 500. What each
// thread owes meanwhile is also in the process's OwedTable, so every thread's usage and
// overage limit count what the others answered (one thread's debt was invisible to the rest).

import type { Rate } from '../model/plans.js';
import { IpsiftError, reasonOf } from '../errors.js';
import type { Logger } from '../log.js';
import type { AccountingStore } from './accounting-store.js';
import { OwedTable } from './owed-table.js';

/** Largest number of extra units a lease takes beyond what a request needs. */
export const LEASE_MAX = 256;
/** Unused lease units are returned after this long without use. */
export const LEASE_IDLE_MS = 1000;
/**
 * Counters owed to the store in degraded mode at most: one client per keyless source could
 * otherwise grow the map for the whole grace period. Past it new counters are refused (500).
 */
export const MAX_OWED_COUNTERS = 100_000;
/** Tokens taken from a bucket are usable for this long, then dropped. */
const TOKEN_LEASE_MS = 1000;

interface Lease {
  counter: string;
  left: number;
  /** The shared counter after this thread's last reservation (its whole lease included). */
  spentAtReserve: number;
  touchedMs: number;
}

interface TokenLease {
  left: number;
  /** Tokens the shared bucket held after the last grant, and when; when it is full again. */
  bucketLeft: number;
  levelAtMs: number;
  fullAtMs: number;
  expiresMs: number;
  /** When refused: no tokens before this time (ms). */
  refusedUntilMs: number;
}

export interface RateDecision {
  ok: boolean;
  /** Whole seconds to wait when refused (≥ 1). */
  retryAfter: number;
  /** Estimated tokens left in the bucket, for RateLimit-Remaining. */
  remaining: number;
}

/** The store has not taken a write for longer than the grace period. */
export class AccountingUnavailable extends IpsiftError {
  constructor(options?: { cause?: unknown }) {
    super('ACCOUNTING_UNAVAILABLE', 'the accounting store cannot be written', options);
  }
}

/** Extra units a lease takes for a rate: about a tenth of a second of traffic at the rate. */
export function leaseExtra(rate: Rate): number {
  return Math.max(0, Math.min(LEASE_MAX, Math.ceil(rate.perSecond / 10) - 1));
}

export class Meter {
  private readonly leases = new Map<string, Lease>();
  private readonly tokens = new Map<string, TokenLease>();
  private readonly sweeper: NodeJS.Timeout;
  /** Since when the store has refused writes (null: it takes them). */
  private failingSinceMs: number | null = null;
  /** Units answered while the store refused writes, per counter, to be written when it recovers. */
  private readonly owed = new Map<string, number>();

  constructor(
    private readonly store: AccountingStore,
    private readonly graceMs = 300_000,
    private readonly log?: Logger,
    /** The process's threads' debts (one table for all of them; a table of its own alone). */
    private readonly table = new OwedTable(),
  ) {
    this.sweeper = setInterval(() => this.sweep(Date.now()), LEASE_IDLE_MS / 2);
    this.sweeper.unref();
  }

  /** True while the store refuses writes and lookups are counted in memory. */
  get degraded(): boolean {
    return this.failingSinceMs !== null;
  }

  /** A store write failed: enter (or stay in) degraded mode, or throw once the grace is spent. */
  private failed(e: unknown, nowMs: number): void {
    if (this.failingSinceMs === null) {
      this.failingSinceMs = nowMs;
      this.log?.error('accounting store cannot be written: counting in memory', { grace_s: this.graceMs / 1000, reason: reasonOf(e) });
    }
    if (nowMs - this.failingSinceMs >= this.graceMs) throw new AccountingUnavailable({ cause: e });
  }

  private recovered(): void {
    if (this.failingSinceMs === null) return;
    this.failingSinceMs = null;
    this.log?.info('accounting store takes writes again');
  }

  /** Writes what was answered in degraded mode; true when nothing is owed any more. */
  private settleOwed(): boolean {
    for (const [counter, units] of this.owed) {
      try {
        this.store.reserve(counter, units, 0, null);
      } catch {
        return false;
      }
      this.owed.delete(counter);
      this.table.add(counter, -units);
      this.table.settled();
    }
    return true;
  }

  /** Units owed on the counter by every thread of the process (this one's at least). */
  private owedOn(counter: string): number {
    return Math.max(this.owed.get(counter) ?? 0, this.table.get(counter));
  }

  /**
   * Spends up to `units` of the counter's allowance (limit null: unlimited); returns the
   * units granted, which are fewer only when the limit is reached.
   */
  spend(counter: string, units: number, extra: number, limit: number | null, nowMs: number): number {
    let lease = this.leases.get(counter);
    if (lease === undefined) {
      lease = { counter, left: 0, spentAtReserve: 0, touchedMs: nowMs };
      this.leases.set(counter, lease);
    }
    lease.touchedMs = nowMs;
    if (lease.left >= units) {
      lease.left -= units;
      return units;
    }
    let r: { granted: number; spent: number };
    try {
      r = this.store.reserve(counter, units - lease.left, extra, limit);
      this.recovered();
    } catch (e) {
      this.failed(e, nowMs);
      return this.spendOwed(lease, units, limit);
    }
    const available = lease.left + r.granted;
    const given = Math.min(units, available);
    lease.left = available - given;
    lease.spentAtReserve = r.spent;
    return given;
  }

  /** Degraded spend: from the lease, then from memory within the limit, owed to the store. */
  private spendOwed(lease: Lease, units: number, limit: number | null): number {
    if (!this.owed.has(lease.counter) && this.owed.size >= MAX_OWED_COUNTERS) throw new AccountingUnavailable();
    if (lease.spentAtReserve === 0) {
      // A counter this thread never reserved from (or whose lease was swept): its stored value
      // is still readable on a full disk; what is owed is counted on top of it.
      try {
        lease.spentAtReserve = this.store.spent(lease.counter);
      } catch {
        // unreadable too: counted from zero, within the grace period only
      }
    }
    const fromLease = Math.min(units, lease.left);
    lease.left -= fromLease;
    const owed = this.owed.get(lease.counter) ?? 0;
    const room = limit === null ? Infinity : Math.max(0, limit - lease.spentAtReserve - this.owedOn(lease.counter));
    const more = Math.min(units - fromLease, room);
    if (more > 0) {
      if (owed === 0) this.table.owing();
      this.owed.set(lease.counter, owed + more);
      this.table.add(lease.counter, more);
    }
    return fromLease + more;
  }

  /** Returns units spent but not used (a batch that answered fewer than it reserved). */
  refund(counter: string, units: number): void {
    const lease = this.leases.get(counter);
    if (!lease || units <= 0) return;
    lease.left += units;
  }

  /**
   * Estimated units used on the counter by all threads, without touching LMDB: the counter
   * at this thread's last reservation minus what this thread still holds.
   */
  used(counter: string): number {
    const lease = this.leases.get(counter);
    if (lease === undefined) return 0;
    const used = lease.spentAtReserve - lease.left;
    return this.owed.size === 0 && !this.table.any() ? used : used + this.owedOn(counter);
  }

  /** Units spent on the counter minus what this thread holds unused (exact when idle elsewhere). */
  usage(counter: string): number {
    return this.store.spent(counter) + this.owedOn(counter) - (this.leases.get(counter)?.left ?? 0);
  }

  /** One token from the bucket (rate per key or per source), leased in blocks. */
  take(bucket: string, rate: Rate, nowMs: number): RateDecision {
    let t = this.tokens.get(bucket);
    if (t === undefined) {
      t = { left: 0, bucketLeft: rate.burst, levelAtMs: nowMs, fullAtMs: nowMs, expiresMs: 0, refusedUntilMs: 0 };
      this.tokens.set(bucket, t);
    }
    if (t.left > 0 && nowMs < t.expiresMs) {
      t.left--;
      return { ok: true, retryAfter: 0, remaining: Math.floor(t.bucketLeft + t.left) };
    }
    if (nowMs < t.refusedUntilMs) {
      return { ok: false, retryAfter: Math.max(1, Math.ceil((t.refusedUntilMs - nowMs) / 1000)), remaining: 0 };
    }
    const want = Math.max(1, Math.min(LEASE_MAX, Math.floor(rate.burst / 10)));
    let g: { granted: number; left: number };
    try {
      g = this.store.takeTokens(bucket, want, rate.perSecond, rate.burst, nowMs);
      this.recovered();
    } catch (e) {
      this.failed(e, nowMs);
      g = localTokens(t, want, rate, nowMs);
    }
    t.bucketLeft = g.left;
    t.levelAtMs = nowMs;
    t.fullAtMs = nowMs + ((rate.burst - g.left) / rate.perSecond) * 1000;
    if (g.granted === 0) {
      const waitMs = ((1 - g.left) / rate.perSecond) * 1000;
      t.left = 0;
      t.refusedUntilMs = nowMs + waitMs;
      return { ok: false, retryAfter: Math.max(1, Math.ceil(waitMs / 1000)), remaining: 0 };
    }
    t.left = g.granted - 1;
    t.expiresMs = nowMs + TOKEN_LEASE_MS;
    return { ok: true, retryAfter: 0, remaining: Math.floor(t.bucketLeft + t.left) };
  }

  /** Returns the unused part of leases idle for LEASE_IDLE_MS; forgets stale token leases. */
  sweep(nowMs: number): void {
    if (this.owed.size > 0 && this.settleOwed()) this.recovered();
    this.table.clearIfSettled();
    for (const lease of this.leases.values()) {
      if (nowMs - lease.touchedMs < LEASE_IDLE_MS) continue;
      if (lease.left > 0) {
        try {
          this.store.release(lease.counter, lease.left);
        } catch {
          continue; // the store is unavailable: keep the lease and give it back on a later sweep
        }
      }
      this.leases.delete(lease.counter);
    }
    // In degraded mode a token lease holds the only level its bucket has: kept until full again.
    const degraded = this.failingSinceMs !== null;
    for (const [bucket, t] of this.tokens) {
      if (nowMs >= t.expiresMs && nowMs >= t.refusedUntilMs && (!degraded || nowMs >= t.fullAtMs)) this.tokens.delete(bucket);
    }
  }

  /** Returns every lease's unused units and writes what is owed (graceful shutdown). */
  close(): void {
    clearInterval(this.sweeper);
    if (!this.settleOwed()) this.log?.error('accounting store cannot be written: lookups answered in degraded mode are lost', { counters: this.owed.size });
    for (const lease of this.leases.values()) {
      try {
        this.store.release(lease.counter, lease.left);
      } catch {
        // the store is gone: these units stay counted (an over-count, never an under-count)
      }
    }
    this.leases.clear();
    this.tokens.clear();
  }
}

/**
 * A token bucket in this thread's memory (degraded mode): refilled at the rate since the last
 * grant, `bucketLeft` as its level. Each thread has its own, so a key may get up to its rate
 * once per thread while the store is down.
 */
function localTokens(t: TokenLease, want: number, rate: Rate, nowMs: number): { granted: number; left: number } {
  const level = Math.min(rate.burst, t.bucketLeft + (Math.max(0, nowMs - t.levelAtMs) / 1000) * rate.perSecond);
  const granted = Math.max(0, Math.min(want, Math.floor(level)));
  return { granted, left: level - granted };
}
