// The front-end threads (FRONTEND_THREADS > 1): N threads, each a lookup front end on the same
// port, all reading the main thread's index (one copy, shared), counting into the same
// accounting store and sending batches to the main thread's pool, each within its fair
// share of it. The main thread keeps the admin port, the pool, the index and the scheduler:
// nothing long runs beside a lookup thread's requests. A thread that dies is replaced.

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, Worker } from 'node:worker_threads';
import type { BatchPool } from '../batch/pool.js';
import { BatchShares, serveBatches } from '../batch/remote.js';
import type { Config } from '../config.js';
import { BodyMemory } from '../http/body.js';
import type { ThreadState, ThreadsView } from '../api/admin/state.js';
import { Metrics } from '../http/metrics.js';
import type { IndexHolder, ServingIndex } from '../index/loader.js';
import type { Logger } from '../log.js';
import type { KeyTally } from '../control/auth.js';
import { freePort } from '../startup.js';
import type { FrontEndThreadData, FromThread, IndexMessage, ToThread } from './protocol.js';

const ENTRY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../workers/frontend-entry.cjs');
/** How long a thread may take to close before it is stopped. */
const CLOSE_WAIT_MS = 5_000;
/** How long a swap waits for a thread to prepare the new index (a stuck one is left behind). */
const SWAP_WAIT_MS = 5_000;
const RESPAWN_FIRST_MS = 100;
const RESPAWN_MAX_MS = 10_000;

export interface ThreadsSetup {
  config: Config;
  threads: number;
  holder: IndexHolder;
  pool: BatchPool;
  schedulerState: Float64Array | null;
  /** What the threads owe the accounting store while it refuses writes (OwedTable). */
  owed: SharedArrayBuffer;
  log: Logger;
  /** What the threads' callers counted, handed over every HARVEST_MS (the key activity log). */
  activity?: (tallies: KeyTally[]) => void;
  /** Finds a free port when config.port is 0 (startup.ts's freePort unless given). */
  freePort?: (host: string) => Promise<number>;
}

const indexMessage = (s: ServingIndex | null): IndexMessage | null =>
  s && { generation: s.generation, buildId: s.buildId, shared: s.shared, loadedAt: s.loadedAt.toISOString() };

/** One thread's place: its worker (replaced when it dies), counters and state. */
class Slot {
  worker: Worker | null = null;
  listening = false;
  adopted = 0;
  /** Replies the main thread waits for, by type. */
  readonly waiters = new Map<string, (m: FromThread) => void>();
  readonly metrics = new Metrics();
  respawnMs = RESPAWN_FIRST_MS;

  constructor(readonly n: number) {}

  send(m: ToThread): void {
    this.worker?.postMessage(m);
  }

  /** The next reply of a type (or null when the thread exits first). */
  next(type: FromThread['type']): Promise<FromThread | null> {
    const worker = this.worker;
    if (!worker) return Promise.resolve(null);
    return new Promise((resolve) => {
      const exit = (): void => {
        this.waiters.delete(type);
        resolve(null);
      };
      worker.once('exit', exit);
      this.waiters.set(type, (m) => {
        worker.off('exit', exit);
        resolve(m);
      });
    });
  }
}

/** Free ports tried when another process takes the one found before the threads bind it. */
const FREE_PORT_TRIES = 3;

export class FrontEndThreads implements ThreadsView {
  private readonly slots: Slot[];
  private readonly bodyMemory: BodyMemory;
  private readonly batchShares: BatchShares;
  /** The index generation the threads serve: raised once every thread has prepared it. */
  private readonly generation = new Int32Array(new SharedArrayBuffer(4));
  /** Raised by a thread that changed keys: every thread's key cache starts afresh (KeyCache). */
  private readonly keysEpoch = new Int32Array(new SharedArrayBuffer(4));
  private closing = false;
  /** Every thread listened once: from then on, one that exits is replaced (while starting, its exit is the start's failure). */
  private started = false;
  port = 0;

  private constructor(private readonly s: ThreadsSetup) {
    this.slots = Array.from({ length: s.threads }, (_, n) => new Slot(n));
    this.bodyMemory = new BodyMemory(s.config.batchBodyMemoryBytes, BodyMemory.sharedFor(s.threads));
    this.batchShares = new BatchShares(s.pool.capacity, s.threads);
    this.generation[0] = s.holder.current?.generation ?? 0;
    s.holder.onSwap((serving) => void this.swap(serving));
  }

  /**
   * Starts every thread (on a free port when config.port is 0). Throws the first failure. A
   * free port is found before the threads bind it, so another process can take it in between:
   * then the threads stop and start again on another, up to FREE_PORT_TRIES times.
   */
  static async start(s: ThreadsSetup): Promise<FrontEndThreads> {
    const t = new FrontEndThreads(s);
    for (let attempt = 1; ; attempt++) {
      try {
        t.port = s.config.port === 0 ? await (s.freePort ?? freePort)(s.config.host) : s.config.port;
        await Promise.all(t.slots.map((slot) => t.startThread(slot, t.port)));
        t.started = true;
        return t;
      } catch (e) {
        await t.close();
        const taken = s.config.port === 0 && e instanceof Error && e.message.startsWith('cannot listen');
        if (!taken || attempt === FREE_PORT_TRIES) throw e;
        s.log.warn('the free port was taken before the front-end threads bound it; trying another', { port: t.port });
        t.closing = false;
      }
    }
  }

  /** Every thread's counters, added up; the batch-body memory is the process's. */
  metrics(): Metrics {
    return Metrics.sum(
      this.slots.map((s) => s.metrics),
      this.bodyMemory,
    );
  }

