// GET /admin/v1/overview and GET /admin/v1/token on the admin port, for an operator token with
// admin.read: what the console's first page shows (the serving build and its age, each
// front-end thread's state, the HTTP server and runtime, the process (process-view.ts), the
// last hour of traffic from
// http/metrics-history.ts), and who the token is (its scopes decide which controls the
// console draws; the API refuses writes whatever it draws).

import type { ControlDb } from '../control/control-db.js';
import type { IndexHolder } from '../index/loader.js';
import type { MetricsHistory } from '../http/metrics-history.js';
import { sendJson } from '../http/reply.js';
import type { RouteTable } from '../http/routes.js';
import { RUNTIME, VERSION } from '../version.js';
import type { Edge } from './edge.js';
import { operatorOf, operatorTokenOf } from './operator.js';
import type { Lifecycle, ThreadState } from './admin-state.js';
import type { ProcessView } from './process-view.js';

export interface OverviewSources {
  holder: IndexHolder;
  history: MetricsHistory;
  serverKind: string;
  life: Lifecycle;
  /** Each front-end thread's state; null: one, the main thread. */
  threads: (() => ThreadState[]) | null;
  lastPublishedAt: () => Date | null;
  startedAtMs: number;
  /** Memory, CPU, files, the batch pool and the threads' event loops. */
  process: () => ProcessView;
  now?: () => number;
}

export class OverviewApi {
  constructor(
    private readonly db: ControlDb,
    private readonly s: OverviewSources,
  ) {}

  register(routes: RouteTable, edge: Edge): void {
    const { db, s } = this;
    const now = s.now ?? Date.now;
    routes.get(
      '/admin/v1/overview',
      (res, req) => {
        if (operatorOf(db, res, req, 'admin.read', edge.metrics) === null) return;
        const serving = s.holder.current;
        const nowMs = now();
        const threads = s.threads?.() ?? [{ thread: 0, listening: true, serving: serving !== null }];
        const published = s.lastPublishedAt();
        sendJson(
          res,
          200,
          {
            version: VERSION,
            runtime: RUNTIME,
            http_server: s.serverKind,
            started_at: new Date(s.startedAtMs).toISOString(),
            ready: !s.life.draining && serving !== null && threads.every((t) => t.serving),
            draining: s.life.draining,
            build: serving && {
              id: serving.buildId,
              loaded_at: serving.loadedAt.toISOString(),
              age_s: Math.round((nowMs - serving.loadedAt.getTime()) / 1000),
            },
            last_published_at: published?.toISOString() ?? null,
            threads,
            process: s.process(),
            traffic: { period_s: s.history.periodMs / 1000, samples: s.history.samples() },
          },
          edge.metrics,
        );
      },
      { compress: true },
    );
    routes.get('/admin/v1/token', (res, req) => {
      const token = operatorTokenOf(db, res, req, 'admin.read', edge.metrics);
      if (token === null) return;
      sendJson(res, 200, { id: token.id, name: token.name, scopes: token.scopes }, edge.metrics);
    });
  }
}
