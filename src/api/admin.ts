// Admin port: liveness, readiness (an index is loaded), Prometheus metrics, why an address
// answers as it does (explain-api.ts), and the operator's API (operator-api.ts).

import type { HttpApp, HttpResponse, HttpServer } from '../http/server/types.js';
import type { BatchPool } from '../batch/pool.js';
import type { IndexHolder } from '../index/loader.js';
import { writeJsonType } from '../http/json.js';
import { Metrics } from '../http/metrics.js';
import { RouteTable } from '../http/routes.js';
import type { Logger } from '../log.js';
import { registerExplain } from './explain.js';
import { metricsText } from './metrics-text.js';
import { registerOpenApi } from './openapi.js';
import { registerOperatorApi } from './operator.js';
import type { OperatorDeps } from '../control/operator.js';
import type { FollowerState } from '../replica/index-replica.js';

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

/** A serving node's replica state on /readyz: what the store publishes, when read, what went wrong. */
const replicaJson = (r: FollowerState): Record<string, unknown> => ({ published: r.published, checked_at: r.checkedAt?.toISOString() ?? null, error: r.error });

export function createAdminApp(
  server: HttpServer,
  holder: IndexHolder,
  pool: BatchPool,
  metrics: () => Metrics,
  log: Logger,
  dataDir: string,
  life: Lifecycle = { draining: false },
  threads: ThreadsView | null = null,
  lastPublishedAt: () => Date | null = () => null,
  operator: OperatorDeps | null = null,
  replica: (() => FollowerState) | null = null,
): { app: HttpApp; routes: RouteTable } {
  const app = server.app();
  const adminMetrics = new Metrics();
  const routes = new RouteTable(app, log, adminMetrics);
  registerExplain(routes, holder, dataDir, adminMetrics, operator?.db ?? null);
  routes.get('/healthz', (res) => json(res, '200 OK', { status: 'ok' }));
  registerOpenApi(routes, '/openapi.json', adminMetrics);
  routes.get('/readyz', (res) => {
    const s = holder.current;
    const http_server = server.kind;
    const waiting = threads?.notReady() ?? 0;
    const following = replica ? { replica: replicaJson(replica()) } : {};
    if (life.draining) json(res, '503 Service Unavailable', { status: 'not ready', reason: 'shutting down', http_server });
    else if (s && waiting > 0) json(res, '503 Service Unavailable', { status: 'not ready', reason: `${waiting} front-end threads not serving build ${s.buildId} yet`, http_server });
    else if (s) json(res, '200 OK', { status: 'ready', build: s.buildId, loaded_at: s.loadedAt.toISOString(), http_server, ...following });
    else json(res, '503 Service Unavailable', { status: 'not ready', reason: 'no index loaded', http_server, ...following });
  });
  routes.get('/metrics', (res) => {
    res.writeHeader('Content-Type', 'text/plain; version=0.0.4').end(metricsText({ holder, pool, metrics: metrics(), threads: threads?.threadMetrics() ?? null, serverKind: server.kind, lastPublishedAt, replica: replica?.() ?? null }));
  }, { compress: true });
  if (operator) registerOperatorApi(routes, operator, adminMetrics);
  routes.fallback();
  return { app, routes };
}
