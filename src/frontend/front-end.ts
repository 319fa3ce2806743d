// One lookup front end: the public port's app (lookups, batches, account, keys, catalogue and
// downloads) with its own key cache, accounting leases and database connections. It runs on
// the main thread when FRONTEND_THREADS is 1, and once on each front-end thread otherwise
// (threads.ts), every one reading the same index and accounting store.

import { KeyCache, type KeyTally } from '../control/auth.js';
import { HARVEST_MS } from '../control/key-activity.js';
import { openControlDb } from '../control/control-db.js';
import { loadPlans } from '../model/plans.js';
import { type Meter, openMeter } from '../accounting/meter.js';
import type { AccountingStore } from '../accounting/accounting-store.js';
import { openAccountingStore } from '../accounting/open-accounting-store.js';
import type { BatchRunner } from '../batch/runner.js';
import { loadCatalogue } from '../catalogue/catalogue.js';
import { retryAfterOf } from '../pipeline/scheduler.js';
import type { Config } from '../config.js';
import { fileTransfers } from '../http/file-transfer.js';
import { Gate } from '../api/admission/gate.js';
import type { Metrics } from '../http/metrics.js';
import { createPublicApp } from '../api/public/app.js';
import type { LookupShared } from '../api/public/lookup-shared.js';
import type { HttpServer, Listener } from '../http/server/types.js';
import type { IndexSource } from '../index/loader.js';
import type { Logger } from '../log.js';
import { openObjectStore } from '../objects/open-object-store.js';
import type { RouteTable } from '../http/routes.js';
import { OwedTable } from '../accounting/owed-table.js';
import { every, systemClock, type Clock } from '../clock.js';

export interface FrontEndSetup {
  config: Config;
  server: HttpServer;
  holder: IndexSource;
  pool: BatchRunner;
  log: Logger;
  /** The daily publication's state (PublishScheduler.state), or null when none is scheduled. */
  schedulerState: Float64Array | null;
  /** What the process's threads owe the accounting store while it refuses writes (OwedTable). */
  owed: SharedArrayBuffer;
  shared?: LookupShared;
  /** The main thread's accounting store, where the front end runs on it (threads open their own). */
  accounting?: AccountingStore;
  /** The port to listen on (0: any), beside other threads on it when `sharedPort`. */
  port: number;
  sharedPort: boolean;
  /** The time the front end reads (the system's where not given): a test's, on the main thread only. */
  clock?: Clock;
  /** Shared by the process's front-end threads: a key changed on one is dropped on all before their next request. */
  keysEpoch?: Int32Array;
  /** Where what the callers counted goes every HARVEST_MS, and once more at the end (the key activity log). */
  activity?: (tallies: KeyTally[]) => void;
}

export interface FrontEnd {
  readonly port: number;
  readonly metrics: Metrics;
  readonly listener: Listener;
  /** The public app's routes (what the OpenAPI document must describe). */
  readonly routes: RouteTable;
  /** Batches, downloads or answers still under way (a graceful stop waits for them). */
  busy(): { batches: number; downloads: number; unsent: number } | null;
  /** Stops listening, drops every connection, writes leases back and closes the stores. */
  close(): Promise<void>;
}

export async function startFrontEnd(s: FrontEndSetup): Promise<FrontEnd> {
  const { config, log } = s;
  const plans = loadPlans(config.plansFile);
  const catalogue = loadCatalogue(config.catalogueFile);
  const control = openControlDb(config.dataDir, config.controlDb);
  const store = s.accounting ?? openAccountingStore(config.accounting, config.dataDir);
  // The meter reads the requests' clock: a lease's expiry, set when its refill lands, is compared
  // with each request's time (a moved test clock against the system's left a request refilling
  // forever).
  const meter = openMeter(store, { graceMs: config.accountingGraceMs, log, table: new OwedTable(s.owed), now: s.clock?.now });
  const keys = new KeyCache(control, plans, config.dataDir, config.controlGraceMs, s.clock, s.keysEpoch);
  const gate = new Gate(keys, meter, plans, config.keylessTier);
  const closeStores = async (): Promise<void> => {
    keys.close();
    // A refill still on its way lands in a lease that close() has given back: its units would
    // stay counted, never used. Waited for as long as the store may take to answer.
    if (config.accounting.kind === 'redis') await answered(meter, config.accounting.timeoutMs);
    meter.close();
    if (!s.accounting) await store.close();
    control.close();
  };
  try {
    const { store: objects, local: files } = await openObjectStore(config);
    const state = s.schedulerState;
    const { app, metrics, routes } = createPublicApp({
      server: s.server,
      config,
      holder: s.holder,
      pool: s.pool,
      gate,
      keys,
      control,
      catalogue,
      objects,
      files,
      publishRetryAfter: () => (state ? retryAfterOf(state) : null),
      log,
      shared: s.shared,
      clock: s.clock,
    });
    const listener = await s.server.listen(app, config.host, s.port, s.sharedPort);
    const unwatch = metrics.watchEventLoop();
    const handOver = (): void => {
      const tallies = keys.harvest();
      if (tallies.length > 0) s.activity?.(tallies);
    };
    const harvesting = s.activity ? every(s.clock ?? systemClock, HARVEST_MS, handOver) : null;
    return {
      port: listener.port,
      metrics,
      listener,
      routes,
      busy() {
        const b = { batches: metrics.inFlight, downloads: fileTransfers.transfers, unsent: listener.unsent() };
        return b.batches > 0 || b.downloads > 0 || b.unsent > 0 ? b : null;
      },
      async close() {
        unwatch();
        if (harvesting) harvesting.cancel(), handOver();
        listener.close();
        await closeStores();
      },
    };
  } catch (e) {
    await closeStores();
    throw e;
  }
}

/** Resolves once the meter has no call to its store unanswered, or after timeoutMs. */
async function answered(meter: Meter, timeoutMs: number): Promise<void> {
  const until = systemClock.now() + timeoutMs;
  while (meter.unanswered > 0 && systemClock.now() < until) await new Promise<void>((r) => systemClock.after(2, r));
}
