// Per-thread leases on the shared counters of accounting-store.ts: requests spend from memory, and a
// thread goes to LMDB only when its lease runs out. Allowance is reserved before it is
// spent, so no answered lookup is ever uncounted; a killed process can only over-count, by
// what its threads' leases held unused (HELD_MAX per counter and thread). Idle leases
// go back within 1.5 × LEASE_IDLE_MS (idle that long, then the next sweep), so usage reads
// exact once traffic pauses.
//
// Degraded mode: when the store cannot be written (a full disk, an I/O error), lookups go on
// being answered for `graceMs`, counted in memory against the limit and the last counter
// value known (on a latent store, the highest any thread of the process had: seenSpent), with
// token buckets kept per thread; what was answered meanwhile is written to the store as soon
// as it takes writes again. Past the grace period spend and take throw
// AccountingUnavailable, which the lookup routes answer with the contract's 500. What each
// thread owes meanwhile is also in the process's OwedTable, so every thread's usage and
// overage limit count what the others answered (one thread's debt was invisible to the rest).
//
// A store across a network (Redis: LatentCounters) is never waited on by a request that its
// lease can serve. A lease is refilled ahead of need, once half its extra is spent, by a call
// that answers on the event loop; a request that finds its lease empty gets PENDING, registers
// with wait(), and is handled again when the refill lands (its thread serves other requests
// meanwhile). A refill later than LATE_MS lets waiting requests be answered from memory, owed
// like degraded mode's, where the counter has no limit; a counter with a limit waits for the
// store (other nodes spend it too) or its timeout, and then the degraded mode. What was answered from memory is written once the
// store answers again, and a late refill's grant is not lost but spent, so a stalled Redis that
// answers at last leaves usage equal to answers (a blocking call that timed out lost its grant).

import type { Rate } from '../model/plans.js';
import { reasonOf } from '../errors.js';
import { AccountingUnavailable, LATE_MS, PENDING, PENDING_TOKENS, wakeEach, type RateDecision, type Wake } from './answers.js';
export { AccountingUnavailable, LATE_MS, PENDING, PENDING_TOKENS, type RateDecision, type Wake } from './answers.js';
import type { Logger } from '../log.js';
import { latentCounters, type AccountingStore, type LatentCounters } from './accounting-store.js';
import { OwedTable } from './owed-table.js';
import { EdgeCounts } from './edge-counts.js';

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
/** The largest boost of a lease's extra (see Lease.boost). */
export const MAX_BOOST = 4;
/**
 * Unused units one thread may hold on a counter (what a kill -9 can leave counted and never
 * answered): a lease; on a latent store, half a boosted extra left when the refill is sent
 * plus the boosted extra it brings.
 */
export const HELD_MAX = { blocking: LEASE_MAX + 1, latent: (3 * MAX_BOOST * LEASE_MAX) / 2 + 1 } as const;
/** After a call that does not block failed, the next one is sent no sooner than this. */
const LATE_RETRY_MS = 1000;
/** A latent store's lease idle this long is forgotten (its last known counter with it). */
const FORGET_MS = 60_000;

/** A refill that does not block, in flight or not. */
interface Refilling {
  /** When the call in flight was sent; -1 when none is. */
  sentMs: number;
  /** No call is sent before this time (a failed one). */
  retryAtMs: number;
  waiters: Wake[];
}

interface Lease extends Refilling {
  counter: string;
  left: number;
  /**
   * How many times the caller's extra a latent store's refill asks for: doubled (up to
   * MAX_BOOST) each time the lease runs dry before its refill lands, so a lease lasts longer
   * than a round trip at the counter's traffic.
   */
  boost: number;
  /** Until then the counter is at its limit (a refill granted less than its need): no refill. */
  fullUntilMs: number;
  /** The shared counter after this thread's last reservation (its whole lease included). */
  spentAtReserve: number;
  /** Whether spentAtReserve came from the store: 0 before then says nothing of the counter. */
  known: boolean;
  touchedMs: number;
}

interface TokenLease extends Refilling {
  left: number;
  /** Tokens the shared bucket held after the last grant, and when; when it is full again. */
  bucketLeft: number;
  levelAtMs: number;
  fullAtMs: number;
  expiresMs: number;
  /** When refused: no tokens before this time (ms). */
  refusedUntilMs: number;
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
  /** Owed units being written by a call in flight, per counter (a latent store's). */
  private readonly settling = new Map<string, number>();
  /** Refills in flight (a latent store's), watched for lateness. */
  private readonly inFlight = new Set<Lease | TokenLease>();
  private watcher: NodeJS.Timeout | null = null;
  /** What the last PENDING answer waits on (wait() registers there). */
  private pendingOn: Refilling | null = null;
  /** Keyless sources counted at the edge (a latent store's; see edge-counts.ts). */
  readonly edge: EdgeCounts | null;

