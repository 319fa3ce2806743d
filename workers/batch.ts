// Piscina worker: answers one POST /batch body against the shared index.

import { move } from 'piscina';
import { ERRORS } from '../src/wire/errors.js';
import { REFUSE_KEYLESS, WARM_UP, type BatchTask } from '../src/batch/protocol.js';
import { RangeIndex } from '../src/index/range-index.js';
import { answerBatch, compressOutcome } from '../src/lookup/batch.js';
import type { Coding } from '../src/wire/codings.js';

let generation = -1;
let index: RangeIndex | null = null;

const decoder = new TextDecoder();

const NOTHING = new Uint8Array(0);

/** The framed outcome, or its length when it was written into task.out. */
export default function answer(task: BatchTask | typeof WARM_UP): ArrayBufferView | number {
  if (task === WARM_UP) return NOTHING;
  if (task.generation !== generation) {
    // The front end validated this index before publishing it; wrapping is O(1).
    index = task.index ? new RangeIndex(new Uint8Array(task.index), { trusted: true }) : null;
    generation = task.generation;
  }
  const refusal = task.refusal === REFUSE_KEYLESS ? ERRORS.keylessCap : ERRORS.allowanceSpent;
  const into = task.out ? Buffer.from(task.out) : undefined;
  const frame = compressOutcome(answerBatch(decoder.decode(task.body), index, task.tier, task.budget, refusal, into), task.coding as Coding);
  if (task.out !== null && frame.buffer === task.out) return frame.byteLength;
  return move(frame) as ArrayBufferView;
}
