// Configuration: defaults → environment (read here and nowhere else) → validated → frozen.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseNetwork, type Network } from './net/network.js';
import { TIERS, tierIndex } from './model/projection.js';
import { DEFAULT_PLANS_FILE } from './model/plans.js';
import { fileURLToPath } from 'node:url';
import { IpsiftError } from './errors.js';
import { LOG_LEVELS, type LogLevel, redactUrl } from './log.js';

/** The catalogue shipped with ipsift (config/catalogue.json), used where CATALOGUE_FILE is not set. */
export const DEFAULT_CATALOGUE_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../config/catalogue.json');

/** Where a setting's value came from: the environment wins over CONFIG_FILE, which wins over the default. */
export type SettingOrigin = 'environment' | 'file' | 'default';

/** A setting as given (before parsing), for the operator's view of the effective configuration. */
export interface GivenSetting {
  readonly name: ConfigVariable;
  /** The text given; null where the default applies. */
  readonly value: string | null;
  readonly origin: SettingOrigin;
}

/** Credentials read from the environment by the libraries ipsift uses (the S3 client), never shown. */
export const CREDENTIAL_VARIABLES = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'GITHUB_TOKEN'] as const;

export interface Config {
  /** Every setting as given and where from; CONFIG_FILE's path (null: none). */
  readonly given: { readonly settings: readonly GivenSetting[]; readonly configFile: string | null; readonly credentialsSet: readonly string[] };
  readonly host: string;
  readonly port: number;
  readonly adminHost: string;
  readonly adminPort: number;
  readonly dataDir: string;
  /**
   * Threads answering the public port, each with the whole lookup app; null: as many as the
   * machine has cores, where the HTTP server can share a port between threads (else 1).
   */
  readonly frontendThreads: number | null;
  /** Piscina workers answering POST /batch. */
  readonly batchWorkers: number;
  /** Batches that may wait for a worker; one more answers 429 with Retry-After. */
  readonly batchQueue: number;
  /** Largest accepted POST /batch body in bytes (413 above it). */
  readonly maxBatchBodyBytes: number;
  /** Bytes all batch bodies being received may hold together; past it a new batch is 429. */
  readonly batchBodyMemoryBytes: number;
  /** A request body must arrive within this long, or the connection is closed. */
  readonly bodyTimeoutMs: number;
  /** Keyless IPv6 clients are counted per network of this prefix length (IPv4: per address). */
  readonly keylessIpv6Prefix: number;
  /**
   * all: one node that builds, publishes and serves (the default); serve: a serving node of a
   * cluster, no feeds, no builder, following the index the builder publishes to the store.
   */
  readonly role: 'all' | 'serve';
  /** How often a serving node checks the store for a new build. */
  readonly replicaPollMs: number;
  /** Where the shared counters live: LMDB in the data directory, or Redis (a cluster). */
  readonly accounting: AccountingConfig;
  /** How long lookups go on being answered, counted in memory, while accounting cannot write. */
  readonly accountingGraceMs: number;
  /** Where organisations, keys, licences and history live: null for DATA_DIR's SQLite file. */
  readonly controlDb: ControlDbConfig;
  /** How long keys already resolved keep working while the control database cannot be reached. */
  readonly controlGraceMs: number;
  /** On SIGTERM/SIGINT, how long requests and downloads in flight may take to finish. */
  readonly shutdownGraceMs: number;
  /** Peers whose X-Forwarded-For / Forwarded headers /myip believes. */
  readonly trustedProxies: readonly Network[];
  /** Field tier of keyless answers (index into TIERS). The contract's default is basic. */
  readonly keylessTier: number;
  /** The HTTP server: auto takes uWebSockets.js where its binary loads, else node:http. */
  readonly httpServer: ServerChoice;
  /** How long an idle keep-alive connection stays open (node:http; uWS fixes its own at 10 s). */
  readonly keepAliveTimeoutMs: number;
  /** On a data directory with no feeds and no builds, import the bundled demo feeds and build. */
  readonly demo: boolean;
  /** How often the serving build pointer is checked for a new build. */
  readonly indexPollMs: number;
  /** Plans file (quotas, rates, overage defaults); config/plans.json by default. */
  readonly plansFile: string;
  /** Catalogue file (databases, versions, formats); config/catalogue.json by default. */
  readonly catalogueFile: string;
  /** UTC time of day (HH:MM[:SS]) of the daily build and publish; '' for none. */
  readonly publishAt: string;
  /** Where published databases go: the local directory, or an S3 bucket. */
  readonly objectStore: ObjectStoreConfig;
  /** A user's own sources file ('' for none). */
  readonly sourcesFile: string;
  /** Sources of the shipped registry: public, names, -name ('' for none). */
  readonly sources: string;
  /** Fetch every source URL https://HOST/PATH as <mirror>/HOST/PATH ('' for none). */
  readonly sourcesMirror: string;
  /** Source fetches at once. */
  readonly sourcesConcurrency: number;
  /** The most one source fetch may bring. */
  readonly sourcesMaxBytes: number;
  /** A source copy with this share (%) fewer entries than the last good one is refused. */
  readonly sourcesShrinkPct: number;
  /** The most entries one source's copy may hold: past it the copy is refused before it costs memory. */
  readonly sourcesMaxEntries: number;
  /** Sources whose terms do not allow redistribution that exports include anyway (the operator holds the right). */
  readonly exportsRestricted: readonly string[];
  /** Builds kept on disk and in the store, newest first (the serving one and those downloads serve always stay). */
  readonly keepBuilds: number;
  /** Days of answers the timeline keeps for lookups as of a time (history/). */
  readonly historyDays: number;
  /** The heap a server's build and source refresh thread may use (MiB): past it the build fails, the server goes on. */
  readonly buildMemoryMib: number;
  /** Threads a build writes its exports on (null: one a core, four at most). */
  readonly exportThreads: number | null;
  /**
   * scheme://host[:port][/prefix] every absolute URL is built from ('' for none: links are
   * relative references, or absolute from a trusted proxy's forwarded headers).
   */
  readonly publicUrl: string;
  /** Browser origins allowed to call the public port (CORS): exact origins, or ['*'] for any; empty: none. */
  readonly corsOrigins: readonly string[];
  /** The least severe log level written. */
  readonly logLevel: LogLevel;
  /** The share of requests the access log writes a line for: 0 none (the default), 1 every one. */
  readonly accessLog: number;
  /** The most live (neither revoked nor expired) keys an organisation may hold. */
  readonly maxKeysPerOrg: number;
  /** Key changes (create, rotate, revoke) an organisation's keys may make a minute on the public port. */
  readonly keyChangesPerMinute: number;
}