  constructor(
    private readonly store: AccountingStore,
    private readonly graceMs = 300_000,
    private readonly log?: Logger,
    /** The process's threads' debts (one table for all of them; a table of its own alone). */
    private readonly table = new OwedTable(),
    /** Calls that do not block, where the request path must not wait on the store (null: block). */
    private readonly latent: LatentCounters | null = latentCounters(store),
  ) {
    this.sweeper = setInterval(() => this.sweep(Date.now()), LEASE_IDLE_MS / 2);
    this.sweeper.unref();
    this.edge =
      latent === null
        ? null
        : new EdgeCounts(
            latent,
            graceMs,
            (reason, nowMs) => this.failedLater(reason, nowMs),
            () => {
              if (this.owed.size === 0) this.recovered();
            },
            this.wakeFailed,
          );
  }

  /** A waiting request threw when woken (its route's guard answers it; this is the log). */
  private readonly wakeFailed = (e: unknown): void => this.log?.error('a request waiting on accounting failed', { reason: reasonOf(e) });

  /** Calls to a latent store still unanswered or not yet sent (refills, debts, keyless answers). */
  get unanswered(): number {
    return this.inFlight.size + this.settling.size + (this.edge?.unwritten ?? 0);
  }

  /** Whether spend() and take() may answer PENDING (the store is across a network). */
  get defers(): boolean {
    return this.latent !== null;
  }

  /**
   * Registers a request that got PENDING: `wake` runs once the refill it waits on has landed,
   * failed or grown late, on this thread's event loop; the request then asks again.
   */
  wait(wake: Wake): void {
    this.pendingOn!.waiters.push(wake);
  }

  /** True while the store refuses writes and lookups are counted in memory. */
  get degraded(): boolean {
    return this.failingSinceMs !== null || (this.edge?.failingSinceMs ?? null) !== null;
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

  /**
   * Writes what was answered in degraded mode; true when nothing is owed any more. On a
   * latent store the writes answer later, unless `blocking` (at shutdown).
   */
  private settleOwed(blocking = false): boolean {
    if (this.latent !== null && !blocking) return this.settleOwedLater();
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

  /**
   * settleOwed for a latent store: each counter's debt written by a call in flight (one a
   * counter at a time). True when nothing is owed.
   */
  private settleOwedLater(): boolean {
    for (const [counter, units] of this.owed) {
      if (this.settling.has(counter)) continue;
      this.settling.set(counter, units);
      this.latent!.reserveLater(counter, units, 0, null, (failure) => {
        this.settling.delete(counter);
        if (failure === null) this.paid(counter, units);
      });
    }
    return this.owed.size === 0;
  }

  /** Units owed on the counter are counted in the store now. */
  private paid(counter: string, units: number): void {
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
      lease = { counter, left: 0, boost: 1, fullUntilMs: 0, spentAtReserve: 0, known: false, touchedMs: nowMs, sentMs: -1, retryAtMs: 0, waiters: [] };
      this.leases.set(counter, lease);
    }
    lease.touchedMs = nowMs;
    if (lease.left >= units) {
      lease.left -= units;
      // Ahead of need: the refill lands while the other half of the extra is spent.
      if (this.latent !== null && lease.left <= (extra * lease.boost) >> 1 && lease.sentMs < 0 && extra > 0 && nowMs >= lease.retryAtMs)
        this.refill(lease, 0, extra, limit, nowMs);
      return units;
    }
    if (this.latent !== null) return this.spendLater(lease, units, extra, limit, nowMs);
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
    lease.known = true;
    return given;
  }

  /** spend() on a latent store once the lease cannot serve the request. */
  private spendLater(lease: Lease, units: number, extra: number, limit: number | null, nowMs: number): number {
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
      if (limit === null || this.failingSinceMs !== null) return this.spendDegraded(lease, units, limit, nowMs);
    }
    this.pendingOn = lease;
    return PENDING;
  }

  /** Answers from memory while the store fails or is late, within the grace period. */
  private spendDegraded(lease: Lease, units: number, limit: number | null, nowMs: number): number {
    if (this.failingSinceMs !== null && nowMs - this.failingSinceMs >= this.graceMs) throw new AccountingUnavailable();
    return this.spendOwed(lease, units, limit);
  }

