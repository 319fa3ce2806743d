// Composition: index holder + batch pool + lookup app + admin app, started and stopped as one.

import path from 'node:path';
import { BatchPool } from './batch/pool.js';
import type { Config } from './config.js';
import { ensureDemo } from './demo.js';
import { createAdminApp } from './http/admin.js';
import type { Metrics } from './http/metrics.js';
import { createLookupApp } from './http/server.js';
import { openServer } from './http/server/open.js';
import type { Listener } from './http/server/types.js';
import { IndexHolder } from './index/loader.js';
import { FORMAT_VERSION, formatVersionOf } from './index/format.js';
import { runBuild } from './build/build.js';
import { INDEX_FILE, buildDir, readCurrentBuildId } from './build/builds.js';
import { listFeeds } from './feeds/store.js';
import { KeyCache } from './accounts/auth.js';
import { openControlDb } from './accounts/control-db.js';
import { ensureDemoAccounts } from './accounts/demo-accounts.js';
import { loadPlans } from './accounts/plans.js';
import { Meter } from './accounting/meter.js';
import { AccountingStore } from './accounting/store.js';
import { Pruner, bucketRefillMs } from './accounting/pruner.js';
import { AccountApi } from './http/account-api.js';
import { DatabaseApi, fileTransfers } from './http/database-api.js';
import { loadCatalogue } from './catalogue/catalogue.js';
import { ensureDemoPublication } from './catalogue/demo-publication.js';
import { openStore } from './store/open-store.js';
import { PublishScheduler } from './catalogue/scheduler.js';
import { Gate } from './http/gate.js';
import { checkPortFree, checkStartup, isFresh } from './startup.js';
import type { Logger } from './log.js';
import type { ServerKind } from './http/server/types.js';

export interface Service {
  readonly port: number;
  readonly adminPort: number;
  /** The HTTP server behind both ports. */
  readonly httpServer: ServerKind;
  readonly holder: IndexHolder;
  readonly pool: BatchPool;
  readonly metrics: Metrics;
  /** The shared accounting counters (LMDB). */
  readonly accounting: AccountingStore;
  /**
   * Graceful shutdown: readiness turns false, the lookup port stops listening, batches and
   * downloads in flight finish (up to `graceMs`), then everything closes and leases and
   * amounts owed are written. Resolves true when nothing was cut off.
   */
  drain(graceMs: number): Promise<boolean>;
  close(): Promise<void>;
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
    log.error('rebuild failed; lookups answer 500 until a build is published', { reason: e instanceof Error ? e.message : String(e) });
  }
}

export async function startService(config: Config, log: Logger): Promise<Service> {
  // Everything the command needs is checked before any work, each failure one line.
  const http = await openServer(config.httpServer, { keepAliveTimeoutMs: config.keepAliveTimeoutMs });
  checkStartup(config);
  const plans = loadPlans(config.plansFile);
  const catalogue = loadCatalogue(config.catalogueFile);
  await checkPortFree('PORT', config.host, config.port);
  await checkPortFree('ADMIN_PORT', config.adminHost, config.adminPort);
  // Only a new data directory gets the demo and its printed keys.
  const fresh = config.demo && isFresh(config.dataDir);
  if (fresh) ensureDemo(config.dataDir, log);

  rebuildOlderFormat(config.dataDir, log);
  const holder = new IndexHolder(config.dataDir, log);
  await holder.reload();
  holder.watch(config.indexPollMs);
  if (!holder.current) log.warn('no index loaded: lookups answer 500 until a build is published', { data_dir: config.dataDir });

  const control = openControlDb(config.dataDir);
  const store = new AccountingStore(config.dataDir, true);
  const meter = new Meter(store, config.accountingGraceMs, log);
  const keys = new KeyCache(control, plans);
  const gate = new Gate(keys, meter, plans, config.keylessTier);
  const pruner = new Pruner(store, bucketRefillMs(plans), log);
  const { store: objects, local: files } = await openStore(config);
  if (fresh) ensureDemoAccounts(control, plans, config.dataDir, log, catalogue.bases.map((b) => b.base));
  if (config.demo) await ensureDemoPublication(control, objects, config.dataDir, log);
  let scheduler: PublishScheduler | null = null;
  const closeAccounts = async (): Promise<void> => {
    scheduler?.stop();
    pruner.stop();
    keys.close();
    meter.close();
    await store.close();
    control.close();
  };

  const pool = new BatchPool({ workers: config.batchWorkers, maxQueue: config.batchQueue });
  const { app, metrics, client, routes } = createLookupApp(http.server, config, holder, pool, gate, log);
  const accountApi = new AccountApi(control, gate, keys, log);
  accountApi.register(routes, metrics, client);
  new DatabaseApi(control, catalogue, objects, files, gate, config.dataDir, config.publicUrl, () => scheduler?.retryAfterS() ?? null).register(routes, metrics, client);
  scheduler = config.publishAt ? new PublishScheduler(config.publishAt, { ...process.env, ...storeEnv(config), ...(config.sourcesFile ? { SOURCES_FILE: config.sourcesFile } : {}), DATA_DIR: config.dataDir, PLANS_FILE: config.plansFile, CATALOGUE_FILE: config.catalogueFile }, log) : null;
  scheduler?.start();
  const life = { draining: false };
  const admin = createAdminApp(http.server, holder, pool, metrics, log, config.dataDir, life);
  const listeners: Listener[] = [];
  let closed = false;
  try {
    const main = await http.server.listen(app, config.host, config.port);
    listeners.push(main);
    const adm = await http.server.listen(admin, config.adminHost, config.adminPort);
    listeners.push(adm);
    log.info('listening', {
      url: `http://${config.host}:${main.port}`,
      admin: `http://${config.adminHost}:${adm.port}`,
      http_server: http.server.kind,
      // Why auto did not take uWS, where it did not.
      ...(http.fallbackReason ? { http_server_reason: http.fallbackReason } : {}),
      keep_alive_timeout_s: http.keepAliveTimeoutMs / 1000,
      batch_workers: config.batchWorkers,
      build: holder.current?.buildId ?? null,
    });
    const close = async (): Promise<void> => {
      if (closed) return;
      closed = true;
      for (const l of listeners) l.close();
      holder.close();
      await pool.close();
      await closeAccounts();
    };
    return {
      port: main.port,
      adminPort: adm.port,
      httpServer: http.server.kind,
      holder,
      pool,
      metrics,
      accounting: store,
      async drain(graceMs: number) {
        life.draining = true;
        listeners[0].stop();
        const deadline = Date.now() + graceMs;
        // Batches and downloads in flight, and answers the server still holds unsent.
        const busy = (): boolean => metrics.inFlight > 0 || fileTransfers.transfers > 0 || listeners[0].unsent() > 0;
        while (busy() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        const clean = !busy();
        if (!clean) log.warn('shutdown grace period over: cutting off what is still in flight', { batches: metrics.inFlight, downloads: fileTransfers.transfers, unsent: listeners[0].unsent() });
        await close();
        return clean;
      },
      close,
    };
  } catch (e) {
    for (const l of listeners) l.close();
    holder.close();
    await pool.close();
    await closeAccounts();
    throw e;
  }
}

/** The store settings as environment, for the scheduler's child processes. */
function storeEnv(config: Config): Record<string, string> {
  const s = config.store;
  if (s.kind === 'local') return { STORE: 'local' };
  return { STORE: 's3', S3_BUCKET: s.bucket, S3_PREFIX: s.prefix, S3_REGION: s.region, ...(s.endpoint ? { S3_ENDPOINT: s.endpoint } : {}) };
}