export type ObjectStoreConfig =
  | { readonly kind: 'local' }
  | { readonly kind: 's3'; readonly bucket: string; readonly prefix: string; readonly region: string; readonly endpoint?: string };

export type AccountingConfig =
  | { readonly kind: 'lmdb' }
  | { readonly kind: 'redis'; readonly url: string; readonly prefix: string; readonly timeoutMs: number };

export type ControlDbConfig = { readonly url: string; readonly timeoutMs: number } | null;

/**
 * Every valid 1000-address batch fits: the longest address is 45 characters, and even with
 * every character written as a 6-byte \u escape plus quotes, comma and 200 bytes of
 * whitespace an entry stays under 480 bytes (1000 × 480 < 512 KiB).
 */
export const DEFAULT_MAX_BATCH_BODY_BYTES = 512 * 1024;
const MIN_MAX_BATCH_BODY_BYTES = 64 * 1024;

export const DEFAULTS = Object.freeze({
  host: '127.0.0.1',
  port: 8080,
  adminHost: '127.0.0.1',
  adminPort: 8081,
  dataDir: './data',
  batchWorkers: os.availableParallelism(),
  batchQueue: 64,
  maxBatchBodyBytes: DEFAULT_MAX_BATCH_BODY_BYTES,
  batchBodyMemoryMib: 64,
  bodyTimeoutS: 30,
  keylessIpv6Prefix: 64,
  accountingGraceS: 300,
  controlGraceS: 300,
  shutdownGraceS: 30,
  trustedProxies: '',
  keylessTier: 'basic',
  httpServer: 'auto',
  // Above the 60 s idle timeout of common load balancers, which then close first.
  keepAliveTimeoutS: 75,
  demo: true,
  indexPollMs: 1000,
  plansFile: DEFAULT_PLANS_FILE,
  catalogueFile: DEFAULT_CATALOGUE_FILE,
  publishAt: '00:05',
  store: 'local',
  maxKeysPerOrg: 1000,
  keyChangesPerMinute: 60,
  sourcesConcurrency: 4,
  sourcesMaxBytes: 64 * 1024 * 1024,
  sourcesShrinkPct: 50,
  sourcesMaxEntries: 1_000_000,
  keepBuilds: 5,
  historyDays: 365,
  buildMemoryMib: 4096,
  exportThreads: null,
});

