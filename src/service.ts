// Composition: index holder + batch pool + lookup app + admin app, started and stopped as one.

import os from 'node:os';
import path from 'node:path';
import { BatchPool } from './batch/pool.js';
import { ConfigError, type Config } from './config.js';
import { ensureDemo, removeDemoFeeds } from './demo.js';
import { createAdminApp } from './api/admin/app.js';
import type { Lifecycle } from './api/admin/state.js';
import type { Metrics } from './http/metrics.js';
import { openServer } from './http/server/open.js';
import type { HttpServer, Listener } from './http/server/types.js';
import { IndexHolder } from './index/loader.js';
import { FORMAT_VERSION, formatVersionOf } from './index/format.js';
import { removeStaleStaging, runBuild } from './build/build.js';
import { readCurrentBuildId } from './index/builds.js';
import { listFeeds } from './feeds/feed-store.js';
import { openControlDb } from './control/control-db.js';
import { ensureDemoAccounts } from './control/demo-accounts.js';
import { loadPlans } from './model/plans.js';
import type { AccountingStore } from './accounting/accounting-store.js';
import { openAccountingStore } from './accounting/open-accounting-store.js';
import { Pruner, bucketRefillMs } from './accounting/pruner.js';
import { loadCatalogue } from './catalogue/catalogue.js';
import { ensureDemoPublication } from './pipeline/demo-publication.js';
import { openObjectStore } from './objects/open-object-store.js';
import { PublishScheduler } from './pipeline/scheduler.js';
import { SourceRefresher } from './pipeline/source-refresher.js';
import { BuildOnDemand } from './pipeline/build-on-demand.js';
import { configuredSources } from './pipeline/pipeline.js';
import { readSourceStates, sourceStatuses } from './feeds/source-state.js';
import { readDisabledSources } from './feeds/source-switches.js';
import { DEFAULT_INTERVAL_MS } from './feeds/sources.js';
import { checkPortFree, checkStartup, isFresh } from './startup.js';
import { LogTail, type Logger } from './log.js';
import { updateTimeline } from './history/timeline-file.js';
import { reasonOf } from './errors.js';
import type { ServerKind } from './http/server/types.js';
import { startFrontEnd, type FrontEnd } from './frontend/front-end.js';
import { FrontEndThreads } from './frontend/threads.js';
import { lastPublishedAt } from './control/publications.js';
import { IndexFollower } from './replica/index-replica.js';
import { ClusterBuildLock } from './pipeline/cluster-lock.js';
import type { RouteTable } from './http/routes.js';
import { OwedTable } from './accounting/owed-table.js';
import { INDEX_FILE, buildDir, keyActivityFile, trafficHistoryFile } from './data-dir.js';
import { KeyActivity } from './control/key-activity.js';
import type { KeyTally } from './control/auth.js';
import { type Clock, every, systemClock } from './clock.js';

export interface Service {
  readonly port: number;
  readonly adminPort: number;
  /** The route tables of the public app (null where front-end threads hold it) and the admin app. */
  routeTables(): { public: RouteTable | null; admin: RouteTable };
  /** The HTTP server behind both ports. */
  readonly httpServer: ServerKind;
  /** Threads answering the public port. */
  readonly frontendThreads: number;
  /** Those threads, where there are several. */
  readonly threads: FrontEndThreads | null;
  readonly holder: IndexHolder;
  /** Keeps the configured sources fresh (null: no sources, or a serving node). */
  readonly sources: SourceRefresher | null;
  readonly pool: BatchPool;
  readonly metrics: Metrics;
  /** The shared accounting counters (LMDB, or Redis). */
  readonly accounting: AccountingStore;
  /**
   * Graceful shutdown: readiness turns false, the lookup port stops listening, batches and
   * downloads in flight finish (up to `graceMs`), then everything closes and leases and
   * amounts owed are written. Resolves true when nothing was cut off.
   */
  drain(graceMs: number): Promise<boolean>;
  close(): Promise<void>;
  /**
   * Before an immediate exit: front-end threads close their connections (a worker thread
   * whose uWS sockets are open when the process exits aborts it). Waits a second at most.
   */
  closeThreads(): Promise<void>;
}

