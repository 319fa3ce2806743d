// What the batch route needs to have a batch answered: the pool itself on a single front-end
// thread, or its remote end on each of several (remote.ts).

import type { BatchTask } from './protocol.js';

export interface BatchRunner {
  /** True when a new batch would have to wait behind the queue's bound (answer 429). */
  readonly full: boolean;
  /**
   * Resolves with the framed outcome. Rejects with QueueFullError when full, or with the
   * worker's error once the retries are spent.
   */
  run(task: BatchTask): Promise<Uint8Array>;
  /** Shared memory for a batch's outcome, or null (see OutputSlots). */
  takeSlot(): SharedArrayBuffer | null;
  releaseSlot(slot: SharedArrayBuffer | null): void;
}