/** A comma-separated list of source names ('' for none). */
function sourceNames(setting: string, text: string): string[] {
  const names = text
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  const bad = names.find((n) => !/^[a-z0-9][a-z0-9._-]{0,63}$/.test(n));
  if (bad !== undefined) throw new ConfigError(`${setting} must list source names, comma-separated: ${JSON.stringify(bad)} is not one`);
  return names;
}

export class ConfigError extends IpsiftError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CONFIG', message, options);
  }
}

function objectStoreConfig(get: (name: ConfigVariable) => string | undefined): ObjectStoreConfig {
  const kind = get('STORE') ?? DEFAULTS.store;
  if (kind === 'local') return { kind };
  if (kind !== 's3') throw new ConfigError(`STORE must be local or s3, got ${JSON.stringify(kind)}`);
  const bucket = get('S3_BUCKET');
  if (!bucket) throw new ConfigError('STORE=s3 needs S3_BUCKET');
  const endpoint = get('S3_ENDPOINT');
  return { kind, bucket, prefix: get('S3_PREFIX') ?? '', region: get('S3_REGION') ?? 'us-east-1', ...(endpoint ? { endpoint } : {}) };
}

function role(text: string, store: string): 'all' | 'serve' {
  if (text !== 'all' && text !== 'serve') throw new ConfigError(`ROLE must be all or serve, got ${JSON.stringify(text)}`);
  // A serving node follows what the builder published to a store they share; a local store
  // is the node's own directory, where nothing is ever published.
  if (text === 'serve' && store !== 's3')
    throw new ConfigError("ROLE=serve follows the builds a builder publishes to the object store: set STORE=s3 (the builder's bucket)");
  return text;
}

function accountingConfig(get: (name: ConfigVariable) => string | undefined): AccountingConfig {
  const kind = get('ACCOUNTING') ?? 'lmdb';
  if (kind === 'lmdb') return { kind };
  if (kind !== 'redis') throw new ConfigError(`ACCOUNTING must be lmdb or redis, got ${JSON.stringify(kind)}`);
  const url = get('REDIS_URL') ?? 'redis://127.0.0.1:6379';
  if (!/^rediss?:\/\//.test(url)) throw new ConfigError('REDIS_URL must be redis://[user:password@]host[:port][/db] or rediss://… (TLS)');
  return { kind, url, prefix: get('REDIS_PREFIX') ?? 'ipsift:', timeoutMs: integer('REDIS_TIMEOUT_MS', get('REDIS_TIMEOUT_MS') ?? '100', 1, 60_000) };
}

function controlDbConfig(get: (name: ConfigVariable) => string | undefined): ControlDbConfig {
  const url = get('CONTROL_DB');
  if (url === undefined || url === '' || url === 'sqlite') return null;
  if (!/^postgres(ql)?:\/\//.test(url))
    throw new ConfigError("CONTROL_DB must be sqlite (the data directory's file) or postgres://[user[:password]@]host[:port]/database");
  return { url, timeoutMs: integer('CONTROL_TIMEOUT_MS', get('CONTROL_TIMEOUT_MS') ?? '1000', 1, 60_000) };
}

function logLevel(text: string): LogLevel {
  const v = text.toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(v)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(text)}`);
  return v as LogLevel;
}

/** ACCESS_LOG: off, on, or the share of requests to log (0.01: one in a hundred, at random). */
function accessLog(text: string): number {
  const v = text.toLowerCase();
  if (v === 'off') return 0;
  if (v === 'on') return 1;
  if (/^(0(\.\d+)?|1(\.0+)?)$/.test(v)) return Number(v);
  throw new ConfigError(`ACCESS_LOG must be off, on or a share between 0 and 1 (0.01: one request in a hundred), got ${JSON.stringify(text)}`);
}

/** CORS_ORIGINS: '*', or comma-separated origins as browsers send them (scheme://host[:port]). */
function corsOrigins(text: string): string[] {
  const list = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (list.includes('*')) {
    if (list.length > 1) throw new ConfigError(`CORS_ORIGINS is either * or a list of origins, got ${JSON.stringify(text)}`);
    return ['*'];
  }
  return list.map((o) => {
    let u: URL | null = null;
    try {
      u = new URL(o);
    } catch {
      // refused below
    }
    if (u === null || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.origin !== o) {
      throw new ConfigError(`CORS_ORIGINS: ${JSON.stringify(o)} is not an origin (scheme://host[:port], no path or trailing slash)`);
    }
    return o;
  });
}

