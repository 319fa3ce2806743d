// Admin port: liveness, readiness (an index is loaded), Prometheus metrics, why an address
// answers as it does (explain.ts), the sources' freshness (sources.ts), the operator's API
// (operator.ts, overview.ts, builds.ts, plan-answers.ts) and its console (console.ts).

import type { HttpApp, HttpServer } from '../../http/server/types.js';
import type { BatchPool } from '../../batch/pool.js';
import type { IndexHolder } from '../../index/loader.js';
import { writeJson } from '../../http/reply.js';
import { Metrics } from '../../http/metrics.js';
import { RouteTable } from '../../http/routes.js';
import type { Logger } from '../../log.js';
import { ExplainApi } from './explain.js';
import { PROCESS_STARTED_MS, metricsText, type OwedReading } from './metrics-text.js';
import { OpenApiRoute } from '../public/openapi.js';
import { OperatorApi } from './operator.js';
import { SourcesApi } from './sources.js';
import { BuildsApi } from './builds.js';
import { ConsoleRoute, readConsole } from './console.js';
import { OverviewApi } from './overview.js';
import { PlanAnswersApi } from './plan-answers.js';
import { MetricsHistory } from '../../http/metrics-history.js';
import { TIER_BASIC } from '../../model/projection.js';
import type { SourceStatus } from '../../feeds/source-state.js';
import { RequestClient } from '../../http/client.js';
import type { Edge } from '../admission/edge.js';
import type { OperatorDeps } from '../../control/operator.js';
import type { FollowerState } from '../../replica/index-replica.js';
import type { Lifecycle, ThreadState, ThreadsView } from './state.js';
import { SettingsApi } from './settings.js';
import { ProcessReadings } from './process-view.js';
import { ActionsApi, type OperatorActions } from './actions.js';
import type { Config } from '../../config.js';
import { type Clock, systemClock } from '../../clock.js';
import type { KeyActivity } from '../../control/key-activity.js';
import { ActivityApi } from './activity.js';
import { LogTailApi } from './log-tail.js';
import type { LogTail } from '../../log.js';
import { AdminRoutes } from './admin-routes.js';
import { TimelineReader } from '../../history/timeline-file.js';

/** A serving node's replica state on /readyz: what the store publishes, when read, what went wrong. */
const replicaJson = (r: FollowerState): Record<string, unknown> => ({ published: r.published, checked_at: r.checkedAt?.toISOString() ?? null, error: r.error });

/** What the admin app serves from, by name; the optional parts are absent where the process has none. */
export interface AdminAppDeps {
  server: HttpServer;
  holder: IndexHolder;
  pool: BatchPool;
  /** The public port's counters (of every front-end thread). */
  metrics: () => Metrics;
  log: Logger;
  dataDir: string;
  life?: Lifecycle;
  /** The front-end threads, where there are several. */
  threads?: ThreadsView | null;
  lastPublishedAt?: () => Date | null;
  /** The control plane: without it, no operator API, overview, builds or console. */
  operator?: OperatorDeps | null;
  /** A serving node's view of the store's builds. */
  replica?: (() => FollowerState) | null;
  /** The configured sources' states (null: no sources here). */
  sources?: (() => SourceStatus[]) | null;
  /** KEYLESS_TIER, for the answers per plan. */
  keylessTier?: number;
  /** The settings as given at start, for GET /admin/v1/settings (null: not offered). */
  settings?: Config['given'] | null;
  /** What an operator can set going: a build, a refresh of the sources (absent: neither). */
  actions?: OperatorActions;
  /** The accounting store's debt while it refuses writes (null: not known here). */
  owed?: (() => OwedReading) | null;
  /** How often a build is due on this node (s; null: no schedule), and how often a serving node reads the store. */
  buildEveryS?: number | null;
  replicaPollMs?: number;
  /** The ring file that keeps the traffic history across restarts (null: memory only). */
  historyFile?: string | null;
  /** Who the front ends served and refused, and each key's last use (null: not kept here). */
  activity?: KeyActivity | null;
  /** The time the admin port reads (the system's where not given): a test's, which it moves. */
  clock?: Clock;
  /** Days of answers the timeline keeps (HISTORY_DAYS). */
  historyDays?: number;
  /** This process's last warnings and errors (null: not kept). */
  logTail?: LogTail | null;
}

