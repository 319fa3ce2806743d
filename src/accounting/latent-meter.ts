// The meter of a store across a network (Redis: LatentCounters), which a request its lease can
// serve never waits on. A lease is refilled ahead of need, once half its extra is spent, by a
// call that answers on the event loop; a request that finds its lease empty gets PENDING,
// registers with wait(), and is handled again when the refill lands (its thread serves other
// requests meanwhile). A refill later than LATE_MS lets waiting requests be answered from
// memory, owed as in degraded mode, where the counter has no limit; a counter with a limit
// waits for the store (other nodes spend it too) or its timeout, and then the degraded mode.
// What was answered from memory is written once the store answers again, and a late refill's
// grant is not lost but spent, so a stalled Redis that answers at last leaves usage equal to
// answers. Keyless sources are counted at the edge (edge-counts.ts).

import { reasonOf } from '../errors.js';
import type { Logger } from '../log.js';
import type { Rate } from '../model/plans.js';
import type { AccountingStore, LatentCounters } from './accounting-store.js';
import { LATE_MS, PENDING, PENDING_TOKENS, type RateDecision, type Wake, wakeEach } from './answers.js';
import { EdgeCounts } from './edge-counts.js';
import { applyGrant, type Lease, localTokens, MAX_BOOST, type Refilling, refusedFor, type TokenLease, tokensWanted } from './lease.js';
import { LeaseMeter } from './lease-meter.js';
import type { OwedTable } from './owed-table.js';

/** After a call that failed, the next one is sent no sooner than this. */
const LATE_RETRY_MS = 1000;
/** A lease idle this long is forgotten (its last known counter with it). */
const FORGET_MS = 60_000;

export class LatentMeter extends LeaseMeter {
  readonly defers = true;
  readonly edge: EdgeCounts;
  /** Owed units being written by a call in flight, per counter. */
  private readonly settling = new Map<string, number>();
  /** Refills in flight, watched for lateness. */
  private readonly inFlight = new Set<Refilling>();
  private watcher: NodeJS.Timeout | null = null;
  /** What the last PENDING answer waits on (wait() registers there). */
  private pendingOn: Refilling | null = null;

  constructor(
    store: AccountingStore,
    private readonly latent: LatentCounters,
    graceMs: number,
    log: Logger | undefined,
    table: OwedTable,
    now: () => number,
  ) {
    super(store, graceMs, log, table, now);
    this.edge = new EdgeCounts(
      latent,
      graceMs,
      (reason, nowMs) => this.mode.failedLater(reason, nowMs),
      () => {
        if (!this.mode.owing) this.mode.recovered();
      },
      this.wakeFailed,
    );
  }

  /** A waiting request threw when woken (its route's guard answers it; this is the log). */
  private readonly wakeFailed = (e: unknown): void => this.log?.error('a request waiting on accounting failed', { reason: reasonOf(e) });

  /** Calls still unanswered or not yet sent (refills, debts, keyless answers). */
  get unanswered(): number {
    return this.inFlight.size + this.settling.size + this.edge.unwritten;
  }

  get degraded(): boolean {
    return this.mode.failing || this.edge.failingSinceMs !== null;
  }

  /**
   * Registers a request that got PENDING: `wake` runs once the refill it waits on has landed,
   * failed or grown late, on this thread's event loop; the request then asks again.
   */
  wait(wake: Wake): void {
    this.pendingOn!.waiters.push(wake);
  }

