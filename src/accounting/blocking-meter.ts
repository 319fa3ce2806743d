// The meter of a store on this machine (LMDB): a request whose lease is empty reserves more
// with a blocking call, which takes microseconds. Allowance is reserved before it is spent, so
// no answered lookup is ever uncounted; a killed process can only over-count, by what its
// threads' leases held unused (HELD_MAX.blocking per counter and thread).

import type { Rate } from '../model/plans.js';
import type { RateDecision, Wake } from './answers.js';
import { applyGrant, type Lease, localTokens, refusedFor, tokensWanted } from './lease.js';
import { LeaseMeter } from './lease-meter.js';

export class BlockingMeter extends LeaseMeter {
  readonly edge = null;
  readonly defers = false;
  readonly unanswered = 0;

  get degraded(): boolean {
    return this.mode.failing;
  }

  wait(_wake: Wake): void {
    throw new Error('a blocking meter never answers PENDING');
  }

  // spend() and take() are the request path's: each serves from its lease in a few lines and
  // leaves the store to a method of its own, so that V8 inlines them into the gate (as one
  // meter of it all, before meter.ts was split, they cost 85 instructions a keyed lookup less).

  spend(counter: string, units: number, extra: number, limit: number | null, nowMs: number): number {
    const lease = this.leases.get(counter);
    if (lease !== undefined && lease.left >= units) {
      lease.touchedMs = nowMs;
      lease.left -= units;
      return units;
    }
    return this.reserve(counter, units, extra, limit, nowMs);
  }

  /** spend() once the lease cannot serve it: more is reserved from the store. */
  private reserve(counter: string, units: number, extra: number, limit: number | null, nowMs: number): number {
    const lease = this.lease(counter, nowMs);
    if (lease.left >= units) {
      lease.left -= units;
      return units;
    }
    let r: { granted: number; spent: number };
    try {
      r = this.store.reserve(counter, units - lease.left, extra, limit);
      this.mode.recovered();
    } catch (e) {
      this.mode.failed(e, nowMs);
      return this.spendOwed(lease, units, limit);
    }
    const available = lease.left + r.granted;
    const given = Math.min(units, available);
    lease.left = available - given;
    lease.spentAtReserve = r.spent;
    lease.known = true;
    return given;
  }

  /** Degraded spend: a counter never reserved here is read first (a full disk still reads). */
  private spendOwed(lease: Lease, units: number, limit: number | null): number {
    if (!lease.known) {
      try {
        lease.spentAtReserve = this.store.spent(lease.counter);
        lease.known = true;
      } catch {
        // unreadable too: a limited counter is then refused
      }
    }
    return this.mode.spend(lease, units, limit, false);
  }

  /** One token from the bucket, leased in blocks; the store is asked when the lease is empty. */
  take(bucket: string, rate: Rate, nowMs: number): RateDecision {
    const t = this.tokens.get(bucket);
    if (t !== undefined && t.left > 0 && nowMs < t.expiresMs) {
      t.left--;
      return { ok: true, retryAfter: 0, remaining: Math.floor(t.bucketLeft + t.left) };
    }
    return this.takeFromStore(bucket, rate, nowMs);
  }

  /** take() once the token lease is empty or expired: a block is taken from the store. */
  private takeFromStore(bucket: string, rate: Rate, nowMs: number): RateDecision {
    const t = this.tokenLease(bucket, rate, nowMs);
    if (nowMs < t.refusedUntilMs) return refusedFor(t, nowMs);
    const want = tokensWanted(rate);
    let g: { granted: number; left: number };
    try {
      g = this.store.takeTokens(bucket, want, rate.perSecond, rate.burst, nowMs);
      this.mode.recovered();
    } catch (e) {
      this.mode.failed(e, nowMs);
      g = localTokens(t, want, rate, nowMs);
    }
    return applyGrant(t, g, rate, nowMs);
  }

  protected settle(): boolean {
    return this.mode.settleBlocking(this.store);
  }

  protected releaseIdle(lease: Lease): boolean {
    if (lease.left === 0) return true;
    try {
      this.store.release(lease.counter, lease.left);
      return true;
    } catch {
      return false; // the store is unavailable: kept, and given back on a later sweep
    }
  }
}
