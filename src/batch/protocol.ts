// What the front end sends a batch worker. The index travels as its SharedArrayBuffer:
// posting it shares the memory (no copy); `generation` tells the worker when to re-wrap it.

export interface BatchTask {
  /** UTF-8 JSON request body (copied to the worker; at most MAX_BATCH_BODY_BYTES). */
  body: ArrayBuffer;
  tier: number;
  generation: number;
  /** The serving index, or null when none is loaded (every address answers 500). */
  index: SharedArrayBuffer | null;
}
