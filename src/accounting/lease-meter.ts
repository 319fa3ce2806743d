// What both meters do alike (blocking-meter.ts, latent-meter.ts): a thread's leases by counter
// and bucket, spending from them, estimating usage, and giving idle leases back on a sweep.

import type { Logger } from '../log.js';
import type { Rate } from '../model/plans.js';
import type { AccountingStore } from './accounting-store.js';
import { DegradedMode } from './degraded-mode.js';
import { type Lease, LEASE_IDLE_MS, type TokenLease, newLease, newTokenLease } from './lease.js';
import type { OwedTable } from './owed-table.js';

export abstract class LeaseMeter {
  protected readonly leases = new Map<string, Lease>();
  protected readonly tokens = new Map<string, TokenLease>();
  protected readonly mode: DegradedMode;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    protected readonly store: AccountingStore,
    graceMs: number,
    protected readonly log: Logger | undefined,
    table: OwedTable,
    /** The clock of the meter's own readings (sweeps, replies that land): Date.now but in tests. */
    protected readonly now: () => number,
  ) {
    this.mode = new DegradedMode(graceMs, log, table);
    this.sweeper = setInterval(() => this.sweep(this.now()), LEASE_IDLE_MS / 2);
    this.sweeper.unref();
  }

  /** Writes what was answered in degraded mode; true when nothing is owed any more. */
  protected abstract settle(): boolean;

  /** Gives an idle lease's unused units back; true when the lease is to be forgotten now. */
  protected abstract releaseIdle(lease: Lease, nowMs: number): boolean;

  /** The lease of the counter, made on first use and marked used now. */
  protected lease(counter: string, nowMs: number): Lease {
    let lease = this.leases.get(counter);
    if (lease === undefined) {
      lease = newLease(counter, nowMs);
      this.leases.set(counter, lease);
    }
    lease.touchedMs = nowMs;
    return lease;
  }

  protected tokenLease(bucket: string, rate: Rate, nowMs: number): TokenLease {
    let t = this.tokens.get(bucket);
    if (t === undefined) {
      t = newTokenLease(rate, nowMs);
      this.tokens.set(bucket, t);
    }
    return t;
  }

  /** Returns units spent but not used (a batch that answered fewer than it reserved). */
  refund(counter: string, units: number): void {
    const lease = this.leases.get(counter);
    if (!lease || units <= 0) return;
    lease.left += units;
  }

  /**
   * Estimated units used on the counter by all threads, without touching the store: the
   * counter at this thread's last reservation minus what this thread still holds.
   */
  used(counter: string): number {
    const lease = this.leases.get(counter);
    if (lease === undefined) return 0;
    const used = lease.spentAtReserve - lease.left;
    return !this.mode.owing && !this.mode.table.any() ? used : used + this.mode.owedOn(counter);
  }

  /** Units spent on the counter minus what this thread holds unused (exact when idle elsewhere). */
  usage(counter: string): number {
    return this.store.spent(counter) + this.mode.owedOn(counter) - (this.leases.get(counter)?.left ?? 0);
  }

  /** Returns the unused part of leases idle for LEASE_IDLE_MS; forgets stale token leases. */
  sweep(nowMs: number): void {
    if (this.mode.owing && this.settle()) this.mode.recovered();
    this.mode.table.clearIfSettled();
    for (const lease of this.leases.values()) {
      if (nowMs - lease.touchedMs < LEASE_IDLE_MS || lease.sentMs >= 0) continue;
      if (this.releaseIdle(lease, nowMs)) this.leases.delete(lease.counter);
    }
    // In degraded mode a token lease holds the only level its bucket has: kept until full again.
    const degraded = this.mode.failing;
    for (const [bucket, t] of this.tokens) {
      if (nowMs >= t.expiresMs && nowMs >= t.refusedUntilMs && (!degraded || nowMs >= t.fullAtMs) && t.sentMs < 0) this.tokens.delete(bucket);
    }
  }

  /** Returns every lease's unused units and writes what is owed (graceful shutdown). */
  close(): void {
    clearInterval(this.sweeper);
    this.closing();
    if (!this.mode.settleBlocking(this.store))
      this.log?.error('accounting store cannot be written: lookups answered in degraded mode are lost', { counters: this.mode.owed.size });
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

  /** What a meter of its kind stops or writes first at close(). */
  protected closing(): void {}
}
