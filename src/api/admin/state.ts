// What the admin port reports of the process beside the index: the lifecycle and the front-end
// threads. The admin app and the overview both read it, so it lives apart from either.

import type { Metrics } from '../../http/metrics.js';

/** What readiness reports beyond the index: false once the service is shutting down. */
export interface Lifecycle {
  draining: boolean;
}

/** A front-end thread: listening on the public port, and serving the current build. */
export interface ThreadState {
  thread: number;
  listening: boolean;
  serving: boolean;
}

/** The front-end threads, where there are several (frontend/threads.ts). */
export interface ThreadsView {
  /** Threads not listening with the serving index. */
  notReady(): number;
  /** Each thread's state, for the console. */
  threadStates(): ThreadState[];
  /** Each thread's own counters. */
  threadMetrics(): readonly Metrics[];
}
