// The worker side of sync-call.ts: answers each request on the port, then raises the shared
// signal so that the caller blocked in Atomics.wait wakes at once.

import { workerData, type MessagePort } from 'node:worker_threads';
import type { SyncReply, SyncRequest } from './sync-call.js';

/** This worker's data, as the caller gave it. */
export function syncData<T>(): T {
  return workerData as T;
}

export function serveSyncCalls<Op extends string>(answer: (r: SyncRequest<Op>) => Promise<unknown>): void {
  const { port, signal } = workerData as { port: MessagePort; signal: Int32Array };
  const reply = (m: SyncReply): void => {
    port.postMessage(m);
    Atomics.store(signal, 0, 1);
    Atomics.notify(signal, 0);
  };
  port.on('message', (r: SyncRequest<Op>) => {
    answer(r).then(
      (value) => reply({ id: r.id, value }),
      (e: unknown) => {
        const code = (e as { code?: unknown })?.code;
        reply({ id: r.id, error: e instanceof Error ? e.message || e.name : String(e), ...(typeof code === 'string' ? { code } : {}) });
      },
    );
  });
}