/**
 * A current build written by an older ipsift in an index format this version cannot read is
 * rebuilt from the imported feeds, so that an upgrade keeps answering instead of failing
 * every lookup. The new build also holds whatever was imported since the old one.
 */
function rebuildOlderFormat(dataDir: string, log: Logger): void {
  const id = readCurrentBuildId(dataDir);
  if (id === null) return;
  const version = formatVersionOf(path.join(buildDir(dataDir, id), INDEX_FILE));
  if (version === null || version >= FORMAT_VERSION || listFeeds(dataDir).length === 0) return;
  log.warn('the current build has an older index format: rebuilding from the imported feeds', { build: id, format: version, expected: FORMAT_VERSION });
  try {
    const rebuilt = runBuild({ dataDir });
    log.info('rebuilt in the current index format', { build: rebuilt.id, replaces: id });
  } catch (e) {
    log.error('rebuild failed; lookups answer 500 until a build serves', { reason: e instanceof Error ? e.message : String(e) });
  }
}

/** How often the key activity log is written to its file (and once more at stop). */
const ACTIVITY_SAVE_MS = 60_000;

/** What a caller may give the service besides its settings. */
export interface ServiceOptions {
  /**
   * The time the daily run and the main thread's front end read (the system's where not
   * given): a test's clock, which it moves. Front-end threads (FRONTEND_THREADS > 1) keep the
   * system's.
   */
  clock?: Clock;
  /** Finds the port front-end threads bind when PORT is 0 (a test makes it hand out a taken one). */
  freePort?: (host: string) => Promise<number>;
}

