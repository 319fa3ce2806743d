// Per-thread leases on the shared counters of store.ts: requests spend from memory, and a
// thread goes to LMDB only when its lease runs out. Allowance is reserved before it is
// spent, so no answered lookup is ever uncounted; a killed process can only over-count, by
// what its leases held unused (≤ LEASE_MAX per counter). Idle leases go back within
// LEASE_IDLE_MS, so usage reads exact once traffic pauses.

import type { Rate } from '../accounts/plans.js';
import type { AccountingStore } from './store.js';

/** Largest number of extra units a lease takes beyond what a request needs. */
export const LEASE_MAX = 256;
/** Unused lease units are returned after this long without use. */
export const LEASE_IDLE_MS = 1000;
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
  /** Tokens the shared bucket held after the last grant. */
  bucketLeft: number;
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

/** Extra units a lease takes for a rate: about a tenth of a second of traffic at the rate. */
export function leaseExtra(rate: Rate): number {
  return Math.max(0, Math.min(LEASE_MAX, Math.ceil(rate.perSecond / 10) - 1));
}

export class Meter {
  private readonly leases = new Map<string, Lease>();
  private readonly tokens = new Map<string, TokenLease>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly store: AccountingStore) {
    this.sweeper = setInterval(() => this.sweep(Date.now()), LEASE_IDLE_MS / 2);
    this.sweeper.unref();
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
    const r = this.store.reserve(counter, units - lease.left, extra, limit);
    const available = lease.left + r.granted;
    const given = Math.min(units, available);
    lease.left = available - given;
    lease.spentAtReserve = r.spent;
    return given;
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
    return lease ? lease.spentAtReserve - lease.left : 0;
  }

  /** Units spent on the counter minus what this thread holds unused (exact when idle elsewhere). */
  usage(counter: string): number {
    return this.store.spent(counter) - (this.leases.get(counter)?.left ?? 0);
  }

  /** One token from the bucket (rate per key or per source), leased in blocks. */
  take(bucket: string, rate: Rate, nowMs: number): RateDecision {
    let t = this.tokens.get(bucket);
    if (t === undefined) {
      t = { left: 0, bucketLeft: rate.burst, expiresMs: 0, refusedUntilMs: 0 };
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
    const g = this.store.takeTokens(bucket, want, rate.perSecond, rate.burst, nowMs);
    t.bucketLeft = g.left;
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
    for (const lease of this.leases.values()) {
      if (nowMs - lease.touchedMs < LEASE_IDLE_MS) continue;
      try {
        this.store.release(lease.counter, lease.left);
      } catch {
        continue; // the store is unavailable: keep the lease and give it back on a later sweep
      }
      this.leases.delete(lease.counter);
    }
    for (const [bucket, t] of this.tokens) {
      if (nowMs >= t.expiresMs && nowMs >= t.refusedUntilMs) this.tokens.delete(bucket);
    }
  }

  /** Returns every lease's unused units (graceful shutdown). */
  close(): void {
    clearInterval(this.sweeper);
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