  /**
   * Spends up to `units` of the counter's allowance (limit null: unlimited); returns the
   * units granted, which are fewer only when the limit is reached, or PENDING.
   */
  spend(counter: string, units: number, extra: number, limit: number | null, nowMs: number): number {
    const lease = this.lease(counter, nowMs);
    if (lease.left >= units) {
      lease.left -= units;
      // Ahead of need: the refill lands while the other half of the extra is spent.
      if (lease.left <= (extra * lease.boost) >> 1 && lease.sentMs < 0 && extra > 0 && nowMs >= lease.retryAtMs) this.refill(lease, 0, extra, limit, nowMs);
      return units;
    }
    if (lease.sentMs < 0) {
      if (nowMs < lease.fullUntilMs) {
        // The store has just said the limit is reached: what the lease holds, and no more.
        const given = Math.min(units, lease.left);
        lease.left -= given;
        return given;
      }
      if (nowMs < lease.retryAtMs) return this.spendDegraded(lease, units, limit, nowMs);
      this.refill(lease, units - lease.left, extra, limit, nowMs);
    } else if (nowMs - lease.sentMs < LATE_MS) {
      // Dry before the refill landed: the next ones ask for more.
      if (lease.waiters.length === 0 && lease.boost < MAX_BOOST) lease.boost *= 2;
    } else {
      // Late: from memory, owed, where no limit can be passed. A counter with a limit waits for
      // the store (other nodes may be spending it) until its timeout: then the degraded mode,
      // where every counter is answered from memory (one never reserved counts from zero).
      if (limit === null || this.mode.failing) return this.spendDegraded(lease, units, limit, nowMs);
    }
    this.pendingOn = lease;
    return PENDING;
  }

  /** Answers from memory while the store fails or is late, within the grace period. */
  private spendDegraded(lease: Lease, units: number, limit: number | null, nowMs: number): number {
    this.mode.checkGrace(nowMs);
    return this.mode.spend(lease, units, limit, true);
  }

  /** Sends a refill of the lease; its reply wakes whoever waits on it. */
  private refill(lease: Lease, need: number, extra: number, limit: number | null, nowMs: number): void {
    lease.sentMs = nowMs;
    this.watch(lease);
    this.latent.reserveLater(lease.counter, need, extra * lease.boost, limit, (failure, r) => {
      this.landed(lease);
      const now = this.now();
      if (failure !== null) {
        lease.retryAtMs = now + LATE_RETRY_MS;
        this.mode.failedLater(failure, now);
      } else {
        // What was answered from memory while it was on its way is written by a call of its
        // own: paid from grants, a large debt would starve the requests waiting on them.
        if (this.mode.owing) this.settle();
        else this.mode.recovered();
        lease.left += r.granted;
        lease.spentAtReserve = r.spent;
        lease.known = true;
        // For the process's other threads, should they count in memory.
        if (limit !== null) this.mode.table.sawSpent(lease.counter, r.spent);
        // At the limit: the requests waiting get what there is, and the next ones too for a while.
        if (r.granted < need) lease.fullUntilMs = now + LATE_MS;
      }
      this.wakeAll(lease);
    });
  }

  /**
   * One token from the bucket (rate per key or per source), leased in blocks; PENDING_TOKENS
   * while the lease is being refilled, unless `defer` is false (then from this thread's own
   * bucket until the refill lands).
   */
  take(bucket: string, rate: Rate, nowMs: number, defer = true): RateDecision {
    const t = this.tokenLease(bucket, rate, nowMs);
    // Refilled once fewer than a refill's worth are left, so a round trip's traffic is held.
    const want = tokensWanted(rate) * t.boost;
    if (t.left > 0 && nowMs < t.expiresMs) {
      t.left--;
      if (t.left < want && t.sentMs < 0 && nowMs >= t.retryAtMs && nowMs >= t.refusedUntilMs) this.refillTokens(t, bucket, want, rate, nowMs);
      // Tokens held ahead of need came from a bucket that has refilled since: never above burst − 1.
      return { ok: true, retryAfter: 0, remaining: Math.min(rate.burst - 1, Math.floor(t.bucketLeft + t.left)) };
    }
    if (nowMs < t.refusedUntilMs) return refusedFor(t, nowMs);
    if (t.sentMs < 0 && nowMs >= t.retryAtMs) this.refillTokens(t, bucket, want, rate, nowMs);
    // Dry before the refill landed: the next ones ask for more (as a lease's extra, Lease.boost).
    else if (t.sentMs >= 0 && t.waiters.length === 0 && t.boost < MAX_BOOST) t.boost *= 2;
    if (defer && t.sentMs >= 0 && nowMs - t.sentMs < LATE_MS) {
      this.pendingOn = t;
      return PENDING_TOKENS;
    }
    // Failed, late, or a caller that cannot wait: this thread's own bucket until the store
    // answers (rates are not exact; the refill's tokens add to what this grants).
    return applyGrant(t, localTokens(t, want, rate, nowMs), rate, nowMs);
  }

