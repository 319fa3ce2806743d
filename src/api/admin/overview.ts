// GET /admin/v1/overview and GET /admin/v1/token on the admin port, for an operator token with
// admin.read: what the console's first page shows (the serving build and its age, each
// front-end thread's state, the HTTP server and runtime, the process (process-view.ts), the
// last hour of traffic from
// http/metrics-history.ts), and who the token is (its scopes decide which controls the
// console draws; the API refuses writes whatever it draws).

import type { IndexHolder } from '../../index/loader.js';
import { WINDOWS, type HistoryWindow, type MetricsHistory } from '../../http/metrics-history.js';
import { sendJson, sendRc } from '../../http/reply.js';
import { RC } from '../../wire/errors.js';
import { RUNTIME, VERSION } from '../../version.js';
import type { Lifecycle, ThreadState } from './state.js';
import type { ProcessView } from './process-view.js';
import { healthProblems } from './health.js';
import type { OwedReading } from './metrics-text.js';
import type { FollowerState } from '../../replica/index-replica.js';
import type { AdminRoutes } from './admin-routes.js';

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
  /** How often a build is due here (s; null: no schedule), for the health banner. */
  buildEveryS: number | null;
  /** The accounting store's debt while it refuses writes (null: not known here). */
  owed: (() => OwedReading) | null;
  /** A serving node's view of the store's builds (null: not a serving node), and how often it reads it. */
  replica: (() => FollowerState) | null;
  replicaPollMs: number;
  /** Sources are configured here (no build yet then means 503, not 500). */
  sourcesConfigured?: boolean;
  now?: () => number;
}

export class OverviewApi {
  constructor(private readonly s: OverviewSources) {}

  register(admin: AdminRoutes): void {
    const { edge } = admin;
    const { s } = this;
    const now = s.now ?? Date.now;
    admin.get(
      '/admin/v1/overview',
      'admin.read',
      (res, req) => {
        const query = new URLSearchParams(req.getQuery() ?? '');
        const window = (query.get('window') ?? '1h') as HistoryWindow;
        const unknown = [...query.keys()].find((k) => k !== 'window');
        if (unknown !== undefined)
          return sendRc(res, RC.BAD_REQUEST, `unknown parameter ${JSON.stringify(unknown)}: the overview takes window only`, edge.metrics);
        if (!Object.hasOwn(WINDOWS, window)) return sendRc(res, RC.BAD_REQUEST, `window must be ${Object.keys(WINDOWS).join(', ')}`, edge.metrics);
        const serving = s.holder.current;
        const nowMs = now();
        const threads = s.threads?.() ?? [{ thread: 0, listening: true, serving: serving !== null }];
        const published = s.lastPublishedAt();
        const ready = !s.life.draining && serving !== null && threads.every((t) => t.serving);
        const health = healthProblems({
          nowMs,
          ready,
          draining: s.life.draining,
          build: serving && { id: serving.buildId, builtAtMs: (serving.builtAt ?? serving.loadedAt).getTime() },
          buildEveryS: s.buildEveryS,
          owed: s.owed?.() ?? null,
          replica: s.replica?.() ?? null,
          replicaPollMs: s.replicaPollMs,
          sourcesConfigured: s.sourcesConfigured,
        });
        sendJson(
          res,
          200,
          {
            version: VERSION,
            runtime: RUNTIME,
            http_server: s.serverKind,
            started_at: new Date(s.startedAtMs).toISOString(),
            ready,
            health,
            draining: s.life.draining,
            build: serving && {
              id: serving.buildId,
              loaded_at: serving.loadedAt.toISOString(),
              age_s: Math.round((nowMs - serving.loadedAt.getTime()) / 1000),
            },
            last_published_at: published?.toISOString() ?? null,
            lookups_without_build: s.sourcesConfigured ? 503 : 500,
            threads,
            process: s.process(),
            traffic: s.history.view(window, nowMs),
            routes: s.history.routes(window, nowMs),
          },
          edge.metrics,
        );
      },
      { compress: true },
    );
    admin.get('/admin/v1/token', 'admin.read', (res, _req, { token }) => {
      if (token === null) return;
      sendJson(res, 200, { id: token.id, name: token.name, scopes: token.scopes }, edge.metrics);
    });
  }
}
