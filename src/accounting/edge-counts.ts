// Keyless sources counted at the edge, on a store across a network (Redis). A public service
// meets many sources that each ask a few times: a lease per source would cost a round trip
// per request. Instead each front-end thread answers a source from memory within a small
// share, and writes what it answered for every source in one call (addLater) every SYNC_MS;
// the totals that come back are what the next answers are judged against.
//
// Bounds, per source and day: a thread answers at most `share` lookups the store has not yet
// counted (a batch's go through a lease instead: Gate.spend), so across T front-end threads of the cluster a source is answered at most
// (T − 1) × share past its daily cap. The per-source rate is this thread's own token bucket:
// a source whose connections land on T threads gets up to T times its rate (the daily cap,
// shared, is what bounds a source's use). While the store cannot be written, or a write has
// had no answer for its timeout, the shares are not waited for: sources are answered up to
// their cap against the last totals, within the Meter's grace period, and what they owe is
// written once it answers.

import type { Rate } from '../model/plans.js';
import type { LatentCounters } from './accounting-store.js';
import { AccountingUnavailable, PENDING, wakeEach, type RateDecision, type Wake } from './answers.js';

/** Units a thread may answer for one source before the store has counted them. */
export const EDGE_SHARE = 16;
/** How often what was answered is written (when anything was). */
export const SYNC_MS = 20;
/** Counters written by one call at most (the rest go with the next). */
const SYNC_BATCH = 4096;
/** Sources remembered per thread; idle ones are forgotten first. */
const MAX_SOURCES = 100_000;
/** A source with nothing to write, idle this long, is forgotten. */
const IDLE_MS = 60_000;

interface Source {
  /** The counter when the store last answered (every thread's and node's answers in it). */
  known: number;
  /** Answered here and not yet counted by the store (the part being written included). */
  unsynced: number;
  /** Units of `unsynced` in the call in flight. */
  syncing: number;
  touchedMs: number;
  /** This thread's token bucket for the source: its level, and when it was. */
  tokens: number;
  tokensAtMs: number;
}

export class EdgeCounts {
  private readonly sources = new Map<string, Source>();
  private readonly buckets = new Map<string, Source>();
  private readonly dirty = new Set<string>();
  private waiters: Wake[] = [];
  /** When the call in flight was sent (-1: none). */
  private sentMs = -1;
  private readonly timer: NodeJS.Timeout;
  /** Since when writes fail (null: they do not); answers then go up to the cap. */
  failingSinceMs: number | null = null;

  constructor(
    private readonly store: LatentCounters,
    private readonly graceMs: number,
    private readonly onFailure: (reason: string, nowMs: number) => void,
    private readonly onRecovery: () => void,
    private readonly onWakeFailure: (e: unknown) => void,
  ) {
    this.timer = setInterval(() => this.tick(Date.now()), SYNC_MS);
    this.timer.unref();
  }

  /** One token from this thread's bucket for a keyless source. */
  take(bucket: string, rate: Rate, nowMs: number): RateDecision {
    let s = this.buckets.get(bucket);
    if (s === undefined) {
      if (this.buckets.size >= MAX_SOURCES) this.buckets.clear();
      s = { known: 0, unsynced: 0, syncing: 0, touchedMs: nowMs, tokens: rate.burst, tokensAtMs: nowMs };
      this.buckets.set(bucket, s);
    }
    const level = Math.min(rate.burst, s.tokens + ((nowMs - s.tokensAtMs) / 1000) * rate.perSecond);
    s.tokensAtMs = nowMs;
    if (level < 1) {
      s.tokens = level;
      return { ok: false, retryAfter: Math.max(1, Math.ceil((1 - level) / rate.perSecond)), remaining: 0 };
    }
    s.tokens = level - 1;
    return { ok: true, retryAfter: 0, remaining: Math.floor(s.tokens) };
  }

