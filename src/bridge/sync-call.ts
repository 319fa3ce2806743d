// A synchronous call into a thread of its own. The accounting store (Redis) and the control
// database (PostgreSQL) are called synchronously by code written for embedded stores; their
// clients are asynchronous. So each such client lives on a worker (sync-serve.ts), and the
// calling thread posts a request and blocks in Atomics.wait until the answer is on the port
// or the time is up. A loopback round trip costs tens of microseconds.
//
// A call that finds the server unreachable (no answer in time, or an error the owner counts as
// the server's) makes every call for the next FAIL_FAST_MS fail at once, so an unreachable
// server costs a blocked thread at most one timeout a second; then one call tries again.

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

export class SyncCaller<Op extends string> {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly signal = new Int32Array(new SharedArrayBuffer(4));
  private seq = 0;
  private downUntilMs = 0;
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
    this.port = port1;
    this.worker = new Worker(script, { workerData: { ...data, port: port2, signal: this.signal }, transferList: [port2] });
    this.worker.unref();
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
    const id = ++this.seq;
    Atomics.store(this.signal, 0, 0);
    this.port.postMessage({ id, op, args } satisfies SyncRequest<Op>);
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      // Replies are queued before the signal is raised: reading after each reset misses none.
      for (let m = receiveMessageOnPort(this.port); m !== undefined; m = receiveMessageOnPort(this.port)) {
        const r = m.message as SyncReply;
        if (r.id !== id) continue; // the answer to a call that timed out
        if ('error' in r) throw new SyncCallFailed(r.error, r.code);
        return r.value;
      }
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`no answer within ${timeoutMs} ms`);
      Atomics.wait(this.signal, 0, 0, left);
      Atomics.store(this.signal, 0, 0);
    }
  }

  async close(): Promise<void> {
    await this.worker.terminate();
    this.port.close();
  }
}