function publicUrl(text: string): string {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new ConfigError(
      `PUBLIC_URL must be an absolute http(s) URL such as https://ip.example.com or https://example.com/ipsift, got ${JSON.stringify(text)}`,
    );
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.search || u.hash || u.username || u.password) {
    throw new ConfigError(`PUBLIC_URL must be http(s)://host[:port][/path] with no query, fragment or credentials, got ${JSON.stringify(redactUrl(text))}`);
  }
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
}

/** The HTTP servers (http/server/): `auto` takes uWS where its native binary loads, Bun.serve on Bun. */
export const SERVER_CHOICES = ['auto', 'uws', 'bun', 'node'] as const;
export type ServerChoice = (typeof SERVER_CHOICES)[number];

function httpServer(text: string): ServerChoice {
  if (!(SERVER_CHOICES as readonly string[]).includes(text))
    throw new ConfigError(`HTTP_SERVER must be one of ${SERVER_CHOICES.join(', ')}, got ${JSON.stringify(text)}`);
  return text as ServerChoice;
}

function publishAt(text: string): string {
  if (text !== '' && !/^([01]\d|2[0-3]):([0-5]\d)(:[0-5]\d)?$/.test(text))
    throw new ConfigError(`PUBLISH_AT must be HH:MM or HH:MM:SS (UTC) or empty, got ${JSON.stringify(text)}`);
  return text;
}

function integer(name: string, text: string, min: number, max: number): number {
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new ConfigError(`${name} must be an integer ${min}..${max}, got ${JSON.stringify(text)}`);
  }
  return Number(text);
}

/** SOURCES: comma-separated `public`, registry names and `-name`s (the names are checked against the registry where it is read). */
function sourcesSpec(text: string): string {
  const tokens = text
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  const bad = tokens.find((t) => !/^-?[a-z0-9][a-z0-9._-]{0,63}$/.test(t));
  if (bad !== undefined)
    throw new ConfigError(`SOURCES must list public, registry names and -name to leave one out (public,-nordvpn), got ${JSON.stringify(bad)}`);
  return tokens.join(',');
}