  /** Sends a refill of the lease that does not block; its reply wakes whoever waits on it. */
  private refill(lease: Lease, need: number, extra: number, limit: number | null, nowMs: number): void {
    lease.sentMs = nowMs;
    this.watch(lease);
    this.latent!.reserveLater(lease.counter, need, extra * lease.boost, limit, (failure, r) => {
      this.landed(lease);
      const now = Date.now();
      if (failure !== null) {
        lease.retryAtMs = now + LATE_RETRY_MS;
        this.failedLater(failure, now);
      } else {
        // What was answered from memory while it was on its way is written by a call of its
        // own: paid from grants, a large debt would starve the requests waiting on them.
        if (this.owed.size > 0) this.settleOwedLater();
        else this.recovered();
        lease.left += r.granted;
        lease.spentAtReserve = r.spent;
        lease.known = true;
        // For the process's other threads, should they count in memory (spendOwed).
        if (limit !== null) this.table.sawSpent(lease.counter, r.spent);
        // At the limit: the requests waiting get what there is, and the next ones too for a while.
        if (r.granted < need) lease.fullUntilMs = now + LATE_MS;
      }
      this.wakeAll(lease);
    });
  }

  /** A call that does not block failed: the degraded mode, as a blocking call's failure would. */
  private failedLater(failure: string, nowMs: number): void {
    if (this.failingSinceMs !== null) return;
    this.failingSinceMs = nowMs;
    this.log?.error('accounting store cannot be written: counting in memory', { grace_s: this.graceMs / 1000, reason: failure });
  }

  private watch(r: Lease | TokenLease): void {
    this.inFlight.add(r);
    if (this.watcher !== null) return;
    this.watcher = setInterval(() => this.watchLate(Date.now()), LATE_MS / 4);
    this.watcher.unref();
  }

  private landed(r: Lease | TokenLease): void {
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
    this.latent!.deliver();
    for (const r of this.inFlight) {
      const age = nowMs - r.sentMs;
      if (age >= this.latent!.timeoutMs) this.failedLater(`no answer within ${this.latent!.timeoutMs} ms`, nowMs);
      if (age >= LATE_MS && r.waiters.length > 0) this.wakeAll(r);
    }
  }

  private wakeAll(r: Refilling): void {
    if (r.waiters.length === 0) return;
    const waiters = r.waiters;
    r.waiters = [];
    wakeEach(waiters, this.wakeFailed);
  }