  threadMetrics(): readonly Metrics[] {
    return this.slots.map((s) => s.metrics);
  }

  /** Each thread's worker (null while one is being replaced): for tests that stop one. */
  workers(): readonly (Worker | null)[] {
    return this.slots.map((s) => s.worker);
  }

  /** Each thread's state: listening, and serving the holder's index. */
  threadStates(): ThreadState[] {
    const g = this.s.holder.current?.generation ?? 0;
    const raised = Atomics.load(this.generation, 0) === g;
    return this.slots.map((s) => ({ thread: s.n, listening: s.listening, serving: raised && s.listening && s.adopted === g }));
  }

  /** Threads not listening, or not yet serving the holder's index. */
  notReady(): number {
    return this.threadStates().filter((t) => !t.serving).length;
  }

  /** Key changes the threads have seen, made through the API or found by a poll (each empties every thread's key cache). */
  get keyChanges(): number {
    return Atomics.load(this.keysEpoch, 0);
  }

  /** Batches, downloads and answers under way on every thread (for the drain's log). */
  get inFlight(): number {
    return this.slots.reduce((n, s) => n + s.metrics.inFlight, 0);
  }

  /** Every thread prepares the new index; then all serve it from the same moment. */
  private async swap(serving: ServingIndex): Promise<void> {
    await Promise.all(
      this.slots.map(async (slot) => {
        if (!slot.worker || slot.adopted >= serving.generation) return;
        const adopted = slot.next('adopted');
        slot.send({ type: 'index', index: indexMessage(serving)! });
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([adopted, new Promise((r) => (timer = setTimeout(r, SWAP_WAIT_MS)))]);
        clearTimeout(timer);
      }),
    );
    // A later swap may have started meanwhile: never go back to an older generation.
    if (this.s.holder.current === serving) Atomics.store(this.generation, 0, serving.generation);
  }

  private startThread(slot: Slot, port: number): Promise<number> {
    const { config, holder, pool, schedulerState, log, owed } = this.s;
    const batches = new MessageChannel();
    serveBatches(pool, batches.port1);
    const data: FrontEndThreadData = {
      config,
      port,
      metrics: slot.metrics.shared,
      bodyMemory: this.bodyMemory.shared,
      thread: slot.n,
      threads: this.slots.length,
      schedulerState,
      owed,
      batchPort: batches.port2,
      batchCapacity: this.batchShares.capacity,
      batchCounts: this.batchShares.counts.buffer as SharedArrayBuffer,
      index: indexMessage(holder.current),
      generation: this.generation,
      keysEpoch: this.keysEpoch,
    };
    const worker = new Worker(ENTRY, { workerData: data, transferList: [batches.port2] });
    slot.worker = worker;
    slot.listening = false;
    slot.adopted = 0;
    worker.on('message', (m: FromThread) => {
      if (m.type === 'log') return log[m.level](m.msg, { thread: slot.n, ...m.fields });
      if (m.type === 'activity') return this.s.activity?.(m.tallies);
      if (m.type === 'adopted') slot.adopted = m.generation;
      if (m.type === 'listening') slot.listening = true;
      const waiter = slot.waiters.get(m.type === 'failed' ? 'listening' : m.type);
      slot.waiters.delete(m.type === 'failed' ? 'listening' : m.type);
      waiter?.(m);
    });
    worker.on('error', (e) => log.error('front-end thread failed', { thread: slot.n, reason: e.message }));
    worker.on('exit', (code) => {
      batches.port1.close();
      if (slot.worker !== worker) return;
      slot.worker = null;
      slot.listening = false;
      // What the dead thread held is gone with it.
      slot.metrics.inFlight = 0;
      this.bodyMemory.clearSlot(slot.n);
      this.batchShares.clear(slot.n);
      if (this.closing || !this.started) return;
      log.error('front-end thread exited; starting another', { thread: slot.n, code, in_ms: slot.respawnMs });
      const wait = slot.respawnMs;
      slot.respawnMs = Math.min(slot.respawnMs * 2, RESPAWN_MAX_MS);
      setTimeout(() => {
        if (!this.closing)
          this.startThread(slot, this.port).then(
            () => (slot.respawnMs = RESPAWN_FIRST_MS),
            (e: Error) => log.error('front-end thread did not start', { thread: slot.n, reason: e.message }),
          );
      }, wait).unref();
    });
    return slot.next('listening').then((m) => {
      if (m?.type === 'listening') return m.port;
      throw new Error(m?.type === 'failed' ? m.reason : 'a front-end thread exited while starting');
    });
  }

  /** Each thread stops taking connections and finishes what it has (up to graceMs). */
  async drain(graceMs: number): Promise<boolean> {
    const replies = await Promise.all(
      this.slots.map((slot) => {
        const reply = slot.next('drained');
        slot.send({ type: 'drain', graceMs });
        return reply;
      }),
    );
    return replies.every((m) => m === null || (m.type === 'drained' && m.clean));
  }

  /** Closes every thread: its connections, its accounting (leases written back), its stores. */
  async close(waitMs = CLOSE_WAIT_MS): Promise<void> {
    this.closing = true;
    await Promise.all(
      this.slots.map(async (slot) => {
        const worker = slot.worker;
        if (!worker) return;
        const exited = new Promise((r) => worker.once('exit', r));
        slot.send({ type: 'close' });
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([exited, new Promise((r) => (timer = setTimeout(r, waitMs)))]);
        clearTimeout(timer);
        await worker.terminate();
      }),
    );
  }
}
