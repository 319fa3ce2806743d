// The worker side of sync-call.ts: answers each request on the port, then raises the shared
// signal so that the caller blocked in Atomics.wait wakes at once. Calls that do not block
// come on a port of their own and are answered there, with no signal.

import { workerData, type MessagePort } from 'node:worker_threads';
import type { SyncReply, SyncRequest } from './sync-call.js';

/** This worker's data, as the caller gave it. */
export function syncData<T>(): T {
  return workerData as T;
}

export function serveSyncCalls<Op extends string>(answer: (r: SyncRequest<Op>) => Promise<unknown>): void {
  const { port, latePort, signal } = workerData as { port: MessagePort; latePort: MessagePort; signal: Int32Array };
  const serve = (on: MessagePort, reply: (m: SyncReply) => void): void => {
    on.on('message', (r: SyncRequest<Op>) => {
      answer(r).then(
        (value) => reply({ id: r.id, value }),
        (e: unknown) => {
          const code = (e as { code?: unknown })?.code;
          reply({ id: r.id, error: e instanceof Error ? e.message || e.name : String(e), ...(typeof code === 'string' ? { code } : {}) });
        },
      );
    });
  };
  serve(port, (m) => {
    port.postMessage(m);
    Atomics.store(signal, 0, 1);
    Atomics.notify(signal, 0);
  });
  serve(latePort, (m) => latePort.postMessage(m));
}
