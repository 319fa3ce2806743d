// The worker side of sync-call.ts: answers each request on the port, then raises the shared
// signal so that the caller blocked in Atomics.wait wakes at once. Calls that do not block
// come on a port of their own and are answered there, with no signal.
//
// A blocking call its caller gave up on (its timeout passed) failed as far as the caller
// knows, so it must leave nothing behind: one not started yet is skipped, and one that was
// carried out anyway is undone by the owner's `undo` (a reservation given back), or the caller
// would count it a second time when it tries again.

import { workerData, type MessagePort } from 'node:worker_threads';
import { ANSWERED, OPEN, callState, type SyncReply, type SyncRequest } from './sync-call.js';

/** This worker's data, as the caller gave it. */
export function syncData<T>(): T {
  return workerData as T;
}

/** Reverses a blocking call that was carried out after its caller gave up on it. */
export type Undo<Op extends string> = (r: SyncRequest<Op>, value: unknown) => Promise<unknown>;

export function serveSyncCalls<Op extends string>(answer: (r: SyncRequest<Op>) => Promise<unknown>, undo?: Undo<Op>): void {
  const { port, latePort, signal, state } = workerData as { port: MessagePort; latePort: MessagePort; signal: Int32Array; state: Int32Array };
  /** Whether the caller still waits for this call (it is the one open). */
  const open = (r: SyncRequest<Op>): boolean => Atomics.load(state, 0) === callState(r.id, OPEN);
  /** Marks the call answered; false when the caller had given up on it first. */
  const settle = (r: SyncRequest<Op>): boolean => Atomics.compareExchange(state, 0, callState(r.id, OPEN), callState(r.id, ANSWERED)) === callState(r.id, OPEN);
  const fail = (r: SyncRequest<Op>, e: unknown): SyncReply => {
    const code = (e as { code?: unknown })?.code;
    return { id: r.id, error: e instanceof Error ? e.message || e.name : String(e), ...(typeof code === 'string' ? { code } : {}) };
  };
  port.on('message', (r: SyncRequest<Op>) => {
    const reply = (m: SyncReply): void => {
      port.postMessage(m);
      Atomics.store(signal, 0, 1);
      Atomics.notify(signal, 0);
    };
    if (!open(r)) return; // given up before it started: never carried out
    answer(r).then(
      (value) => {
        if (settle(r)) reply({ id: r.id, value });
        else undo?.(r, value).catch(() => {}); // the server is failing again: nothing more to do
      },
      (e: unknown) => {
        if (settle(r)) reply(fail(r, e));
      },
    );
  });
  latePort.on('message', (r: SyncRequest<Op>) => {
    answer(r).then(
      (value) => latePort.postMessage({ id: r.id, value } satisfies SyncReply),
      (e: unknown) => latePort.postMessage(fail(r, e)),
    );
  });
}