  /**
   * Spends up to `units` of a source's daily cap: granted units (fewer only at the cap), or
   * PENDING when its share is used up until the next write lands (then wait()).
   */
  spend(counter: string, units: number, cap: number, nowMs: number): number {
    let s = this.sources.get(counter);
    if (s === undefined) {
      if (this.sources.size >= MAX_SOURCES) this.forget(nowMs, true);
      s = { known: 0, unsynced: 0, syncing: 0, touchedMs: nowMs, tokens: 0, tokensAtMs: 0 };
      this.sources.set(counter, s);
    }
    s.touchedMs = nowMs;
    if (this.failingSinceMs !== null && nowMs - this.failingSinceMs >= this.graceMs) throw new AccountingUnavailable();
    const room = cap - s.known - s.unsynced;
    if (room <= 0) return 0;
    const share = Math.max(1, Math.min(EDGE_SHARE, Math.floor(cap / 64)));
    const given = Math.min(units, room);
    if (this.failingSinceMs === null && s.unsynced + given > share) {
      // The share is used up: wait for the write in flight, for up to the store's timeout (then,
      // as when failing, the cap against the last totals).
      if (this.sentMs < 0 || nowMs - this.sentMs < this.store.timeoutMs) return PENDING;
    }
    s.unsynced += given;
    this.dirty.add(counter);
    return given;
  }

  /** Gives back units spent but not used (a batch that answered fewer than it reserved). */
  refund(counter: string, units: number): void {
    const s = this.sources.get(counter);
    if (s === undefined || units <= 0) return;
    s.unsynced = Math.max(s.syncing, s.unsynced - units);
  }

  /** Lookups the source has used in its window: the store's total and what this thread owes it. */
  used(counter: string): number {
    const s = this.sources.get(counter);
    return s === undefined ? 0 : s.known + s.unsynced - s.syncing;
  }

  wait(wake: Wake): void {
    this.waiters.push(wake);
  }

  /** Sources whose answers are not yet written, counting a write in flight as one more. */
  get unwritten(): number {
    return this.dirty.size + (this.sentMs >= 0 ? 1 : 0);
  }

  /** Writes what was answered since the last write (one call), unless one is in flight. */
  private tick(nowMs: number): void {
    if (this.sentMs >= 0) {
      this.store.deliver();
      // Waiters of a write past the store's timeout may be answered now (see spend).
      if (this.sentMs >= 0 && nowMs - this.sentMs >= this.store.timeoutMs) this.wakeAll();
      return;
    }
    if (this.dirty.size === 0) {
      if (this.sources.size > 0 && nowMs % 10_000 < SYNC_MS) this.forget(nowMs, false);
      return;
    }
    const counters: string[] = [];
    const units: number[] = [];
    const sent: Source[] = [];
    for (const counter of this.dirty) {
      const s = this.sources.get(counter);
      this.dirty.delete(counter);
      if (s === undefined || s.unsynced === 0) continue;
      s.syncing = s.unsynced;
      counters.push(counter);
      units.push(s.unsynced);
      sent.push(s);
      if (counters.length >= SYNC_BATCH) break;
    }
    if (counters.length === 0) return;
    this.sentMs = nowMs;
    this.store.addLater(counters, units, (failure, totals) => {
      this.sentMs = -1;
      const now = Date.now();
      for (let i = 0; i < sent.length; i++) {
        const s = sent[i];
        if (failure === null) {
          s.known = totals[i];
          s.unsynced -= s.syncing;
        } else this.dirty.add(counters[i]);
        s.syncing = 0;
      }
      if (failure !== null) {
        this.failingSinceMs ??= now;
        this.onFailure(failure, now);
      } else if (this.failingSinceMs !== null) {
        this.failingSinceMs = null;
        this.onRecovery();
      }
      this.wakeAll();
    });
  }

  private wakeAll(): void {
    if (this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    wakeEach(waiters, this.onWakeFailure);
  }

  /** Forgets sources with nothing to write: idle ones, or (`all`) every one (a flood of sources). */
  private forget(nowMs: number, all: boolean): void {
    for (const [counter, s] of this.sources) {
      if (s.unsynced === 0 && (all || nowMs - s.touchedMs >= IDLE_MS)) this.sources.delete(counter);
    }
  }

  /** Writes what is still owed, waiting for it (graceful shutdown); false when it could not be. */
  close(write: (counter: string, units: number) => boolean): boolean {
    clearInterval(this.timer);
    let all = true;
    for (const [counter, s] of this.sources) {
      const owed = s.unsynced - s.syncing;
      if (owed > 0 && !write(counter, owed)) all = false;
    }
    return all;
  }
}
