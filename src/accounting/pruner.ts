// Deletes, on a schedule, the counters and buckets that no longer count: without it every
// keyless source ever seen would keep a day counter and a token bucket for good. Any process
// on the data directory may prune; deleting what is stale is the same whoever does it.

import type { Plans, Rate } from '../model/plans.js';
import { reasonOf } from '../errors.js';
import type { Logger } from '../log.js';
import type { AccountingStore } from './accounting-store.js';

export const PRUNE_EVERY_MS = 60_000;
/** Monthly allowance counters are kept this many months (usage history for operators). */
const KEEP_MONTHS = 24;

/** How long an untouched bucket takes to be full again at the slowest refill of any plan. */
export function bucketRefillMs(plans: Plans): number {
  const rates: Rate[] = [...plans.byKey.values()].map((p) => p.rate);
  if (plans.keyless) rates.push(plans.keyless.rate);
  return Math.max(0, ...rates.map((r) => Math.ceil((r.burst / r.perSecond) * 1000))) + 1000;
}

/** The day and month before which counters are stale at `nowMs` (yesterday's day counters stay). */
export function staleBefore(nowMs: number): { day: string; month: string } {
  const day = new Date(nowMs - 86_400_000).toISOString().slice(0, 10);
  const d = new Date(nowMs);
  const month = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - KEEP_MONTHS, 1)).toISOString().slice(0, 7);
  return { day, month };
}

export class Pruner {
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: AccountingStore,
    private readonly refillMs: number,
    private readonly log: Logger,
    everyMs = PRUNE_EVERY_MS,
  ) {
    this.timer = setInterval(() => this.run(Date.now()), everyMs);
    this.timer.unref();
  }

  run(nowMs: number): number {
    const { day, month } = staleBefore(nowMs);
    try {
      const n = this.store.prune(day, month, this.refillMs, nowMs);
      if (n > 0) this.log.info('accounting pruned', { deleted: n });
      return n;
    } catch (e) {
      this.log.warn('accounting prune failed; retried later', { reason: reasonOf(e) });
      return 0;
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
