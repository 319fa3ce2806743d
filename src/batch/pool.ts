// The batch worker pool: a fixed number of Piscina workers and a bounded queue.
//
// A full queue is an explicit answer (the caller turns it into 429 + Retry-After), never
// unbounded growth. A worker that dies is replaced by Piscina; its task is tried again
// on another worker (twice at most), since a lookup is pure and answering it twice is harmless.
//
// Piscina alone replaces a dead worker only if it died after starting up, and then never again
// once any worker has died during start-up; otherwise it spawns only when work finds no free
// worker. So the pool watches for lost workers itself and restores its size, backing off while
// replacements keep dying, so that one crash never leaves the pool smaller for good.

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { WARM_UP, type BatchTask } from './protocol.js';
import type { BatchRunner } from './runner.js';
import { OutputSlots } from './slots.js';
import { IpsiftError } from '../errors.js';

export interface BatchPoolOptions {
  workers: number;
  maxQueue: number;
  /** Further attempts after a worker failure (default 2). */
  retries?: number;
  /** The worker script (default: workers/batch-entry.cjs, which imports workers/batch.js). */
  worker?: string;
  /**
   * How long one batch may take, queueing, retries and all (default 10 s; a batch of 1000
   * takes about a millisecond): past it the batch is given up (its worker, if it has one, is
   * stopped) and answered with every address 500, so a persistent worker fault can never
   * leave a batch unanswered.
   */
  timeoutMs?: number;
}

export class BatchTimeoutError extends IpsiftError {
  constructor(ms: number) {
    super('BATCH_TIMEOUT', `batch not answered within ${ms} ms`);
  }
}

export class QueueFullError extends IpsiftError {
  constructor() {
    super('QUEUE_FULL', 'batch queue is full: retry after a second, or raise BATCH_QUEUE');
  }
}

/**
 * One batch's deadline as the signal Piscina stops it by. Piscina takes an emitter's
 * once/off as well as an AbortSignal's listeners; an AbortController per batch, with the
 * EventTarget listener Piscina adds to its signal, took about 7 % of the front-end thread's
 * samples on batches (perf, Node 20).
 */
class Deadline {
  aborted = false;
  reason: unknown = undefined;
  private listener: (() => void) | null = null;

  constructor(readonly at: number) {}

  once(_: 'abort', listener: () => void): void {
    this.listener = listener;
  }

  off(): void {
    this.listener = null;
  }

  /** Piscina's name for off (its types say off, its code calls removeListener). */
  removeListener(): void {
    this.off();
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listener = this.listener;
    this.listener = null;
    listener?.();
  }
}

const REFILL_FIRST_MS = 50;
const REFILL_MAX_MS = 5_000;

export const WORKER_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../workers/batch-entry.cjs');

export class BatchPool implements BatchRunner {
  private readonly pool: Piscina<BatchTask | typeof WARM_UP, ArrayBufferView | number>;
  private readonly size: number;
  private readonly maxQueue: number;
  private readonly retries: number;
  private readonly timeoutMs: number;
  /** Batches under way, each by the deadline it is given up at. */
  private readonly deadlines = new Set<Deadline>();
  private deadlineTimer: NodeJS.Timeout | null = null;
  /** How often deadlines are checked: a batch is given up at most this late. */
  private readonly deadlineCheckMs: number;
  /** Tasks given to Piscina and not yet settled (running + queued). */
  private inFlight = 0;
  workerFailures = 0;
  private closing = false;
  private refillTimer: NodeJS.Timeout | null = null;
  private refillDelayMs = REFILL_FIRST_MS;
  private readonly slots: OutputSlots;

  constructor(options: BatchPoolOptions) {
    this.size = options.workers;
    // Enough for every worker's running batch and the next one waiting for it.
    this.slots = new OutputSlots(2 * options.workers + 2);
    this.maxQueue = options.maxQueue;
    this.retries = options.retries ?? 2;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.deadlineCheckMs = Math.max(10, Math.min(1000, this.timeoutMs / 10));
    this.pool = new Piscina({
      filename: options.worker ?? WORKER_FILE,
      minThreads: options.workers,
      maxThreads: options.workers,
      idleTimeout: 2 ** 31 - 1,
      // Our own bound (below) answers before Piscina's would throw.
      maxQueue: options.maxQueue + options.workers * (this.retries + 1),
      concurrentTasksPerWorker: 1,
    });
    this.pool.on('workerDestroy', () => this.scheduleRefill());
  }

  get workers(): readonly { threadId: number; terminate(): Promise<number> }[] {
    return this.pool.threads;
  }

