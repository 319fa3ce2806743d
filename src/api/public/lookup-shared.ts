// What the lookup apps of several front-end threads share: the lookup and batch routes both
// take it, so it lives apart from either.

/** Memory the lookup apps of several threads share (each made where absent). */
export interface LookupShared {
  /** This thread's counters, which the admin thread reads (Metrics). */
  metrics?: SharedArrayBuffer;
  /** The process's batch-body budget (BodyMemory), and this thread's slot in it. */
  bodyMemory?: SharedArrayBuffer;
  bodyMemorySlot?: number;
}