export async function startService(config: Config, given: Logger, options: ServiceOptions = {}): Promise<Service> {
  // Warnings and errors are kept for the console too, from the first line on.
  const logTail = new LogTail();
  const log = logTail.wrap(given);
  // Everything the command needs is checked before any work, each failure one line.
  const http = await openServer(config.httpServer, { keepAliveTimeoutMs: config.keepAliveTimeoutMs });
  checkStartup(config);
  const plans = loadPlans(config.plansFile);
  const catalogue = loadCatalogue(config.catalogueFile);
  await checkPortFree('PORT', config.host, config.port);
  await checkPortFree('ADMIN_PORT', config.adminHost, config.adminPort);
  // Only a new data directory gets the demo and its printed keys; a serving node of a cluster
  // gets neither the demo nor a rebuild: its builds come from the store.
  const serving = config.role === 'serve';
  const fresh = !serving && config.demo && isFresh(config.dataDir);
  // Configured sources are the data: the demo's synthetic feeds would answer beside them.
  const sources = serving ? [] : configuredSources(config);
  if (fresh && sources.length === 0) ensureDemo(config.dataDir, log);
  if (sources.length) removeDemoFeeds(config.dataDir, log);

  if (!serving) {
    // A build killed mid-way (kill -9, a lost container) left its staging directory behind.
    const removed = removeStaleStaging(config.dataDir);
    if (removed.length > 0) log.info('removed the staging directories of builds that did not finish', { removed });
    rebuildOlderFormat(config.dataDir, log);
  }
  const holder = new IndexHolder(config.dataDir, log);
  let follower: IndexFollower | null = null;
  if (serving) {
    // The first check before listening: a node starts on the published build where it can.
    follower = new IndexFollower((await openObjectStore(config)).store, config.dataDir, log);
    await follower.start(config.replicaPollMs);
  }
  await holder.reload();
  // The timeline of answers catches up with what served while this process did not run (the
  // demo's first build, a CLI build), or is rebuilt from the builds on disk where it was lost.
  if (!serving)
    try {
      updateTimeline(config.dataDir, Date.now(), config.historyDays);
    } catch (e) {
      log.warn('the timeline of answers could not be brought up to date; lookups as of a time answer from what it holds', { reason: reasonOf(e) });
    }
  holder.watch(config.indexPollMs);
  if (!holder.current)
    log.warn(
      sources.length
        ? "no index loaded: lookups answer 503 (Retry-After: 30) until the sources' first fetch builds"
        : 'no index loaded: lookups answer 500 until a build serves',
      { data_dir: config.dataDir },
    );

  // The control database, the accounting store (checked once, here) and the object store of
  // the main thread: for the demo, the pruner and the scheduler. Each front end opens its own.
  const control = openControlDb(config.dataDir, config.controlDb);
  const accounting = openAccountingStore(config.accounting, config.dataDir, true);
  const pruner = new Pruner(accounting, bucketRefillMs(plans), log);
  let scheduler: PublishScheduler | null = null;
  let refresher: SourceRefresher | null = null;
  // Builds an operator asks for, on a node that builds.
  const builds = config.role === 'serve' ? null : new BuildOnDemand(config, log);
  const closeAccounts = async (): Promise<void> => {
    scheduler?.stop();
    await refresher?.stop();
    await builds?.stop();
    pruner.stop();
    await accounting.close();
    control.close();
  };
  let pool: BatchPool | null = null;
  const listeners: Listener[] = [];
  let front: FrontEnd | null = null;
  let threads: FrontEndThreads | null = null;
  let closeAdmin = (): void => {};
  let stopActivity = (): void => {};
  const stopAll = async (): Promise<void> => {
    closeAdmin();
    for (const l of listeners) l.close();
    await front?.close();
    await threads?.close();
    // After the front ends, whose last counts it takes.
    stopActivity();
    await follower?.stop();
    holder.close();
    await pool?.close();
    await closeAccounts();
  };
  try {
    const { store: objects } = await openObjectStore(config);
    if (fresh)
      ensureDemoAccounts(
        control,
        plans,
        config.dataDir,
        log,
        catalogue.bases.map((b) => b.base),
      );
    if (config.demo && !serving) await ensureDemoPublication(control, objects, config.dataDir, log);
    // With sources, refresh builds serve all day: the daily run then asks whether today was published.
    const publishedDay = sources.length ? (): string | null => lastPublishedAt(control)?.toISOString().slice(0, 10) ?? null : undefined;
    scheduler =
      config.publishAt && !serving
        ? new PublishScheduler(
            config.publishAt,
            config,
            log,
            config.accounting.kind === 'redis' ? new ClusterBuildLock(config.accounting.url, config.accounting.prefix) : null,
            publishedDay,
            options.clock,
          )
        : null;
    scheduler?.start();
    if (sources.length) {
      refresher = new SourceRefresher(sources, config, log, () => lastPublishedAt(control) === null);
      refresher.start();
    }

    pool = new BatchPool({ workers: config.batchWorkers, maxQueue: config.batchQueue });
    const threadCount = frontEndThreads(config, http.server, log);
    // What the front ends owe the accounting store while it refuses writes, seen by every thread
    // and by the operator's usage on the admin port.
    const owed = new OwedTable();
    // Who is served and refused, and each key's last use, from every front end's callers.
    const activity = new KeyActivity(config.adminPort === 0 ? null : keyActivityFile(config.dataDir, config.adminPort), log);
    const clock = options.clock ?? systemClock;
    const savingActivity = every(clock, ACTIVITY_SAVE_MS, () => activity.save());
    stopActivity = () => {
      savingActivity.cancel();
      activity.save();
    };
    const setup = {
      config,
      holder,
      pool,
      log,
      schedulerState: scheduler?.state ?? null,
      owed: owed.shared,
      activity: (tallies: KeyTally[]) => activity.add(tallies, clock.now()),
    };
    if (threadCount === 1)
      front = await startFrontEnd({ ...setup, server: http.server, accounting, port: config.port, sharedPort: false, clock: options.clock });
    else threads = await FrontEndThreads.start({ ...setup, threads: threadCount, freePort: options.freePort });
    const port = front?.port ?? threads!.port;
    const metrics = (): Metrics => front?.metrics ?? threads!.metrics();
    const life: Lifecycle = { draining: false };
    const {
      app: admin,
      routes: adminRoutes,
      close: stopAdmin,
    } = createAdminApp({
      server: http.server,
      holder,
      pool,
      metrics,
      log,
      dataDir: config.dataDir,
      life,
      threads,
      lastPublishedAt: () => lastPublishedAt(control),
      operator: {
        db: control,
        plans,
        bases: catalogue.bases.map((b) => b.base),
        spent: (counter) => accounting.spent(counter) + owed.get(counter),
        maxKeysPerOrg: config.maxKeysPerOrg,
      },
      replica: follower ? () => follower.state : null,
      sources: sources.length
        ? () => sourceStatuses(sources, readSourceStates(config.dataDir), Date.now(), DEFAULT_INTERVAL_MS, readDisabledSources(config.dataDir))
        : null,
      keylessTier: config.keylessTier,
      settings: config.given,
      actions: { builds, refresher },
      owed: () => ({ counters: owed.owedCounters(), units: owed.owedUnits() }),
      // A builder with a daily run or sources builds at least daily; a serving node follows the store.
      buildEveryS: !serving && (config.publishAt || sources.length) ? 86_400 : null,
      replicaPollMs: config.replicaPollMs,
      historyFile: config.adminPort === 0 ? null : trafficHistoryFile(config.dataDir, config.adminPort),
      activity,
      clock,
      logTail,
      historyDays: config.historyDays,
    });
    closeAdmin = stopAdmin;
    const adm = await http.server.listen(admin, config.adminHost, config.adminPort);
    listeners.push(adm);
    log.info('listening', {
      url: `http://${config.host}:${port}`,
      admin: `http://${config.adminHost}:${adm.port}`,
      http_server: http.server.kind,
      // Why auto did not take uWS, where it did not.
      ...(http.fallbackReason ? { http_server_reason: http.fallbackReason } : {}),
      keep_alive_timeout_s: http.keepAliveTimeoutMs / 1000,
      frontend_threads: threadCount,
      batch_workers: config.batchWorkers,
      build: holder.current?.buildId ?? null,
    });
    let closed = false;
    const close = async (): Promise<void> => {
      if (closed) return;
      closed = true;
      await stopAll();
    };
    const servicePool = pool;
    return {
      port,
      adminPort: adm.port,
      routeTables: () => ({ public: front?.routes ?? null, admin: adminRoutes }),
      httpServer: http.server.kind,
      frontendThreads: threadCount,
      threads,
      holder,
      sources: refresher,
      pool: servicePool,
      get metrics() {
        return metrics();
      },
      accounting,
      async drain(graceMs: number) {
        life.draining = true;
        let clean: boolean;
        if (threads) clean = await threads.drain(graceMs);
        else {
          const f = front!;
          f.listener.stop();
          const deadline = Date.now() + graceMs;
          while (f.busy() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
          const busy = f.busy();
          if (busy) log.warn('shutdown grace period over: cutting off what is still in flight', busy);
          clean = busy === null;
        }
        await close();
        return clean;
      },
      close,
      closeThreads: async () => void (await threads?.close(1000)),
    };
  } catch (e) {
    await stopAll();
    throw e;
  }
}

/**
 * FRONTEND_THREADS, or by default one per core where the HTTP server can share the port
 * between threads (a single thread, said in the log, where it cannot).
 */
function frontEndThreads(config: Config, server: HttpServer, log: Logger): number {
  const wanted = config.frontendThreads ?? os.availableParallelism();
  if (wanted === 1 || server.cannotSharePort === null) return wanted;
  if (config.frontendThreads !== null)
    throw new ConfigError(`FRONTEND_THREADS=${wanted}: ${server.cannotSharePort}; set FRONTEND_THREADS=1 or HTTP_SERVER=auto`);
  log.warn('one front-end thread', { reason: server.cannotSharePort });
  return 1;
}
