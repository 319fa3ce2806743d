// What the meters answer a request (meter.ts for leases, edge-counts.ts for keyless sources at
// the edge), shared by both and by the gate that reads them.

import { IpsiftError } from '../errors.js';

export interface RateDecision {
  ok: boolean;
  /** Whole seconds to wait when refused (≥ 1). */
  retryAfter: number;
  /** Estimated tokens left in the bucket, for RateLimit-Remaining. */
  remaining: number;
}

/** take()'s answer while the token lease is being refilled: wait(), then take again. */
export const PENDING_TOKENS: RateDecision = Object.freeze({ ok: false, retryAfter: 0, remaining: 0 });

/** spend()'s answer while the lease is being refilled: wait(), then spend again. */
export const PENDING = -1;

/** Handles a request again once the lease it waits on has changed. */
export type Wake = () => void;

/** Wakes every request of `waiters`; one that throws is reported and the others still run. */
export function wakeEach(waiters: Wake[], failed: (e: unknown) => void): void {
  for (const wake of waiters) {
    try {
      wake();
    } catch (e) {
      failed(e);
    }
  }
}

/** A refill in flight this long lets its waiting requests be answered from memory. */
export const LATE_MS = 20;

/** The store has not taken a write for longer than the grace period. */
export class AccountingUnavailable extends IpsiftError {
  constructor(options?: { cause?: unknown }) {
    super('ACCOUNTING_UNAVAILABLE', 'the accounting store cannot be written', options);
  }
}