  get queued(): number {
    return this.pool.queueSize;
  }

  /** Batches a worker is answering now. */
  get running(): number {
    return Math.max(0, Math.min(this.pool.threads.length, this.inFlight - this.pool.queueSize));
  }

  /** The share of its time the pool's workers have spent answering since it started (0..1). */
  get utilization(): number {
    return this.pool.utilization;
  }

  /** Batches running and waiting at most: the workers' and the queue's. */
  get capacity(): number {
    return this.maxQueue + this.size;
  }

  /** True when a new batch would have to wait behind maxQueue others. */
  get full(): boolean {
    return this.inFlight >= this.maxQueue + this.pool.threads.length;
  }

  /**
   * Runs the task and resolves with the framed
   * outcome. Rejects with QueueFullError when full, or with the worker's error after the
   * retries are spent.
   */
  async run(task: BatchTask): Promise<Uint8Array> {
    if (this.full) throw new QueueFullError();
    this.inFlight++;
    const deadline = Date.now() + this.timeoutMs;
    try {
      for (let attempt = 0; ; attempt++) {
        const left = deadline - Date.now();
        if (left <= 0) throw new BatchTimeoutError(this.timeoutMs);
        const signal = new Deadline(deadline);
        this.deadlines.add(signal);
        this.watchDeadlines();
        try {
          // The body is copied, not transferred: Piscina may hand a task whose worker died
          // before taking it to another worker, and a transferred buffer would arrive empty.
          const out = await this.pool.run(task, { signal });
          // A number: the outcome's length, written at the start of task.out.
          if (typeof out === 'number') return new Uint8Array(task.out!, 0, out);
          return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
        } catch (e) {
          this.workerFailures++;
          if (attempt >= this.retries || Date.now() >= deadline) throw e;
          // Let Piscina see the worker's exit first, so the retry goes to a live one.
          await new Promise((r) => setTimeout(r, 1));
        } finally {
          this.deadlines.delete(signal);
        }
      }
    } finally {
      this.inFlight--;
    }
  }

  /**
   * Gives up the batches past their deadline, with one timer for all of them while any runs
   * (AbortSignal.timeout per batch cost about 10 µs on Node 20, measured).
   */
  private watchDeadlines(): void {
    if (this.deadlineTimer !== null) return;
    this.deadlineTimer = setInterval(() => {
      const now = Date.now();
      for (const signal of this.deadlines) {
        if (now < signal.at) continue;
        this.deadlines.delete(signal);
        signal.abort(new BatchTimeoutError(this.timeoutMs));
      }
      if (this.deadlines.size === 0 && this.deadlineTimer !== null) {
        clearInterval(this.deadlineTimer);
        this.deadlineTimer = null;
      }
    }, this.deadlineCheckMs);
    this.deadlineTimer.unref();
  }

  takeSlot(): SharedArrayBuffer | null {
    return this.slots.take();
  }

  releaseSlot(slot: SharedArrayBuffer | null): void {
    this.slots.release(slot);
  }

  async close(): Promise<void> {
    this.closing = true;
    if (this.refillTimer) clearTimeout(this.refillTimer);
    if (this.deadlineTimer) clearInterval(this.deadlineTimer);
    this.deadlineTimer = null;
    // Let workers that are still starting finish first (a warm-up task each answers once it
    // has), for 2 s at most, so that none is stopped half-loaded. (The CommonJS entry,
    // workers/batch-entry.cts, already keeps such a stop from being Node 20's fatal abort.)
    const started = Promise.allSettled(Array.from({ length: this.size }, () => this.pool.run(WARM_UP)));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([started, new Promise((r) => (timer = setTimeout(r, 2000)))]);
    clearTimeout(timer);
    await this.pool.destroy();
  }

  private scheduleRefill(): void {
    if (this.closing || this.refillTimer) return;
    this.refillTimer = setTimeout(() => this.refill(), this.refillDelayMs);
    this.refillTimer.unref();
  }

  /**
   * Piscina starts a worker for a task that finds every worker busy, so as many no-op tasks
   * at once as the pool should have workers bring it back to size. Checked again later, with
   * a longer wait each time, until the pool is whole.
   */
  private refill(): void {
    this.refillTimer = null;
    if (this.closing) return;
    if (this.pool.threads.length >= this.size) {
      this.refillDelayMs = REFILL_FIRST_MS;
      return;
    }
    for (let i = 0; i < this.size; i++) this.pool.run(WARM_UP).catch(() => {});
    this.refillDelayMs = Math.min(this.refillDelayMs * 2, REFILL_MAX_MS);
    this.scheduleRefill();
  }
}