  /** Degraded spend: from the lease, then from memory within the limit, owed to the store. */
  private spendOwed(lease: Lease, units: number, limit: number | null): number {
    if (!this.owed.has(lease.counter) && this.owed.size >= MAX_OWED_COUNTERS) throw new AccountingUnavailable();
    if (!lease.known && this.latent === null) {
      // A counter this thread never reserved from (or whose lease was swept): its stored value
      // is still readable on a full disk; what is owed is counted on top of it.
      try {
        lease.spentAtReserve = this.store.spent(lease.counter);
        lease.known = true;
      } catch {
        // unreadable too: below, a limited counter is then refused
      }
    }
    // A limit with no value of its counter known here (no thread of this process read it
    // before the store failed): the room left cannot be told, and counting from zero would
    // grant the whole limit again on every such node. Refused, as past the grace period.
    if (limit !== null && !lease.known && this.table.knownSpent(lease.counter) === null) throw new AccountingUnavailable();
    const fromLease = Math.min(units, lease.left);
    lease.left -= fromLease;
    const owed = this.owed.get(lease.counter) ?? 0;
    // On a latent store every thread's last reservation counts (the other threads' leases).
    const seen = this.latent === null ? lease.spentAtReserve : Math.max(lease.spentAtReserve, this.table.seenSpent(lease.counter));
    const room = limit === null ? Infinity : Math.max(0, limit - seen - this.owedOn(lease.counter));
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

  /**
   * One token from the bucket (rate per key or per source), leased in blocks; PENDING_TOKENS
   * while the lease is being refilled, unless `defer` is false (then, on a latent store, from
   * this thread's own bucket until the refill lands; on a blocking one, the thread waits).
   */
  take(bucket: string, rate: Rate, nowMs: number, defer = true): RateDecision {
    let t = this.tokens.get(bucket);
    if (t === undefined) {
      t = { left: 0, bucketLeft: rate.burst, levelAtMs: nowMs, fullAtMs: nowMs, expiresMs: 0, refusedUntilMs: 0, sentMs: -1, retryAtMs: 0, waiters: [] };
      this.tokens.set(bucket, t);
    }
    if (t.left > 0 && nowMs < t.expiresMs) {
      t.left--;
      if (this.latent === null) return { ok: true, retryAfter: 0, remaining: Math.floor(t.bucketLeft + t.left) };
      const want = tokensWanted(rate);
      if (t.left < want && t.sentMs < 0 && nowMs >= t.retryAtMs && nowMs >= t.refusedUntilMs) this.refillTokens(t, bucket, want, rate, nowMs);
      // Tokens held ahead of need came from a bucket that has refilled since: never above burst − 1.
      return { ok: true, retryAfter: 0, remaining: Math.min(rate.burst - 1, Math.floor(t.bucketLeft + t.left)) };
    }
    const want = tokensWanted(rate);
    if (nowMs < t.refusedUntilMs) {
      return { ok: false, retryAfter: Math.max(1, Math.ceil((t.refusedUntilMs - nowMs) / 1000)), remaining: 0 };
    }
    if (this.latent !== null) {
      if (t.sentMs < 0 && nowMs >= t.retryAtMs) this.refillTokens(t, bucket, want, rate, nowMs);
      if (defer && t.sentMs >= 0 && nowMs - t.sentMs < LATE_MS) {
        this.pendingOn = t;
        return PENDING_TOKENS;
      }
      // Failed, late, or a caller that cannot wait: this thread's own bucket until the store
      // answers (rates are not exact; the refill's tokens add to what this grants).
      return this.granted(t, localTokens(t, want, rate, nowMs), rate, nowMs);
    }
    let g: { granted: number; left: number };
    try {
      g = this.store.takeTokens(bucket, want, rate.perSecond, rate.burst, nowMs);
      this.recovered();
    } catch (e) {
      this.failed(e, nowMs);
      g = localTokens(t, want, rate, nowMs);
    }
    return this.granted(t, g, rate, nowMs);
  }

  /** Sends a refill of the token lease that does not block; its reply wakes whoever waits. */
  private refillTokens(t: TokenLease, bucket: string, want: number, rate: Rate, nowMs: number): void {
    t.sentMs = nowMs;
    this.watch(t);
    this.latent!.takeTokensLater(bucket, want, rate.perSecond, rate.burst, (failure, g) => {
      this.landed(t);
      const now = Date.now();
      if (failure !== null) {
        t.retryAtMs = now + LATE_RETRY_MS;
        this.failedLater(failure, now);
      } else {
        if (this.owed.size === 0) this.recovered();
        // Tokens still leased are kept: the grant adds to them.
        const held = now < t.expiresMs ? t.left : 0;
        this.granted(t, g, rate, now);
        if (g.granted > 0)
          t.left += held + 1; // granted() spent one: none is spent here
        else if (held > 0) {
          t.left = held;
          t.refusedUntilMs = 0;
        }
      }
      this.wakeAll(t);
    });
  }

  /** Applies a grant of `g.granted` tokens (one of them spent now) to the token lease. */
  private granted(t: TokenLease, g: { granted: number; left: number }, rate: Rate, nowMs: number): RateDecision {
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
      if (nowMs - lease.touchedMs < LEASE_IDLE_MS || lease.sentMs >= 0) continue;
      if (this.latent !== null) {
        // Given back without waiting; the lease (its last known counter) stays a while, so a
        // late refill of an occasional caller can be answered from memory.
        this.latent.releaseLater(lease.counter, lease.left);
        lease.left = 0;
        if (nowMs - lease.touchedMs >= FORGET_MS) this.leases.delete(lease.counter);
        continue;
      }
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
      if (nowMs >= t.expiresMs && nowMs >= t.refusedUntilMs && (!degraded || nowMs >= t.fullAtMs) && t.sentMs < 0) this.tokens.delete(bucket);
    }
  }

  /** Returns every lease's unused units and writes what is owed (graceful shutdown). */
  close(): void {
    clearInterval(this.sweeper);
    if (this.watcher !== null) clearInterval(this.watcher);
    const edgeWritten = this.edge?.close((counter, units) => {
      try {
        this.store.reserve(counter, units, 0, null);
        return true;
      } catch {
        return false;
      }
    });
    if (edgeWritten === false) this.log?.error('accounting store cannot be written: keyless lookups answered at the edge are lost');
    if (!this.settleOwed(true)) this.log?.error('accounting store cannot be written: lookups answered in degraded mode are lost', { counters: this.owed.size });
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

/** Tokens a lease takes from a bucket: a tenth of its burst, within 1 and LEASE_MAX. */
function tokensWanted(rate: Rate): number {
  return Math.max(1, Math.min(LEASE_MAX, Math.floor(rate.burst / 10)));
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
