// Messages between the main thread and its front-end threads (threads.ts, workers/frontend.ts).

import type { MessagePort } from 'node:worker_threads';
import type { Config } from '../config.js';
import type { LogFields } from '../log.js';
import type { KeyTally } from '../control/auth.js';

/** A serving index as it crosses threads: the memory is shared, nothing is copied. */
export interface IndexMessage {
  generation: number;
  buildId: string;
  shared: SharedArrayBuffer;
  loadedAt: string;
}

export interface FrontEndThreadData {
  config: Config;
  port: number;
  /** This thread's counters (Metrics) and the process's batch-body budget (BodyMemory). */
  metrics: SharedArrayBuffer;
  bodyMemory: SharedArrayBuffer;
  /** This thread's number: its slot in the shared counts (body memory, batches). */
  thread: number;
  threads: number;
  schedulerState: Float64Array | null;
  /** The process's OwedTable: what each thread owes the accounting store while it refuses writes. */
  owed: SharedArrayBuffer;
  /** The threads' key-change count (KeyCache): a thread that changed keys raises it. */
  keysEpoch: Int32Array;
  batchPort: MessagePort;
  /** BatchShares: the pool's capacity and every thread's count of batches in flight. */
  batchCapacity: number;
  batchCounts: SharedArrayBuffer;
  index: IndexMessage | null;
  /** The generation every thread serves (raised by the main thread once all have it). */
  generation: Int32Array;
}

export type ToThread = { type: 'index'; index: IndexMessage } | { type: 'drain'; graceMs: number } | { type: 'close' };

export type FromThread =
  | { type: 'listening'; port: number }
  | { type: 'failed'; reason: string }
  | { type: 'adopted'; generation: number }
  | { type: 'log'; level: 'info' | 'warn' | 'error'; msg: string; fields?: LogFields }
  | { type: 'drained'; clean: boolean }
  | { type: 'activity'; tallies: KeyTally[] }
  | { type: 'closed' };
