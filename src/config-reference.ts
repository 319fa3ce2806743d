// What each setting means, for docs/operators/configuration.md (generated from this table by
// scripts/docs.ts). The table is a Record over CONFIG_VARIABLES, so a new setting does not
// compile until it is described here; test/docs.test.ts checks that each stated default is
// the one loadConfig applies.

import type { ConfigVariable } from './config.js';

export interface SettingHelp {
  group: 'Serving' | 'Data and builds' | 'Accounts and limits' | 'Database downloads' | 'Cluster' | 'Logs';
  /** The default as it would be written in the environment; absent where it is none or depends on the machine. */
  default?: string;
  /** How the default is shown when it is not a value (`cores`, `none`). */
  shown?: string;
  meaning: string;
}

export const CONFIG_REFERENCE: Readonly<Record<ConfigVariable, SettingHelp>> = {
  HOST: { group: 'Serving', default: '127.0.0.1', meaning: 'Address the lookup API listens on.' },
  PORT: { group: 'Serving', default: '8080', meaning: 'Port of the lookup API (0: any free port).' },
  ADMIN_HOST: { group: 'Serving', default: '127.0.0.1', meaning: 'Address of the admin port: `/healthz`, `/readyz`, `/metrics`, the admin API.' },
  ADMIN_PORT: { group: 'Serving', default: '8081', meaning: 'Port of the admin port (0: any free port).' },
  HTTP_SERVER: {
    group: 'Serving',
    default: 'auto',
    meaning:
      '`uws` (uWebSockets.js, the fastest, where its native binary loads), `bun` (`Bun.serve`, on Bun), `node` (`node:http`, any runtime, answers HTTP/1.0), or `auto`: Bun.serve on Bun, else uWS where it loads, else node.',
  },
  FRONTEND_THREADS: {
    group: 'Serving',
    shown: 'cores',
    meaning:
      'Threads answering PORT, each with the whole lookup app, all on the one port. Where the server cannot share a port between threads (`node:http` before Node 22.12) the default is 1 and more is refused.',
  },
  BATCH_WORKERS: { group: 'Serving', shown: 'cores', meaning: 'Workers answering `POST /batch` (1–256), one pool for every front-end thread.' },
  BATCH_QUEUE: { group: 'Serving', default: '64', meaning: 'Batches that may wait for a worker; one more is 429 with `Retry-After: 1`.' },
  MAX_BATCH_BODY_BYTES: { group: 'Serving', default: '524288', meaning: 'The largest batch body; larger is 413.' },
  BATCH_BODY_MEMORY_MIB: {
    group: 'Serving',
    default: '64',
    meaning: 'Memory all batch bodies being received may hold together; past it a new batch is 429 with `Retry-After: 1` and its connection closes.',
  },
  BODY_TIMEOUT_S: { group: 'Serving', default: '30', meaning: 'A request body must arrive within this many seconds, or the connection closes.' },
  KEEP_ALIVE_TIMEOUT_S: { group: 'Serving', default: '75', meaning: 'How long an idle keep-alive connection stays open (`node`; uWS fixes its own at 10 s).' },
  SHUTDOWN_GRACE_S: { group: 'Serving', default: '30', meaning: 'On SIGTERM or SIGINT, how long batches and downloads in flight may take to finish.' },
  TRUSTED_PROXIES: {
    group: 'Serving',
    shown: 'none',
    meaning: "Comma-separated networks whose forwarding headers (`X-Forwarded-For`, `Forwarded`) are believed for the client's address.",
  },
  PUBLIC_URL: {
    group: 'Serving',
    shown: 'none',
    meaning:
      "`http(s)://host[:port][/prefix]` that absolute links (a download's `Location`) are built from; without it links are relative, or absolute from a trusted proxy's forwarding headers.",
  },
  CORS_ORIGINS: { group: 'Serving', shown: 'none', meaning: 'Browser origins allowed to call the public port: `*`, or comma-separated origins.' },
  KEYLESS_TIER: {
    group: 'Serving',
    default: 'basic',
    meaning: 'Fields of keyless answers: `basic`, or `starter`, `scale`, `max` for private deployments and benchmarks.',
  },
  KEYLESS_IPV6_PREFIX: { group: 'Serving', default: '64', meaning: 'Keyless IPv6 clients are counted per network of this prefix length.' },
  DATA_DIR: {
    group: 'Data and builds',
    default: './data',
    meaning: 'Where feeds, builds, the control database and the counters live (see data-directory.md).',
  },
  DEMO: { group: 'Data and builds', default: 'true', meaning: 'Import and build the bundled demo feeds on a data directory with no feeds and no builds.' },
  SOURCES: {
    group: 'Data and builds',
    shown: 'none',
    meaning:
      'Sources of the shipped registry to fetch, each on its own interval, with a new build whenever one changes: `public` for all, registry names, `-name` to leave one out (`public,-nordvpn`).',
  },
  SOURCES_FILE: {
    group: 'Data and builds',
    shown: 'none',
    meaning: "A sources file of your own, fetched and imported beside SOURCES's (`ipsift sources refresh`).",
  },
  SOURCES_MIRROR: {
    group: 'Data and builds',
    shown: 'none',
    meaning: 'Fetch every source URL `https://HOST/PATH` as `<SOURCES_MIRROR>/HOST/PATH` (query kept): an internal mirror for air-gapped sites.',
  },
  SOURCES_CONCURRENCY: { group: 'Data and builds', default: '4', meaning: 'Source fetches at once.' },
  SOURCES_MAX_BYTES: {
    group: 'Data and builds',
    default: '67108864',
    meaning: 'The most one source fetch may bring (a source of the registry may set less); past it the answer is refused.',
  },
  SOURCES_SHRINK_PCT: {
    group: 'Data and builds',
    default: '50',
    meaning: "A source's new copy with this share fewer entries than its last good copy is refused, and the last good copy keeps answering.",
  },
  SOURCES_MAX_ENTRIES: {
    group: 'Data and builds',
    default: '1000000',
    meaning:
      "The most entries (networks) one source's copy may hold; past it the copy is refused, counted before it is parsed where the format has a line an entry, and the last good copy keeps answering. The largest public list in the registry holds about 60 000.",
  },
  KEEP_BUILDS: {
    group: 'Data and builds',
    default: '5',
    meaning:
      "Builds kept on disk and in the object store, newest first: older ones are removed after each build with their exports, notice and index replica. The serving build, the one each dataset's downloads serve and the one replicas read always stay. A build of the public registry's data takes about 55 MB on disk and as much in a local store.",
  },
  HISTORY_DAYS: {
    group: 'Data and builds',
    default: '365',
    meaning:
      'Days of answers kept for lookups as of a time (`GET /{ip}?at=…`, plans scale and max): the timeline of every range boundary and what it answered, extended after each build that serves, in `history/timeline.bin`. Older answers are dropped but the last one before the edge.',
  },
  BUILD_MEMORY_MIB: {
    group: 'Data and builds',
    default: '4096',
    meaning:
      "The JavaScript heap (MiB) a server's build and source-refresh thread may use. A build that needs more fails with a message and the serving build stays, while lookups go on: it never takes the server with it. The export threads' typed arrays are outside it. `ipsift build`, its own process, is not bound by it.",
  },
  EXPORT_THREADS: {
    group: 'Data and builds',
    shown: 'one a core, four at most',
    meaning:
      "Threads a build writes its database exports on (builds of 50 000 records or more). Each holds one database's tree at a time, about 0.5 GB for 1 M ranges: on two cores a 1 M-range build peaks at about 1.65 GB of RSS with two and 1.14–1.18 GB with one, whose exports take a third as long again.",
  },
  EXPORTS_RESTRICTED: {
    group: 'Data and builds',
    shown: 'none',
    meaning:
      "Sources whose terms do not allow passing their data on (redistribute: false in the registry or your sources file) that the database exports include anyway, comma-separated: name only those you hold the right to redistribute. Lookups use every source either way; the exports' NOTICE.txt names what they hold and what was left out.",
  },
  PUBLISH_AT: {
    group: 'Data and builds',
    default: '00:05',
    meaning: 'UTC time (`HH:MM[:SS]`) of the daily build, which serves and publishes; empty for none.',
  },
  INDEX_POLL_MS: {
    group: 'Data and builds',
    default: '1000',
    meaning: 'How often the serving build pointer is checked: the bound on a new build reaching the servers.',
  },
  CATALOGUE_FILE: {
    group: 'Database downloads',
    shown: '`config/catalogue.json`',
    meaning: 'The databases offered: ids, schema versions, formats, update frequency.',
  },
  STORE: {
    group: 'Database downloads',
    default: 'local',
    meaning: 'Where published databases go: `local` (in DATA_DIR, served under `/files/` by signed links) or `s3`.',
  },
  S3_BUCKET: { group: 'Database downloads', shown: 'none', meaning: "The bucket of `STORE=s3` (credentials from the AWS SDK's usual sources)." },
  S3_PREFIX: { group: 'Database downloads', shown: 'empty', meaning: 'A prefix for every key ipsift writes to the bucket.' },
  S3_REGION: { group: 'Database downloads', default: 'us-east-1', meaning: "The bucket's region." },
  S3_ENDPOINT: { group: 'Database downloads', shown: 'AWS', meaning: "An S3-compatible server's URL; selects path-style addressing." },
  PLANS_FILE: {
    group: 'Accounts and limits',
    shown: '`config/plans.json`',
    meaning: 'Plans (tier, quota, rate, default overage limit) and the keyless limits.',
  },
  ACCOUNTING_GRACE_S: {
    group: 'Accounts and limits',
    default: '300',
    meaning: 'How long lookups are answered, counted in memory, while the accounting store refuses writes.',
  },
  MAX_KEYS_PER_ORG: { group: 'Accounts and limits', default: '1000', meaning: 'The most live keys an organisation may hold; one more is 409 `KEY_LIMIT`.' },
  KEY_CHANGES_PER_MIN: {
    group: 'Accounts and limits',
    default: '60',
    meaning:
      "Key creations, rotations and revocations an organisation's keys may make a minute, counted from the audit log (across threads and nodes); past it 429 `RATE_LIMITED`.",
  },
  ROLE: {
    group: 'Cluster',
    default: 'all',
    meaning:
      '`all`: one node that imports, builds, publishes and serves; `serve`: a serving node that follows the builds published to the object store (needs `STORE=s3`).',
  },
  REPLICA_POLL_S: { group: 'Cluster', default: '30', meaning: "How often a serving node reads the store's pointer for a new build." },
  ACCOUNTING: {
    group: 'Cluster',
    default: 'lmdb',
    meaning: 'Where the shared counters live: `lmdb` (in DATA_DIR, one machine) or `redis` (every node of a cluster).',
  },
  REDIS_URL: {
    group: 'Cluster',
    default: 'redis://127.0.0.1:6379',
    meaning: 'The Redis of `ACCOUNTING=redis` (`rediss://` for TLS; user, password and database in the URL).',
  },
  REDIS_PREFIX: { group: 'Cluster', default: 'ipsift:', meaning: 'The prefix of every key ipsift writes to Redis.' },
  REDIS_TIMEOUT_MS: {
    group: 'Cluster',
    default: '100',
    meaning: 'How long a counter call may go unanswered before accounting counts as unavailable (and a lookup on a counter with a limit stops waiting for it).',
  },
  CONTROL_DB: {
    group: 'Cluster',
    default: 'sqlite',
    meaning:
      'Where organisations, keys, licences, publications and history live: `sqlite` (in DATA_DIR) or `postgres://user[:password]@host[:port]/db` (every node of a cluster, and the CLI).',
  },
  CONTROL_TIMEOUT_MS: { group: 'Cluster', default: '1000', meaning: 'How long a PostgreSQL query waits before the control database counts as unavailable.' },
  CONTROL_GRACE_S: {
    group: 'Cluster',
    default: '300',
    meaning: 'How long keys already resolved keep working while the control database is unreachable (the rest answers 503 with `Retry-After`).',
  },
  LOG_LEVEL: { group: 'Logs', default: 'info', meaning: 'The least severe log lines written: `info`, `warn` or `error`.' },
  ACCESS_LOG: { group: 'Logs', default: 'off', meaning: 'A JSON line per request (`on`), per sampled request (a share such as `0.01`), or none (`off`).' },
};