/** SOURCES_MIRROR: an http(s) base URL, kept without a trailing slash. */
function mirrorBase(text: string): string {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new ConfigError(`SOURCES_MIRROR must be an http(s) URL, got ${JSON.stringify(redactUrl(text))}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ConfigError(`SOURCES_MIRROR must be an http(s) URL, got ${JSON.stringify(redactUrl(text))}`);
  return text.replace(/\/+$/, '');
}

function flag(name: string, text: string): boolean {
  if (/^(1|true|yes|on)$/i.test(text)) return true;
  if (/^(0|false|no|off)$/i.test(text)) return false;
  throw new ConfigError(`${name} must be true or false, got ${JSON.stringify(text)}`);
}

/** Every variable the configuration reads: the environment's names, and a config file's keys. */
export const CONFIG_VARIABLES = [
  'HOST',
  'PORT',
  'ADMIN_HOST',
  'ADMIN_PORT',
  'DATA_DIR',
  'FRONTEND_THREADS',
  'BATCH_WORKERS',
  'BATCH_QUEUE',
  'MAX_BATCH_BODY_BYTES',
  'BATCH_BODY_MEMORY_MIB',
  'BODY_TIMEOUT_S',
  'KEYLESS_IPV6_PREFIX',
  'ACCOUNTING_GRACE_S',
  'SHUTDOWN_GRACE_S',
  'TRUSTED_PROXIES',
  'KEYLESS_TIER',
  'HTTP_SERVER',
  'KEEP_ALIVE_TIMEOUT_S',
  'DEMO',
  'INDEX_POLL_MS',
  'PLANS_FILE',
  'CATALOGUE_FILE',
  'PUBLISH_AT',
  'PUBLIC_URL',
  'CORS_ORIGINS',
  'LOG_LEVEL',
  'ACCESS_LOG',
  'STORE',
  'S3_BUCKET',
  'S3_PREFIX',
  'S3_REGION',
  'S3_ENDPOINT',
  'SOURCES_FILE',
  'SOURCES',
  'SOURCES_MIRROR',
  'SOURCES_CONCURRENCY',
  'SOURCES_MAX_BYTES',
  'SOURCES_SHRINK_PCT',
  'SOURCES_MAX_ENTRIES',
  'EXPORTS_RESTRICTED',
  'KEEP_BUILDS',
  'HISTORY_DAYS',
  'BUILD_MEMORY_MIB',
  'EXPORT_THREADS',
  'ACCOUNTING',
  'REDIS_URL',
  'REDIS_PREFIX',
  'REDIS_TIMEOUT_MS',
  'ROLE',
  'REPLICA_POLL_S',
  'CONTROL_DB',
  'CONTROL_TIMEOUT_MS',
  'CONTROL_GRACE_S',
  'MAX_KEYS_PER_ORG',
  'KEY_CHANGES_PER_MIN',
] as const;
export type ConfigVariable = (typeof CONFIG_VARIABLES)[number];

/**
 * CONFIG_FILE: a JSON object whose keys are the environment's names ({"PORT": 8080,
 * "DATA_DIR": "/var/lib/ipsift"}); the environment wins where both set one. Unknown keys are
 * refused, so a misspelt setting is an error rather than a default silently kept.
 */
function fileSettings(file: string): Partial<Record<ConfigVariable, string>> {
  let doc: unknown;
  try {
    doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ConfigError(`CONFIG_FILE ${file}: ${e instanceof SyntaxError ? `not JSON (${e.message})` : 'cannot be read'}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new ConfigError(`CONFIG_FILE ${file}: must be a JSON object of settings`);
  const out: Partial<Record<ConfigVariable, string>> = {};
  for (const [key, value] of Object.entries(doc)) {
    if (!(CONFIG_VARIABLES as readonly string[]).includes(key)) {
      throw new ConfigError(
        `CONFIG_FILE ${file}: unknown setting ${JSON.stringify(key)} (settings are the environment's names: ${CONFIG_VARIABLES.join(', ')})`,
      );
    }
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw new ConfigError(`CONFIG_FILE ${file}: ${key} must be a string, number or boolean`);
    }
    out[key as ConfigVariable] = String(value);
  }
  return out;
}

