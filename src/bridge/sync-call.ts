// A synchronous call into a thread of its own. The accounting store (Redis) and the control
// database (PostgreSQL) are called synchronously by code written for embedded stores; their
// clients are asynchronous. So each such client lives on a worker (sync-serve.ts), and the
// calling thread posts a request and blocks in Atomics.wait until the answer is on the port
// or the time is up. A loopback round trip costs tens of microseconds.
//
// A call that finds the server unreachable (no answer in time, or an error the owner counts as
// the server's) makes every call for the next FAIL_FAST_MS fail at once, so an unreachable
// server costs a blocked thread at most one timeout a second; then one call tries again. A
// call whose time ran out may still reach the server: the worker is told, and undoes it.
//
// The same worker can also take calls that do not block (`later`): posted on a second port and
// answered on the caller's event loop, for callers that must not wait on the network (the
// Meter refilling leases ahead of need).

import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';

export interface SyncRequest<Op extends string = string> {
  id: number;
  op: Op;
  args: unknown[];
}
export type SyncReply = { id: number; value: unknown } | { id: number; error: string; code?: string };

/** The worker answered with an error (its message and, where it has one, its code). */
export class SyncCallFailed extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/** The server is unreachable: no answer in time, or an error counted as the server's; or one of those within FAIL_FAST_MS. */
export class SyncCallDown extends Error {}

/** After a call found the server unreachable, calls fail at once for this long. */
export const FAIL_FAST_MS = 1000;

/**
 * The blocking call under way, in one shared integer: its id and who settled it. The caller
 * opens it; then either the worker marks it answered or the caller, its time up, marks it
 * given up, whichever comes first (compare-and-exchange), so the two never disagree on
 * whether the caller takes the answer.
 */
export const OPEN = 1;
export const ANSWERED = 2;
export const GIVEN_UP = 3;
/** Call ids wrap below this, so that id × 4 + state fits an Int32. */
const MAX_CALL_ID = 2 ** 29 - 1;
export const callState = (id: number, s: number): number => id * 4 + s;

export class SyncCaller<Op extends string> {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly signal = new Int32Array(new SharedArrayBuffer(4));
  /** Who settled the blocking call under way: see callState (shared with sync-serve.ts). */
  private readonly state = new Int32Array(new SharedArrayBuffer(4));
  private seq = 0;
  private downUntilMs = 0;
  private readonly latePort: MessagePort;
  private readonly replies = new Map<number, (error: string | null, value: unknown) => void>();
  private lateSeq = 0;
  private lastError = '';

  /**
   * Starts `script` (a module URL) with `data` plus the port and signal as its workerData.
   * `serverFault` says which of the worker's errors mean the server is unreachable (every one
   * unless told otherwise); the others are the call's own (SyncCallFailed).
   */
  constructor(
    script: URL,
    data: Record<string, unknown>,
    private readonly serverFault: (e: SyncCallFailed) => boolean = () => true,
  ) {
    const { port1, port2 } = new MessageChannel();
    const late = new MessageChannel();
    this.port = port1;
    this.latePort = late.port1;
    this.worker = new Worker(script, {
      workerData: { ...data, port: port2, latePort: late.port2, signal: this.signal, state: this.state },
      transferList: [port2, late.port2],
    });
    this.worker.unref();
    this.latePort.on('message', (r: SyncReply) => this.dispatch(r));
    this.latePort.unref();
  }

  private dispatch(r: SyncReply): void {
    const done = this.replies.get(r.id);
    if (done === undefined) return;
    this.replies.delete(r.id);
    if (this.replies.size === 0) this.latePort.unref();
    if ('error' in r) done(r.error, undefined);
    else done(null, r.value);
  }

  /**
   * Handles now the answers to `later` calls that have already come in (a busy event loop may
   * not have reached them yet): a caller judging how late a call is asks this first.
   */
  deliver(): void {
    for (let m = receiveMessageOnPort(this.latePort); m !== undefined; m = receiveMessageOnPort(this.latePort)) this.dispatch(m.message as SyncReply);
  }

  /**
   * Posts a call that does not block: `done` runs on this thread's event loop with the worker's
   * error message or its value. Calls still unanswered keep the loop alive; none has a
   * timeout of its own (the caller decides how long is too long, see `waiting`).
   */
  later(op: Op, args: unknown[], done: (error: string | null, value: unknown) => void): void {
    const id = ++this.lateSeq;
    if (this.replies.size === 0) this.latePort.ref();
    this.replies.set(id, done);
    this.latePort.postMessage({ id, op, args } satisfies SyncRequest<Op>);
  }

  /** Calls posted with `later` and not answered yet. */
  get waiting(): number {
    return this.replies.size;
  }

  /** The worker's answer; SyncCallFailed (the call's own error) or SyncCallDown otherwise. */
  call(op: Op, args: unknown[], timeoutMs: number): unknown {
    if (this.downUntilMs !== 0) {
      if (Date.now() < this.downUntilMs) throw new SyncCallDown(`unavailable (${this.lastError}); tried again within ${FAIL_FAST_MS} ms`);
      this.downUntilMs = 0;
    }
    try {
      return this.wait(op, args, timeoutMs);
    } catch (e) {
      if (e instanceof SyncCallFailed && !this.serverFault(e)) throw e;
      this.lastError = (e as Error).message;
      this.downUntilMs = Date.now() + FAIL_FAST_MS;
      throw new SyncCallDown(this.lastError);
    }
  }

  private wait(op: Op, args: unknown[], timeoutMs: number): unknown {
    this.seq = this.seq >= MAX_CALL_ID ? 1 : this.seq + 1;
    const id = this.seq;
    Atomics.store(this.signal, 0, 0);
    Atomics.store(this.state, 0, callState(id, OPEN));
    this.port.postMessage({ id, op, args } satisfies SyncRequest<Op>);
    let deadline = performance.now() + timeoutMs;
    let answered = false;
    for (;;) {
      // Replies are queued before the signal is raised: reading after each reset misses none.
      for (let m = receiveMessageOnPort(this.port); m !== undefined; m = receiveMessageOnPort(this.port)) {
        const r = m.message as SyncReply;
        if (r.id !== id) continue; // the answer to a call that timed out
        if ('error' in r) throw new SyncCallFailed(r.error, r.code);
        return r.value;
      }
      const left = deadline - performance.now();
      if (left <= 0) {
        if (answered) throw new Error(`answered, but the answer did not arrive within ${timeoutMs} ms more`);
        // Given up, unless the worker has settled it first: then its answer is on the way. Given
        // up, the call may still reach the server; the worker then undoes it, so that a call
        // that failed for its caller leaves nothing behind (sync-serve.ts).
        if (Atomics.compareExchange(this.state, 0, callState(id, OPEN), callState(id, GIVEN_UP)) === callState(id, OPEN))
          throw new Error(`no answer within ${timeoutMs} ms`);
        answered = true;
        deadline = performance.now() + timeoutMs;
        continue;
      }
      Atomics.wait(this.signal, 0, 0, left);
      Atomics.store(this.signal, 0, 0);
    }
  }

  async close(): Promise<void> {
    await this.worker.terminate();
    this.port.close();
    this.latePort.close();
    const unanswered = [...this.replies.values()];
    this.replies.clear();
    for (const done of unanswered) done('closed', undefined);
  }
}
