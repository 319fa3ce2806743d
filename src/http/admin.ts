// Admin port: liveness, readiness (an index is loaded), Prometheus metrics, and why an
// address answers as it does (explain-api.ts).

import type { HttpApp, HttpResponse, HttpServer } from './server/types.js';
import type { BatchPool } from '../batch/pool.js';
import type { IndexHolder } from '../index/loader.js';
import { writeJsonType } from './json-head.js';
import { Metrics } from './metrics.js';
import { RouteTable } from './routes.js';
import type { Logger } from '../log.js';
import { registerExplain } from './explain-api.js';

function json(res: HttpResponse, status: string, body: unknown): void {
  writeJsonType(res.writeStatus(status)).end(JSON.stringify(body));
}

/** What readiness reports beyond the index: false once the service is shutting down. */
export interface Lifecycle {
  draining: boolean;
}

/** The front-end threads, where there are several (frontend/threads.ts). */
export interface ThreadsView {
  /** Threads not listening with the serving index. */
  notReady(): number;
  /** Each thread's own counters. */
  threadMetrics(): readonly Metrics[];
}

export function createAdminApp(server: HttpServer, holder: IndexHolder, pool: BatchPool, metrics: () => Metrics, log: Logger, dataDir: string, life: Lifecycle = { draining: false }, threads: ThreadsView | null = null): HttpApp {
  const app = server.app();
  const adminMetrics = new Metrics();
  const routes = new RouteTable(app, log, adminMetrics);
  registerExplain(routes, holder, dataDir, adminMetrics);
  routes.get('/healthz', (res) => json(res, '200 OK', { status: 'ok' }));
  routes.get('/readyz', (res) => {
    const s = holder.current;
    const http_server = server.kind;
    const waiting = threads?.notReady() ?? 0;
    if (life.draining) json(res, '503 Service Unavailable', { status: 'not ready', reason: 'shutting down', http_server });
    else if (s && waiting > 0) json(res, '503 Service Unavailable', { status: 'not ready', reason: `${waiting} front-end threads not serving build ${s.buildId} yet`, http_server });
    else if (s) json(res, '200 OK', { status: 'ready', build: s.buildId, loaded_at: s.loadedAt.toISOString(), http_server });
    else json(res, '503 Service Unavailable', { status: 'not ready', reason: 'no index loaded', http_server });
  });
  routes.get('/metrics', (res) => {
    const s = holder.current;
    const m = metrics();
    const lines = [
      '# HELP ipsift_responses_total Lookup-group responses by HTTP status.',
      '# TYPE ipsift_responses_total counter',
      ...[...m.responses()].map(([status, n]) => `ipsift_responses_total{status="${status}"} ${n}`),
      '# HELP ipsift_batches_total Batches answered with 200.',
      '# TYPE ipsift_batches_total counter',
      `ipsift_batches_total ${m.batches}`,
      '# HELP ipsift_index_generation Serving index generation (0: none loaded).',
      '# TYPE ipsift_index_generation gauge',
      `ipsift_index_generation ${s?.generation ?? 0}`,
      '# HELP ipsift_index_bytes Size of the shared serving index.',
      '# TYPE ipsift_index_bytes gauge',
      `ipsift_index_bytes ${s?.shared.byteLength ?? 0}`,
      '# HELP ipsift_batch_queue Batches waiting for a worker.',
      '# TYPE ipsift_batch_queue gauge',
      `ipsift_batch_queue ${pool.queued}`,
      '# HELP ipsift_batch_worker_failures_total Batch attempts lost to a failed worker.',
      '# TYPE ipsift_batch_worker_failures_total counter',
      `ipsift_batch_worker_failures_total ${pool.workerFailures}`,
      '# HELP ipsift_batch_body_bytes Bytes held by batch bodies being received.',
      '# TYPE ipsift_batch_body_bytes gauge',
      `ipsift_batch_body_bytes ${m.bodyMemory?.held ?? 0}`,
      '# HELP ipsift_handler_failures_total Requests whose handler failed unexpectedly (answered 500).',
      '# TYPE ipsift_handler_failures_total counter',
      `ipsift_handler_failures_total ${m.handlerFailures}`,
      '# HELP ipsift_frontend_thread_responses_total Lookup-group responses by front-end thread (how evenly connections spread).',
      '# TYPE ipsift_frontend_thread_responses_total counter',
      ...(threads?.threadMetrics() ?? [m]).map((t, n) => `ipsift_frontend_thread_responses_total{thread="${n}"} ${[...t.responses().values()].reduce((a, b) => a + b, 0)}`),
    ];
    res.writeHeader('Content-Type', 'text/plain; version=0.0.4').end(lines.join('\n') + '\n');
  });
  routes.fallback();
  return app;
}
