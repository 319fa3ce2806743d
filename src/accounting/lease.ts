// A thread's share of one shared counter or token bucket: the records both meters keep
// (blocking-meter.ts, latent-meter.ts) and the arithmetic they share.

import type { Rate } from '../model/plans.js';
import type { RateDecision, Wake } from './answers.js';

/** Largest number of extra units a lease takes beyond what a request needs. */
export const LEASE_MAX = 256;
/** Unused lease units are returned after this long without use. */
export const LEASE_IDLE_MS = 1000;
/** The largest boost of a lease's extra (see Lease.boost). */
export const MAX_BOOST = 4;
/**
 * Unused units one thread may hold on a counter (what a kill -9 can leave counted and never
 * answered): a lease; on a latent store, half a boosted extra left when the refill is sent
 * plus the boosted extra it brings.
 */
export const HELD_MAX = { blocking: LEASE_MAX + 1, latent: (3 * MAX_BOOST * LEASE_MAX) / 2 + 1 } as const;
/** Tokens taken from a bucket are usable for this long, then dropped. */
const TOKEN_LEASE_MS = 1000;

/** A refill that does not block (a latent store's), in flight or not. */
export interface Refilling {
  /** When the call in flight was sent; -1 when none is. */
  sentMs: number;
  /** No call is sent before this time (a failed one). */
  retryAtMs: number;
  waiters: Wake[];
}

export interface Lease extends Refilling {
  readonly counter: string;
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

export interface TokenLease extends Refilling {
  left: number;
  /** As Lease.boost, for the tokens a latent store's refill asks for. */
  boost: number;
  /** Tokens the shared bucket held after the last grant, and when; when it is full again. */
  bucketLeft: number;
  levelAtMs: number;
  fullAtMs: number;
  expiresMs: number;
  /** When refused: no tokens before this time (ms). */
  refusedUntilMs: number;
}

export function newLease(counter: string, nowMs: number): Lease {
  return { counter, left: 0, boost: 1, fullUntilMs: 0, spentAtReserve: 0, known: false, touchedMs: nowMs, sentMs: -1, retryAtMs: 0, waiters: [] };
}

export function newTokenLease(rate: Rate, nowMs: number): TokenLease {
  return {
    left: 0,
    boost: 1,
    bucketLeft: rate.burst,
    levelAtMs: nowMs,
    fullAtMs: nowMs,
    expiresMs: 0,
    refusedUntilMs: 0,
    sentMs: -1,
    retryAtMs: 0,
    waiters: [],
  };
}

/** Extra units a lease takes for a rate: about a tenth of a second of traffic at the rate. */
export function leaseExtra(rate: Rate): number {
  return Math.max(0, Math.min(LEASE_MAX, Math.ceil(rate.perSecond / 10) - 1));
}

/** Tokens a lease takes from a bucket: a tenth of its burst, within 1 and LEASE_MAX. */
export function tokensWanted(rate: Rate): number {
  return Math.max(1, Math.min(LEASE_MAX, Math.floor(rate.burst / 10)));
}

/** The refusal of a token lease refused until `refusedUntilMs`. */
export function refusedFor(t: TokenLease, nowMs: number): RateDecision {
  return { ok: false, retryAfter: Math.max(1, Math.ceil((t.refusedUntilMs - nowMs) / 1000)), remaining: 0 };
}

/**
 * A token bucket in this thread's memory (degraded mode): refilled at the rate since the last
 * grant, `bucketLeft` as its level. Each thread has its own, so a key may get up to its rate
 * once per thread while the store is down.
 */
export function localTokens(t: TokenLease, want: number, rate: Rate, nowMs: number): { granted: number; left: number } {
  const level = Math.min(rate.burst, t.bucketLeft + (Math.max(0, nowMs - t.levelAtMs) / 1000) * rate.perSecond);
  const granted = Math.max(0, Math.min(want, Math.floor(level)));
  return { granted, left: level - granted };
}

/** Applies a grant of `g.granted` tokens (one of them spent now) to the token lease. */
export function applyGrant(t: TokenLease, g: { granted: number; left: number }, rate: Rate, nowMs: number): RateDecision {
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
