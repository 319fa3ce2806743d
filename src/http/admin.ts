// Admin port: liveness, readiness (an index is loaded) and Prometheus metrics.

import type { HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { BatchPool } from '../batch/pool.js';
import type { IndexHolder } from '../index/loader.js';
import { writeJsonType } from './json-head.js';
import type { Metrics } from './metrics.js';
import { uWS } from './uws.js';

function json(res: HttpResponse, status: string, body: unknown): void {
  writeJsonType(res.writeStatus(status)).end(JSON.stringify(body));
}

export function createAdminApp(holder: IndexHolder, pool: BatchPool, metrics: Metrics): TemplatedApp {
  const app = uWS.App();
  app.get('/healthz', (res) => json(res, '200 OK', { status: 'ok' }));
  app.get('/readyz', (res) => {
    const s = holder.current;
    if (s) json(res, '200 OK', { status: 'ready', build: s.buildId, loaded_at: s.loadedAt.toISOString() });
    else json(res, '503 Service Unavailable', { status: 'not ready', reason: 'no index loaded' });
  });
  app.get('/metrics', (res) => {
    const s = holder.current;
    const lines = [
      '# HELP ipsift_responses_total Lookup-group responses by HTTP status.',
      '# TYPE ipsift_responses_total counter',
      ...[...metrics.responses()].map(([status, n]) => `ipsift_responses_total{status="${status}"} ${n}`),
      '# HELP ipsift_batches_total Batches answered with 200.',
      '# TYPE ipsift_batches_total counter',
      `ipsift_batches_total ${metrics.batches}`,
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
    ];
    res.writeHeader('Content-Type', 'text/plain; version=0.0.4').end(lines.join('\n') + '\n');
  });
  app.any('/*', (res) => json(res, '404 Not Found', { error: 'not found' }));
  return app;
}
