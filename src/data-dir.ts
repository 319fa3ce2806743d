// Every path ipsift keeps in its data directory (DATA_DIR), named once. Modules ask here for
// where their files live; LAYOUT describes each entry for the operator's docs
// (docs/operators/data-directory.md is generated from it, and a test keeps the two in step).

import path from 'node:path';

/** Inside one build directory. */
export const INDEX_FILE = 'index.bin';
export const MANIFEST_FILE = 'manifest.json';
export const EXPORTS_DIR = 'exports';
export const EXPORTS_MANIFEST = 'exports.json';
/** Beside a build's exports: the CSV diffs its publication made (pipeline/publish.ts). */
export const CSV_DIFFS_FILE = 'diffs.json';
/** What a build changed against the build before it (index/build-changes.ts), written after it. */
export const CHANGES_FILE = 'changes.json';

export const feedsDir = (dataDir: string): string => path.join(dataDir, 'feeds');
export const sourcesDir = (dataDir: string): string => path.join(dataDir, 'sources');
export const sourceStateFile = (dataDir: string): string => path.join(sourcesDir(dataDir), 'state.json');
/** Sources an operator set aside (not fetched, not built from) until enabled again. */
export const disabledSourcesFile = (dataDir: string): string => path.join(sourcesDir(dataDir), 'disabled.json');
export const buildsDir = (dataDir: string): string => path.join(dataDir, 'builds');
export const buildDir = (dataDir: string, id: string): string => path.join(buildsDir(dataDir), id);
export const exportsDir = (dataDir: string, id: string): string => path.join(buildDir(dataDir, id), EXPORTS_DIR);
export const currentPointerFile = (dataDir: string): string => path.join(buildsDir(dataDir), 'CURRENT');
export const servingLogFile = (dataDir: string): string => path.join(buildsDir(dataDir), 'serving-log.jsonl');
export const controlDbFile = (dataDir: string): string => path.join(dataDir, 'control.sqlite');
export const accountingDir = (dataDir: string): string => path.join(dataDir, 'accounting.lmdb');
export const storeObjectsDir = (dataDir: string): string => path.join(dataDir, 'store', 'objects');
export const storeLinkSecretFile = (dataDir: string): string => path.join(dataDir, 'store', 'link-secret');
export const tokenKeyFile = (dataDir: string): string => path.join(dataDir, 'token.key');
export const demoKeysFile = (dataDir: string): string => path.join(dataDir, 'demo-keys.json');
export const dailyBuildLockFile = (dataDir: string): string => path.join(dataDir, 'daily-build.lock');
/** Who a server served and refused, and each key's last use, by its admin port (as the traffic history). */
export const keyActivityFile = (dataDir: string, adminPort: number): string => path.join(dataDir, 'history', `keys-${adminPort}.json`);
/** The timeline of answers (history/timeline.ts): what every address answered, as builds served. */
export const timelineFile = (dataDir: string): string => path.join(dataDir, 'history', 'timeline.bin');
/** The traffic history of the server whose admin port is `adminPort`: one file per server, so several share a data directory. */
export const trafficHistoryFile = (dataDir: string, adminPort: number): string => path.join(dataDir, 'history', `traffic-${adminPort}.bin`);

/** What an operator finds in DATA_DIR: each entry, and what it is for. */
export const LAYOUT: readonly { path: string; what: string }[] = [
  {
    path: 'feeds/<name>.feed',
    what: 'Imported feeds, normalised: one range per line with its category and details. `ipsift feed import` and `ipsift sources` write them.',
  },
  { path: 'sources/<name>', what: 'The last good copy of each fetched source: what answers while a fetch fails or an upstream sends bad data.' },
  {
    path: 'sources/state.json',
    what: 'Per source: its validators (ETag, Last-Modified), checksum, entries, when it was last fetched and last changed, and its state (`ipsift sources status`).',
  },
  {
    path: 'sources/disabled.json',
    what: 'Sources an operator disabled (the console, the admin API or `ipsift sources disable`), with who and when: neither fetched nor built from until enabled again.',
  },
  {
    path: 'builds/<YYYYMMDD>-<n>/',
    what: 'One immutable build: `index.bin` (the range index), `manifest.json` (what went in, checksums) and `exports/` (CSV.gz and MMDB files with `exports.json`); `changes.json`, written just after it, compares its answers with the build before it.',
  },
  { path: 'builds/CURRENT', what: 'The id of the build that serves lookups. Replaced atomically; running servers notice and switch.' },
  {
    path: 'builds/serving-log.jsonl',
    what: 'Which build served from when: one line each time a build is made serving here (by a build, `builds use`, the admin API or a replica). Kept when builds are pruned.',
  },
  {
    path: 'control.sqlite',
    what: 'The control plane when CONTROL_DB is `sqlite` (the default): organisations, keys, licences, publications, downloads, audit log, admin tokens (SQLite, WAL).',
  },
  {
    path: 'accounting.lmdb',
    what: 'Rate buckets and allowance counters shared by the threads and processes of this machine when ACCOUNTING is `lmdb` (the default).',
  },
  { path: 'store/objects/', what: 'Published database files when STORE is `local` (the default).' },
  { path: 'store/link-secret', what: 'The key that signs download links of the local store (mode 0600).' },
  { path: 'token.key', what: 'The key that signs short-lived tokens (mode 0600). Every server of a cluster needs the same one.' },
  { path: 'demo-keys.json', what: 'The demo keys made on a fresh data directory (mode 0600), shown once.' },
  { path: 'daily-build.lock', what: 'Held while the daily build runs, so one machine builds at a time.' },
  {
    path: 'history/timeline.bin',
    what: "The timeline of answers: every range boundary any served build had, with what it answered from when, kept for HISTORY_DAYS; `?at=` lookups read it. Extended after each build that serves, rebuilt from the builds on disk if lost. Binary: a JSON header (the spans), then typed columns and the answers' texts; a `timeline.json` of the first history release is replaced by it, its spans made again from the builds still on disk.",
  },
  {
    path: 'history/traffic-<admin port>.bin',
    what: "The console's traffic history: a day of 10-second samples in a ring file of fixed size (346 KB), kept across restarts. None is kept for an ADMIN_PORT of 0.",
  },
  {
    path: 'history/keys-<admin port>.json',
    what: 'Requests, 429s and other refusals per key and organisation over the last day (ten-minute spans), and each key’s last use and source address, as this server saw them; written every minute and at stop.',
  },
];
