// A front-end thread: one lookup front end (src/frontend/front-end.ts) listening beside the
// others on the public port, serving the index the main thread sends it.

import { parentPort, workerData } from 'node:worker_threads';
import { BatchShares, RemoteBatchPool } from '../src/batch/remote.js';
import { startFrontEnd, type FrontEnd } from '../src/frontend/front-end.js';
import type { FrontEndThreadData, FromThread, IndexMessage, ToThread } from '../src/frontend/protocol.js';
import { openServer } from '../src/http/server/open.js';
import type { IndexSource, ServingIndex } from '../src/index/loader.js';
import { RangeIndex } from '../src/index/range-index.js';
import { structuredWarnings, type Logger } from '../src/log.js';

const data = workerData as FrontEndThreadData;
const port = parentPort!;
const send = (m: FromThread): void => port.postMessage(m);

/**
 * The main thread's IndexHolder, as this thread sees it. A new index is prepared when it
 * arrives and served once the main thread raises the shared generation, which it does when
 * every thread has it: a swap is one moment for all threads, so no client sees the new build
 * on one thread and then the old one on another.
 */
class IndexView implements IndexSource {
  private serving: ServingIndex | null = null;
  private prepared: ServingIndex | null = null;

  constructor(private readonly generation: Int32Array) {}

  get current(): ServingIndex | null {
    if (this.prepared !== null && Atomics.load(this.generation, 0) === this.prepared.generation) {
      this.serving = this.prepared;
      this.prepared = null;
    }
    return this.serving;
  }

  prepare(m: IndexMessage | null): void {
    if (m === null) return;
    // The main thread checked this index when it loaded it; wrapping it is O(1).
    const index = new RangeIndex(new Uint8Array(m.shared), { trusted: true });
    this.prepared = { generation: m.generation, buildId: m.buildId, shared: m.shared, index, loadedAt: new Date(m.loadedAt) };
    send({ type: 'adopted', generation: m.generation });
  }
}

const log: Logger = {
  info: (msg, fields) => send({ type: 'log', level: 'info', msg, fields }),
  warn: (msg, fields) => send({ type: 'log', level: 'warn', msg, fields }),
  error: (msg, fields) => send({ type: 'log', level: 'error', msg, fields }),
};
// A thread prints its own warnings: through the main thread's log instead.
structuredWarnings(log);

const holder = new IndexView(data.generation);
holder.prepare(data.index);
const pool = new RemoteBatchPool(data.batchPort, new BatchShares(data.batchCapacity, data.threads, data.batchCounts), data.thread);
let front: FrontEnd | null = null;

port.on('message', (m: ToThread) => {
  if (m.type === 'index') holder.prepare(m.index);
  else if (m.type === 'drain') void drain(m.graceMs);
  else if (m.type === 'close') void close();
});

async function drain(graceMs: number): Promise<void> {
  front?.listener.stop();
  const deadline = Date.now() + graceMs;
  while (front?.busy() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const busy = front?.busy() ?? null;
  if (busy) log.warn('shutdown grace period over: cutting off what is still in flight', busy);
  send({ type: 'drained', clean: busy === null });
}

async function close(): Promise<void> {
  const f = front;
  front = null;
  await f?.close();
  pool.close();
  send({ type: 'closed' });
  port.close();
}

try {
  const http = await openServer(data.config.httpServer, { keepAliveTimeoutMs: data.config.keepAliveTimeoutMs });
  front = await startFrontEnd({
    config: data.config,
    server: http.server,
    holder,
    pool,
    log,
    schedulerState: data.schedulerState,
    owed: data.owed,
    keysEpoch: data.keysEpoch,
    shared: { metrics: data.metrics, bodyMemory: data.bodyMemory, bodyMemorySlot: data.thread },
    port: data.port,
    sharedPort: true,
    activity: (tallies) => send({ type: 'activity', tallies }),
  });
  send({ type: 'listening', port: front.port });
} catch (e) {
  send({ type: 'failed', reason: e instanceof Error ? e.message : String(e) });
  pool.close();
  port.close();
}