  /** Sends a refill of the token lease; its reply wakes whoever waits. */
  private refillTokens(t: TokenLease, bucket: string, want: number, rate: Rate, nowMs: number): void {
    t.sentMs = nowMs;
    this.watch(t);
    this.latent.takeTokensLater(bucket, want, rate.perSecond, rate.burst, (failure, g) => {
      this.landed(t);
      const now = this.now();
      if (failure !== null) {
        t.retryAtMs = now + LATE_RETRY_MS;
        this.mode.failedLater(failure, now);
      } else {
        if (!this.mode.owing) this.mode.recovered();
        // Tokens still leased are kept: the grant adds to them.
        const held = now < t.expiresMs ? t.left : 0;
        applyGrant(t, g, rate, now);
        if (g.granted > 0)
          t.left += held + 1; // applyGrant spent one: none is spent here
        else if (held > 0) {
          t.left = held;
          t.refusedUntilMs = 0;
        }
      }
      this.wakeAll(t);
    });
  }

  private watch(r: Refilling): void {
    this.inFlight.add(r);
    if (this.watcher !== null) return;
    this.watcher = setInterval(() => this.watchLate(this.now()), LATE_MS / 4);
    this.watcher.unref();
  }

  private landed(r: Refilling): void {
    r.sentMs = -1;
    this.inFlight.delete(r);
    if (this.inFlight.size === 0 && this.watcher !== null) {
      clearInterval(this.watcher);
      this.watcher = null;
    }
  }

  /** Wakes requests waiting on late refills; past the store's timeout, the degraded mode. */
  private watchLate(nowMs: number): void {
    // Answers already in, but behind other work on this event loop, are not late.
    this.latent.deliver();
    for (const r of this.inFlight) {
      const age = nowMs - r.sentMs;
      if (age >= this.latent.timeoutMs) this.mode.failedLater(`no answer within ${this.latent.timeoutMs} ms`, nowMs);
      if (age >= LATE_MS && r.waiters.length > 0) this.wakeAll(r);
    }
  }

  private wakeAll(r: Refilling): void {
    if (r.waiters.length === 0) return;
    const waiters = r.waiters;
    r.waiters = [];
    wakeEach(waiters, this.wakeFailed);
  }

  /** Each counter's debt written by a call in flight (one a counter at a time). */
  protected settle(): boolean {
    for (const [counter, units] of this.mode.owed) {
      if (this.settling.has(counter)) continue;
      this.settling.set(counter, units);
      this.latent.reserveLater(counter, units, 0, null, (failure) => {
        this.settling.delete(counter);
        if (failure === null) this.mode.paid(counter, units);
      });
    }
    return !this.mode.owing;
  }

  /**
   * Given back without waiting; the lease (its last known counter) stays a while, so a late
   * refill of an occasional caller can be answered from memory.
   */
  protected releaseIdle(lease: Lease, nowMs: number): boolean {
    this.latent.releaseLater(lease.counter, lease.left);
    lease.left = 0;
    return nowMs - lease.touchedMs >= FORGET_MS;
  }

  protected override closing(): void {
    if (this.watcher !== null) clearInterval(this.watcher);
    const written = this.edge.close((counter, units) => {
      try {
        this.store.reserve(counter, units, 0, null);
        return true;
      } catch {
        return false;
      }
    });
    if (!written) this.log?.error('accounting store cannot be written: keyless lookups answered at the edge are lost');
  }
}