export function createAdminApp(deps: AdminAppDeps): { app: HttpApp; routes: RouteTable; close: () => void } {
  const {
    server,
    holder,
    pool,
    metrics,
    log,
    dataDir,
    life = { draining: false },
    threads = null,
    lastPublishedAt = () => null,
    operator = null,
    replica = null,
    sources = null,
    settings = null,
    owed = null,
    actions = { builds: null, refresher: null },
  } = deps;
  const keylessTier = deps.keylessTier ?? TIER_BASIC;
  const app = server.app();
  const adminMetrics = new Metrics();
  const routes = new RouteTable(app, log, adminMetrics).answersWithRc();
  // The admin port believes no forwarding header: its client is the TCP peer.
  const edge: Edge = { metrics: adminMetrics, client: new RequestClient([], 128), clock: deps.clock ?? systemClock };
  // Every operator route declares its scope; one function admits each request (admin-routes.ts).
  const admin = new AdminRoutes(routes, edge, operator?.db ?? null);
  new ExplainApi(holder, dataDir).register(admin);
  routes.get('/healthz', (res) => writeJson(res, 200, { status: 'ok' }));
  new OpenApiRoute('/openapi.json').register(routes, edge);
  routes.get('/readyz', (res) => {
    const s = holder.current;
    const http_server = server.kind;
    const waiting = threads?.notReady() ?? 0;
    const following = replica ? { replica: replicaJson(replica()) } : {};
    if (life.draining) writeJson(res, 503, { status: 'not ready', reason: 'shutting down', http_server });
    else if (s && waiting > 0)
      writeJson(res, 503, { status: 'not ready', reason: `${waiting} front-end threads not serving build ${s.buildId} yet`, http_server });
    else if (s) writeJson(res, 200, { status: 'ready', build: s.buildId, loaded_at: s.loadedAt.toISOString(), http_server, ...following });
    else writeJson(res, 503, { status: 'not ready', reason: 'no index loaded', http_server, ...following });
  });
  routes.get(
    '/metrics',
    (res) => {
      res.writeHeader('Content-Type', 'text/plain; version=0.0.4').end(
        metricsText({
          holder,
          pool,
          metrics: metrics(),
          threads: threads?.threadMetrics() ?? null,
          serverKind: server.kind,
          lastPublishedAt,
          replica: replica?.() ?? null,
          sources: sources?.() ?? null,
          owed: owed?.() ?? null,
        }),
      );
    },
    { compress: true },
  );
  const history = new MetricsHistory(metrics, { file: deps.historyFile ?? null, log });
  const stopHistory = history.start(edge.clock);
  if (operator) {
    const processReadings = new ProcessReadings(pool, () => threads?.threadMetrics() ?? [metrics()]);
    new OperatorApi(operator).register(admin);
    const threadStates = threads && ((): ThreadState[] => threads.threadStates());
    new OverviewApi({
      holder,
      history,
      serverKind: server.kind,
      life,
      threads: threadStates,
      lastPublishedAt,
      startedAtMs: PROCESS_STARTED_MS,
      process: () => processReadings.read(),
      buildEveryS: deps.buildEveryS ?? null,
      sourcesConfigured: deps.sources != null,
      owed,
      replica,
      replicaPollMs: deps.replicaPollMs ?? 0,
      now: edge.clock.now,
    }).register(admin);
    new BuildsApi(operator.db, dataDir, deps.historyDays).register(admin);
    new PlanAnswersApi(holder, operator.plans, keylessTier, new TimelineReader(dataDir)).register(admin);
    if (settings !== null) new SettingsApi(settings).register(admin);
    new ActionsApi(operator.db, actions).register(admin);
    if (deps.activity) new ActivityApi(operator.db, deps.activity).register(admin);
    if (deps.logTail) new LogTailApi(deps.logTail).register(admin);
    new ConsoleRoute(readConsole()).register(routes, edge);
  }
  new SourcesApi(sources ?? (() => [])).register(admin);
  routes.fallback();
  return { app, routes, close: stopHistory };
}
