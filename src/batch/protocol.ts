// What the front end sends a batch worker. The index travels as its SharedArrayBuffer:
// posting it shares the memory (no copy); `generation` tells the worker when to re-wrap it.

export interface BatchTask {
  /** UTF-8 JSON request body (copied to the worker; at most MAX_BATCH_BODY_BYTES). */
  body: ArrayBuffer;
  tier: number;
  generation: number;
  /** The serving index, or null when none is loaded (every address answers 500). */
  index: SharedArrayBuffer | null;
  /** Distinct valid addresses the allowance lets this batch answer; the rest are 429 entries. */
  budget: number;
  /** Which 429 those entries carry: REFUSE_KEYLESS (daily cap) or REFUSE_PLAN (allowance). */
  refusal: number;
  /**
   * Where to write the framed outcome (reused between batches); the worker then answers with
   * its length. Null, or too small for this batch: the outcome comes back as a transferred buffer.
   */
  out: SharedArrayBuffer | null;
  /** The content coding the client accepts (content-coding.ts); the worker compresses the answer. */
  coding: number;
}

/** A task that only makes Piscina start missing workers (see BatchPool); answered with nothing. */
export const WARM_UP = 'warm-up';

export const REFUSE_KEYLESS = 0;
export const REFUSE_PLAN = 1;
