// Degraded mode, shared by both meters: when the store cannot be written (a full disk, an I/O
// error, a Redis that does not answer), lookups go on being answered for `graceMs`, counted in
// memory against the limit and the last counter value known; what was answered meanwhile is
// written to the store as soon as it takes writes again. Past the grace period a spend throws
// AccountingUnavailable, which the lookup routes answer with the contract's 500. What each
// thread owes is also in the process's OwedTable, so every thread's usage and overage limit
// count what the others answered.

import { reasonOf } from '../errors.js';
import type { Logger } from '../log.js';
import type { AccountingStore } from './accounting-store.js';
import { AccountingUnavailable } from './answers.js';
import type { Lease } from './lease.js';
import type { OwedTable } from './owed-table.js';

/**
 * Counters owed to the store in degraded mode at most: one client per keyless source could
 * otherwise grow the map for the whole grace period. Past it new counters are refused (500).
 */
export const MAX_OWED_COUNTERS = 100_000;

export class DegradedMode {
  /** Since when the store has refused writes (null: it takes them). */
  failingSinceMs: number | null = null;
  /** Units answered while the store refused writes, per counter, to be written when it recovers. */
  readonly owed = new Map<string, number>();

  constructor(
    readonly graceMs: number,
    private readonly log: Logger | undefined,
    /** The process's threads' debts (one table for all of them). */
    readonly table: OwedTable,
  ) {}

  get failing(): boolean {
    return this.failingSinceMs !== null;
  }

  /** Whether anything answered from memory is still to be written. */
  get owing(): boolean {
    return this.owed.size > 0;
  }

  /** A blocking write failed: enter (or stay in) degraded mode, or throw once the grace is spent. */
  failed(e: unknown, nowMs: number): void {
    if (this.failingSinceMs === null) this.failedLater(reasonOf(e), nowMs);
    if (nowMs - this.failingSinceMs! >= this.graceMs) throw new AccountingUnavailable({ cause: e });
  }

  /** A call that does not block failed: enter degraded mode (spend() checks the grace). */
  failedLater(reason: string, nowMs: number): void {
    if (this.failingSinceMs !== null) return;
    this.failingSinceMs = nowMs;
    this.log?.error('accounting store cannot be written: counting in memory', { grace_s: this.graceMs / 1000, reason });
  }

  recovered(): void {
    if (this.failingSinceMs === null) return;
    this.failingSinceMs = null;
    this.log?.info('accounting store takes writes again');
  }

  /** Throws once the store has refused writes for the whole grace period. */
  checkGrace(nowMs: number): void {
    if (this.failingSinceMs !== null && nowMs - this.failingSinceMs >= this.graceMs) throw new AccountingUnavailable();
  }

  /** Units owed on the counter by every thread of the process (this one's at least). */
  owedOn(counter: string): number {
    return Math.max(this.owed.get(counter) ?? 0, this.table.get(counter));
  }

  /** Units owed on the counter are counted in the store now. */
  paid(counter: string, units: number): void {
    const owed = this.owed.get(counter) ?? 0;
    const pay = Math.min(owed, units);
    if (pay <= 0) return;
    this.table.add(counter, -pay);
    if (pay === owed) {
      this.owed.delete(counter);
      this.table.settled();
    } else this.owed.set(counter, owed - pay);
    if (this.owed.size === 0) this.recovered();
  }

  /** Writes every debt with blocking calls; true when nothing is owed any more. */
  settleBlocking(store: AccountingStore): boolean {
    for (const [counter, units] of this.owed) {
      try {
        store.reserve(counter, units, 0, null);
      } catch {
        return false;
      }
      this.owed.delete(counter);
      this.table.add(counter, -units);
      this.table.settled();
    }
    return true;
  }

  /**
   * Spends from the lease, then from memory within the limit, owed to the store. `othersSeen`:
   * every thread's last reservation counts (a latent store's leases on the other threads).
   */
  spend(lease: Lease, units: number, limit: number | null, othersSeen: boolean): number {
    if (!this.owed.has(lease.counter) && this.owed.size >= MAX_OWED_COUNTERS) throw new AccountingUnavailable();
    // A limit with no value of its counter known here (no thread of this process read it
    // before the store failed): the room left cannot be told, and counting from zero would
    // grant the whole limit again on every such node. Refused, as past the grace period.
    if (limit !== null && !lease.known && this.table.knownSpent(lease.counter) === null) throw new AccountingUnavailable();
    const fromLease = Math.min(units, lease.left);
    lease.left -= fromLease;
    const owed = this.owed.get(lease.counter) ?? 0;
    const seen = othersSeen ? Math.max(lease.spentAtReserve, this.table.seenSpent(lease.counter)) : lease.spentAtReserve;
    const room = limit === null ? Infinity : Math.max(0, limit - seen - this.owedOn(lease.counter));
    const more = Math.min(units - fromLease, room);
    if (more > 0) {
      if (owed === 0) this.table.owing();
      this.owed.set(lease.counter, owed + more);
      this.table.add(lease.counter, more);
    }
    return fromLease + more;
  }
}
