// The public port's app, composed in one place: lookups and batches, the account, keys and
// tokens, the catalogue and downloads (with geoipupdate's protocol where the store is local),
// the change feed, and the OpenAPI document, each API registering its routes on one table. A front end (one
// thread, or each of several) builds one with its own stores.

import type { BatchRunner } from '../../batch/runner.js';
import type { Catalogue } from '../../catalogue/catalogue.js';
import { type Clock, systemClock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { KeyCache } from '../../control/auth.js';
import type { ControlDb } from '../../control/control-db.js';
import { RequestClient } from '../../http/client.js';
import { Cors } from '../../http/cors.js';
import { Metrics } from '../../http/metrics.js';
import { RouteTable } from '../../http/routes.js';
import type { HttpApp, HttpServer } from '../../http/server/types.js';
import type { IndexSource } from '../../index/loader.js';
import type { Logger } from '../../log.js';
import type { LocalStore } from '../../objects/local-store.js';
import type { ObjectStore } from '../../objects/object-store.js';
import type { Edge } from '../admission/edge.js';
import type { Gate } from '../admission/gate.js';
import { JsonHead } from '../admission/json-head.js';
import { AccountApi } from './account.js';
import { BatchApi } from './batch.js';
import { DatabaseApi } from './databases.js';
import { GeoipUpdateApi } from './geoipupdate.js';
import { KeysApi } from './keys.js';
import { LookupApi } from './lookup.js';
import type { LookupShared } from './lookup-shared.js';
import { OpenApiRoute } from './openapi.js';
import { TokensApi } from './tokens.js';
import { ChangesApi } from './changes.js';
import { TimelineReader } from '../../history/timeline-file.js';

/** What the public app answers from: the index and batch pool, admission, and the stores. */
export interface PublicAppDeps {
  server: HttpServer;
  config: Config;
  holder: IndexSource;
  pool: BatchRunner;
  gate: Gate;
  keys: KeyCache;
  control: ControlDb;
  catalogue: Catalogue;
  objects: ObjectStore;
  /** The local store's files (null: S3, whose links leave this server). */
  files: LocalStore | null;
  /** Seconds a download should wait while today's publication is due (null: none is). */
  publishRetryAfter: () => number | null;
  log: Logger;
  shared?: LookupShared;
  clock?: Clock;
}

export interface PublicApp {
  app: HttpApp;
  metrics: Metrics;
  /** Every route of the port (what the OpenAPI document must describe). */
  routes: RouteTable;
  edge: Edge;
}

export function createPublicApp(d: PublicAppDeps): PublicApp {
  const { config, log } = d;
  const clock = d.clock ?? systemClock;
  const shared = d.shared ?? {};
  const app = d.server.app();
  const metrics = new Metrics(shared.metrics);
  const head = new JsonHead();
  const client = new RequestClient(config.trustedProxies, config.keylessIpv6Prefix);
  const routes = new RouteTable(app, log, metrics, config.corsOrigins.length > 0 ? new Cors(config.corsOrigins) : null, config.accessLog, clock);
  const edge: Edge = { metrics, client, clock };
  // The timeline of answers, read by lookups as of a time and the change feed alike.
  const timelines = new TimelineReader(config.dataDir);
  new LookupApi(d.holder, d.gate, head, config.sources !== '' || config.sourcesFile !== '', timelines).register(routes, edge);
  new BatchApi(config, d.holder, d.pool, d.gate, head, log, shared, timelines).register(routes, edge);
  new OpenApiRoute('/api/v1/openapi.json').register(routes, edge);
  new AccountApi(d.gate, log).register(routes, edge);
  new KeysApi(d.control, d.gate, d.keys, log, config).register(routes, edge);
  new TokensApi(d.control, d.gate, d.keys).register(routes, edge);
  new ChangesApi(d.gate, timelines).register(routes, edge);
  const databases = new DatabaseApi(d.control, d.catalogue, d.objects, d.files, d.gate, config.dataDir, config.publicUrl, d.publishRetryAfter);
  databases.register(routes, edge);
  if (d.files) new GeoipUpdateApi(databases, d.files, d.gate).register(routes, edge);
  routes.fallback();
  return { app, metrics, routes, edge };
}
