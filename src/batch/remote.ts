// The batch pool across front-end threads: one Piscina pool, on the main thread, answers the
// batches of every thread. Each thread holds a MessagePort to it and counts its batches in
// shared memory (BatchShares): a thread may use the pool's capacity (running plus queued)
// freely, except for a reserve kept for each other thread, so a busy thread uses what the
// others leave idle and still no thread's clients can fill the queue for the others. A task
// travels as it would to a worker: the body is copied, the index and the output slot are
// shared memory.

import type { MessagePort } from 'node:worker_threads';
import { type BatchPool, QueueFullError } from './pool.js';
import type { BatchTask } from './protocol.js';
import type { BatchRunner } from './runner.js';
import { OutputSlots } from './slots.js';

interface Request {
  id: number;
  task: BatchTask;
}

/** The outcome's length in task.out, the outcome itself, or why there is none. */
type Reply = { id: number; length: number } | { id: number; bytes: Uint8Array } | { id: number; full: true } | { id: number; error: string };

/** Batches in flight per front-end thread, in shared memory, and who may send another. */
export class BatchShares {
  readonly counts: Int32Array;
  /** What each thread can always have in flight, whatever the others do. */
  readonly reserve: number;

  constructor(
    readonly capacity: number,
    threads: number,
    shared = new SharedArrayBuffer(4 * threads),
  ) {
    this.counts = new Int32Array(shared);
    // Half of an even split is held for each thread; the rest goes to whoever asks first.
    this.reserve = Math.max(1, Math.floor(capacity / threads / 2));
  }

  /** Whether thread `me` may send another batch now. */
  admits(me: number): boolean {
    const mine = Atomics.load(this.counts, me);
    if (mine < this.reserve) return true;
    let total = 0;
    let heldForOthers = 0;
    for (let k = 0; k < this.counts.length; k++) {
      const n = Atomics.load(this.counts, k);
      total += n;
      if (k !== me) heldForOthers += Math.max(0, this.reserve - n);
    }
    return total < this.capacity - heldForOthers;
  }

  /** Forgets what a dead thread had in flight. */
  clear(thread: number): void {
    Atomics.store(this.counts, thread, 0);
  }
}

/** Main thread: answers one front-end thread's batches on `port` with the pool. */
export function serveBatches(pool: BatchPool, port: MessagePort): void {
  port.on('message', (m: Request) => {
    // The threads keep within the capacity (BatchShares); this is for their races.
    if (pool.full) return port.postMessage({ id: m.id, full: true } satisfies Reply);
    pool.run(m.task).then(
      (out) => {
        if (m.task.out !== null && out.buffer === m.task.out) port.postMessage({ id: m.id, length: out.byteLength } satisfies Reply);
        else port.postMessage({ id: m.id, bytes: out } satisfies Reply, [out.buffer as ArrayBuffer]);
      },
      (e: unknown) => {
        if (e instanceof QueueFullError) port.postMessage({ id: m.id, full: true } satisfies Reply);
        else port.postMessage({ id: m.id, error: e instanceof Error ? e.message : String(e) } satisfies Reply);
      },
    );
  });
}

interface Waiting {
  resolve(out: Uint8Array): void;
  reject(e: Error): void;
  out: SharedArrayBuffer | null;
}

/** A front-end thread's end of serveBatches. */
export class RemoteBatchPool implements BatchRunner {
  private nextId = 1;
  private readonly waiting = new Map<number, Waiting>();
  private readonly slots: OutputSlots;

  constructor(
    private readonly port: MessagePort,
    private readonly shares: BatchShares,
    private readonly me: number,
  ) {
    // As the pool keeps: a slot for each batch running or next in line (more get their own buffer).
    this.slots = new OutputSlots(Math.min(shares.reserve, 8) + 2);
    port.on('message', (m: Reply) => this.settle(m));
  }

  get full(): boolean {
    return !this.shares.admits(this.me);
  }

  run(task: BatchTask): Promise<Uint8Array> {
    if (this.full) return Promise.reject(new QueueFullError());
    const id = this.nextId++;
    Atomics.add(this.shares.counts, this.me, 1);
    return new Promise<Uint8Array>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, out: task.out });
      this.port.postMessage({ id, task } satisfies Request);
    });
  }

  private settle(m: Reply): void {
    const w = this.waiting.get(m.id);
    if (!w) return;
    this.waiting.delete(m.id);
    Atomics.sub(this.shares.counts, this.me, 1);
    if ('length' in m) w.resolve(new Uint8Array(w.out!, 0, m.length));
    else if ('bytes' in m) w.resolve(m.bytes);
    else if ('full' in m) w.reject(new QueueFullError());
    else w.reject(new Error(m.error));
  }

  takeSlot(): SharedArrayBuffer | null {
    return this.slots.take();
  }

  releaseSlot(slot: SharedArrayBuffer | null): void {
    this.slots.release(slot);
  }

  close(): void {
    for (const w of this.waiting.values()) w.reject(new Error('the front end is closing'));
    Atomics.sub(this.shares.counts, this.me, this.waiting.size);
    this.waiting.clear();
    this.port.close();
  }
}