/** Builds the configuration from an environment (process.env at the entry point) and CONFIG_FILE. */
export function loadConfig(env: Record<string, string | undefined>, overrides: Partial<Config> = {}): Config {
  const file = env.CONFIG_FILE ? fileSettings(path.resolve(env.CONFIG_FILE)) : {};
  const get = (name: ConfigVariable): string | undefined => {
    const v = env[name] === undefined || env[name] === '' ? file[name] : env[name];
    return v === undefined || v === '' ? undefined : v;
  };
  const proxies = (get('TRUSTED_PROXIES') ?? DEFAULTS.trustedProxies)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const r = parseNetwork(s);
      if (!r.ok) throw new ConfigError(`TRUSTED_PROXIES: ${r.reason}`);
      return r.network;
    });
  const tierName = get('KEYLESS_TIER') ?? DEFAULTS.keylessTier;
  if (!(TIERS as readonly string[]).includes(tierName)) {
    throw new ConfigError(`KEYLESS_TIER must be one of ${TIERS.join(', ')}, got ${JSON.stringify(tierName)}`);
  }
  const given = {
    settings: CONFIG_VARIABLES.map((name): GivenSetting => {
      // PUBLISH_AT alone means something when empty (no daily build); elsewhere empty is unset.
      if (name === 'PUBLISH_AT' && (env.PUBLISH_AT ?? file.PUBLISH_AT) === '')
        return { name, value: '', origin: env.PUBLISH_AT === '' ? 'environment' : 'file' };
      const fromEnv = env[name] !== undefined && env[name] !== '';
      const value = get(name) ?? null;
      return { name, value, origin: fromEnv ? 'environment' : value === null ? 'default' : 'file' };
    }),
    configFile: env.CONFIG_FILE ? path.resolve(env.CONFIG_FILE) : null,
    credentialsSet: CREDENTIAL_VARIABLES.filter((name) => (env[name] ?? '') !== ''),
  };
  const config: Config = {
    given,
    host: get('HOST') ?? DEFAULTS.host,
    port: integer('PORT', get('PORT') ?? String(DEFAULTS.port), 0, 65535),
    adminHost: get('ADMIN_HOST') ?? DEFAULTS.adminHost,
    adminPort: integer('ADMIN_PORT', get('ADMIN_PORT') ?? String(DEFAULTS.adminPort), 0, 65535),
    dataDir: path.resolve(get('DATA_DIR') ?? DEFAULTS.dataDir),
    frontendThreads: get('FRONTEND_THREADS') === undefined ? null : integer('FRONTEND_THREADS', get('FRONTEND_THREADS')!, 1, 256),
    batchWorkers: integer('BATCH_WORKERS', get('BATCH_WORKERS') ?? String(DEFAULTS.batchWorkers), 1, 256),
    batchQueue: integer('BATCH_QUEUE', get('BATCH_QUEUE') ?? String(DEFAULTS.batchQueue), 0, 100000),
    maxBatchBodyBytes: integer(
      'MAX_BATCH_BODY_BYTES',
      get('MAX_BATCH_BODY_BYTES') ?? String(DEFAULTS.maxBatchBodyBytes),
      MIN_MAX_BATCH_BODY_BYTES,
      64 * 1024 * 1024,
    ),
    batchBodyMemoryBytes: integer('BATCH_BODY_MEMORY_MIB', get('BATCH_BODY_MEMORY_MIB') ?? String(DEFAULTS.batchBodyMemoryMib), 1, 65536) * 1024 * 1024,
    bodyTimeoutMs: integer('BODY_TIMEOUT_S', get('BODY_TIMEOUT_S') ?? String(DEFAULTS.bodyTimeoutS), 1, 3600) * 1000,
    keylessIpv6Prefix: integer('KEYLESS_IPV6_PREFIX', get('KEYLESS_IPV6_PREFIX') ?? String(DEFAULTS.keylessIpv6Prefix), 1, 128),
    shutdownGraceMs: integer('SHUTDOWN_GRACE_S', get('SHUTDOWN_GRACE_S') ?? String(DEFAULTS.shutdownGraceS), 0, 3600) * 1000,
    role: role(get('ROLE') ?? 'all', get('STORE') ?? DEFAULTS.store),
    replicaPollMs: integer('REPLICA_POLL_S', get('REPLICA_POLL_S') ?? '30', 1, 86400) * 1000,
    accounting: accountingConfig(get),
    accountingGraceMs: integer('ACCOUNTING_GRACE_S', get('ACCOUNTING_GRACE_S') ?? String(DEFAULTS.accountingGraceS), 0, 86400) * 1000,
    controlDb: controlDbConfig(get),
    controlGraceMs: integer('CONTROL_GRACE_S', get('CONTROL_GRACE_S') ?? String(DEFAULTS.controlGraceS), 0, 86400) * 1000,
    trustedProxies: proxies,
    keylessTier: tierIndex(tierName),
    httpServer: httpServer(get('HTTP_SERVER') ?? DEFAULTS.httpServer),
    keepAliveTimeoutMs: integer('KEEP_ALIVE_TIMEOUT_S', get('KEEP_ALIVE_TIMEOUT_S') ?? String(DEFAULTS.keepAliveTimeoutS), 1, 3600) * 1000,
    demo: flag('DEMO', get('DEMO') ?? String(DEFAULTS.demo)),
    indexPollMs: integer('INDEX_POLL_MS', get('INDEX_POLL_MS') ?? String(DEFAULTS.indexPollMs), 50, 60000),
    plansFile: path.resolve(get('PLANS_FILE') ?? DEFAULTS.plansFile),
    catalogueFile: path.resolve(get('CATALOGUE_FILE') ?? DEFAULTS.catalogueFile),
    // Set and empty means no daily build (an empty value elsewhere means the default).
    publishAt: (env.PUBLISH_AT ?? file.PUBLISH_AT) === '' ? '' : publishAt(get('PUBLISH_AT') ?? DEFAULTS.publishAt),
    publicUrl: get('PUBLIC_URL') === undefined ? '' : publicUrl(get('PUBLIC_URL')!),
    corsOrigins: corsOrigins(get('CORS_ORIGINS') ?? ''),
    logLevel: logLevel(get('LOG_LEVEL') ?? 'info'),
    accessLog: accessLog(get('ACCESS_LOG') ?? 'off'),
    objectStore: objectStoreConfig(get),
    sourcesFile: get('SOURCES_FILE') ? path.resolve(get('SOURCES_FILE')!) : '',
    sources: sourcesSpec(get('SOURCES') ?? ''),
    sourcesMirror: get('SOURCES_MIRROR') ? mirrorBase(get('SOURCES_MIRROR')!) : '',
    sourcesConcurrency: integer('SOURCES_CONCURRENCY', get('SOURCES_CONCURRENCY') ?? String(DEFAULTS.sourcesConcurrency), 1, 64),
    sourcesMaxBytes: integer('SOURCES_MAX_BYTES', get('SOURCES_MAX_BYTES') ?? String(DEFAULTS.sourcesMaxBytes), 1024, 2 ** 32),
    sourcesShrinkPct: integer('SOURCES_SHRINK_PCT', get('SOURCES_SHRINK_PCT') ?? String(DEFAULTS.sourcesShrinkPct), 1, 100),
    sourcesMaxEntries: integer('SOURCES_MAX_ENTRIES', get('SOURCES_MAX_ENTRIES') ?? String(DEFAULTS.sourcesMaxEntries), 1, 100_000_000),
    exportsRestricted: sourceNames('EXPORTS_RESTRICTED', get('EXPORTS_RESTRICTED') ?? ''),
    keepBuilds: integer('KEEP_BUILDS', get('KEEP_BUILDS') ?? String(DEFAULTS.keepBuilds), 1, 10_000),
    historyDays: integer('HISTORY_DAYS', get('HISTORY_DAYS') ?? String(DEFAULTS.historyDays), 1, 36_500),
    buildMemoryMib: integer('BUILD_MEMORY_MIB', get('BUILD_MEMORY_MIB') ?? String(DEFAULTS.buildMemoryMib), 8, 1_048_576),
    exportThreads: get('EXPORT_THREADS') ? integer('EXPORT_THREADS', get('EXPORT_THREADS')!, 1, 64) : DEFAULTS.exportThreads,
    maxKeysPerOrg: integer('MAX_KEYS_PER_ORG', get('MAX_KEYS_PER_ORG') ?? String(DEFAULTS.maxKeysPerOrg), 1, 1_000_000),
    keyChangesPerMinute: integer('KEY_CHANGES_PER_MIN', get('KEY_CHANGES_PER_MIN') ?? String(DEFAULTS.keyChangesPerMinute), 1, 100_000),
    ...overrides,
  };
  return Object.freeze(config);
}
