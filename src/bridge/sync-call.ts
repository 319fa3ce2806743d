// A synchronous call into a thread of its own. The accounting store (Redis) and the control
// database (PostgreSQL) are called synchronously by code written for embedded stores; their
// clients are asynchronous. So each such client lives on a worker (sync-serve.ts), and the
// calling thread posts a request and blocks in Atomics.wait until the answer is on the port
// or the time is up. A loopback round trip costs tens of microseconds.

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

/** No answer within the time given. */
export class SyncCallTimedOut extends Error {}

export class SyncCaller<Op extends string> {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly signal = new Int32Array(new SharedArrayBuffer(4));
  private seq = 0;

  /** Starts `script` (a module URL) with `data` plus the port and signal as its workerData. */
  constructor(script: URL, data: Record<string, unknown>) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(script, { workerData: { ...data, port: port2, signal: this.signal }, transferList: [port2] });
    this.worker.unref();
  }

  /** The worker's answer; SyncCallFailed or SyncCallTimedOut otherwise. */
  call(op: Op, args: unknown[], timeoutMs: number): unknown {
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
      if (left <= 0) throw new SyncCallTimedOut(`no answer within ${timeoutMs} ms`);
      Atomics.wait(this.signal, 0, 0, left);
      Atomics.store(this.signal, 0, 0);
    }
  }

  async close(): Promise<void> {
    await this.worker.terminate();
    this.port.close();
  }
}
