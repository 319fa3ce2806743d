// Every command's help, as `ipsift <command> --help` prints it: one table, so the reference
// in docs/operators/cli.md is generated from the very text the commands print.

import { EVIDENCE, EVIDENCE_KINDS } from '../feeds/evidence.js';
import { FEED_FORMATS } from '../feeds/formats.js';
import { commandLines } from './command-list.js';

export const HELP: Record<string, string> = {
  '': `ipsift — IP classification service

Usage: ipsift <command> [options]
       ipsift --version

Commands:
${commandLines()}

Every command takes --help. Configuration comes from the environment (see README):
DATA_DIR (default ./data), HOST, PORT, ADMIN_HOST, ADMIN_PORT, HTTP_SERVER (auto, uws, bun,
node), FRONTEND_THREADS (default: the cores), KEEP_ALIVE_TIMEOUT_S, PUBLIC_URL, CORS_ORIGINS,
TRUSTED_PROXIES, BATCH_WORKERS, BATCH_QUEUE, MAX_BATCH_BODY_BYTES, BATCH_BODY_MEMORY_MIB,
BODY_TIMEOUT_S, KEYLESS_TIER, KEYLESS_IPV6_PREFIX, ACCOUNTING_GRACE_S, SHUTDOWN_GRACE_S, DEMO,
INDEX_POLL_MS, PLANS_FILE, CATALOGUE_FILE, PUBLISH_AT, SOURCES (public, names, -name),
SOURCES_FILE, SOURCES_MIRROR, SOURCES_CONCURRENCY, SOURCES_MAX_BYTES, SOURCES_SHRINK_PCT, SOURCES_MAX_ENTRIES, EXPORTS_RESTRICTED, KEEP_BUILDS, HISTORY_DAYS, BUILD_MEMORY_MIB, EXPORT_THREADS,
STORE (local, s3),
S3_BUCKET, S3_PREFIX, S3_REGION, S3_ENDPOINT, ACCOUNTING (lmdb, redis), REDIS_URL, REDIS_PREFIX,
REDIS_TIMEOUT_MS, CONTROL_DB (sqlite, postgres://…), CONTROL_TIMEOUT_MS, CONTROL_GRACE_S, ROLE
(all, serve), REPLICA_POLL_S, LOG_LEVEL (info, warn, error), ACCESS_LOG (off, on, or a share such
as 0.01), MAX_KEYS_PER_ORG, KEY_CHANGES_PER_MIN. CONFIG_FILE names an optional JSON file of the same settings
({"PORT": 8080, "DATA_DIR": "/var/lib/ipsift"}); the environment wins where both set one.`,
  serve: `Usage: ipsift serve [--host <addr>] [--port <n>] [--admin-host <addr>] [--admin-port <n>] [--data-dir <dir>]

Serves lookups on HOST:PORT (default 127.0.0.1:8080) and health, readiness and metrics on
ADMIN_HOST:ADMIN_PORT (default 127.0.0.1:8081). On a data directory with no feeds and no
builds it first imports the bundled demo feeds and builds (DEMO=0 to skip). A build that
'ipsift build' makes serving is picked up without a restart (also on SIGHUP).

Each option sets the variable of the same name (HOST, PORT, ADMIN_HOST, ADMIN_PORT, DATA_DIR)
for this run, over the environment and CONFIG_FILE. serve is the one command that makes the
data directory when it is not there; every other command refuses, naming where it looked.`,
  'feed import': `Usage: ipsift feed import <file> [options]

Imports a feed into DATA_DIR/feeds. Importing the same file again replaces its feed; a feed
of the same name from another file is refused unless --replace is given. The file is checked
whole first: on the first bad line nothing is imported and the error names file, line
and reason.

Formats:
  csv                 header row naming the columns, any order: network (CIDR, range a-b, or
                      address), category, and the category's detail columns (provider,
                      confidence, method, first_seen, last_seen, hits, hits_days_pct, providers_num)
${FEED_FORMATS.map((f) => `  ${f.name.padEnd(20)}${f.summary}${f.defaultCategory ? ` (default category ${f.defaultCategory})` : ''}`).join('\n')}
  auto                the default: the format the content shows (a named layout; else a CSV
                      whose header names a network column, in any spelling; else a list)

Options:
  --format <format>      default auto; a format named here must match the file (no format
                         stamps its category or provider on a file of another kind)
  --skip-invalid         skip malformed lines (counted in the report) instead of failing
  --name <name>          stored feed name (default: from the file name)
  --replace              replace a feed of the same name imported from another file
  --category <category>  vpn, hosting, relay, tor, cdn, resproxy, dcproxy, mobproxy
                         (required for lists; for CSV, fills empty category cells)
  --provider, --confidence, --method, --first-seen, --last-seen, --hits,
  --hits-days-pct, --providers-num <value>
                         detail values for rows that do not give their own
  --priority <n>         integer -100..100, default 0: inside a category, this feed's
                         networks win over those of lower-priority feeds, however specific
                         (give a provider's own list of its address space a higher one)
  --not <categories>     comma-separated categories this file's networks are known not to
                         be in (Apple's relay egress: --not vpn); wins over lower- and
                         equal-priority feeds' claims on those networks
  --evidence <kind>      what the file is (default list); the kind's band comes before
                         --priority and bounds what it may claim (README, "Evidence"):
${EVIDENCE_KINDS.map((k) => `                           ${k.padEnd(12)}${EVIDENCE[k].summary}`).join('\n')}
  --allow-large-blocks   take networks of a /8 (IPv4) or /16 (IPv6) or more, or in
                         special-purpose blocks (6to4, NAT64, private …); refused otherwise
  --json                 print the result as JSON`,
  feed: `Usage: ipsift feed import <file> [options]
       ipsift feed list [--json]
       ipsift feed remove <name> [--json]

Feeds are the lists a build merges: each imported file is checked whole and stored,
normalised, under DATA_DIR/feeds. 'ipsift feed import --help' lists the formats and options.`,
  'feed list': `Usage: ipsift feed list [--json]`,
  'feed remove': `Usage: ipsift feed remove <name> [--json]`,
  build: `Usage: ipsift build [--no-publish] [--no-serve] [--json]

Merges every imported feed into a new immutable build directory DATA_DIR/builds/<date>-<n>
holding the index and the database files, prints counts and timings, makes it the serving
build (running servers switch to it within INDEX_POLL_MS) and publishes its database files
and index to the object store (STORE), where downloads and serving nodes find them.

Options:
  --no-publish   serve the build here but publish nothing: downloads keep serving the last
                 published build until 'ipsift publish'
  --no-serve     build only: neither serving nor published ('ipsift builds use <id>' later)`,
  builds: `Usage: ipsift builds [--json]
       ipsift builds use <id>
       ipsift builds log [--json]
       ipsift builds compare [<from>] <to> [--json]

log lists which build served from when to when on this node, newest first, from the serving
log (builds/serving-log.jsonl), which is kept when old builds are pruned. compare lists, per
category, the ranges whose answer differs between two builds on disk (gained, lost, or with
another detail) and the first of them; with one id, against the build before it. Every build
records its comparison with the one before it when it is made (changes.json).`,
  explain: `Usage: ipsift explain <ip> [--json]
       ipsift explain <ip> --at <RFC 3339 time> [--json]

Lists every imported feed range that covers the address, per category, in the order the build
resolves them (evidence band, then priority, then the more specific network, then a "not"
on ties, then the newer last_seen, the fuller detail, the greater detail text), the winner
first, and the rule that made it win. Read from the feeds imported now: a build made since
answers the same. With --at, what the service answered at that time on the widest plan, from
the timeline of answers (history/timeline.bin), and the build that served then.`,
  diff: `Usage: ipsift diff apply <old.csv.gz> <diff.gz> <new.csv.gz> [--json]
       ipsift diff make <old.csv.gz> <new.csv.gz> <diff.gz> [--json]

apply brings a downloaded CSV database to the next version with the diff published beside it
(GET /api/v1/database/download?id=<id>&format=csvgz&diff=true). The old file may be the .csv.gz
as downloaded or its CSV; the diff names both CSVs by SHA-256, so a diff refuses a file it was
not made from and checks its result. A new file ending in .gz is gzipped as the exports are,
and so has the published file's checksum; otherwise the CSV is written as it is. make writes
the diff from one .csv.gz to the next, as publishing does.`,
  org: `Usage:
  ipsift org create --name <name> --plan <plan> [--json]
  ipsift org list [--json]
  ipsift org show <org-id> [--json]
  ipsift org plan <org-id> <plan> [--json]
  ipsift org limit <org-id> <requests>|none|default [--json]
  ipsift org delete <org-id> [--json]

Plans come from PLANS_FILE (default config/plans.json). The overage limit (hard_limit) is
the number of requests in the calendar month (UTC) after which lookups answer 429; 'none'
allows overage without limit; 'default' follows the plan (free: its quota; paid: none).
'delete' revokes the organisation's keys and ends its licences at once; the organisation is
kept, marked deleted (list --deleted shows it), so its download history and audit entries
keep their subject and its ids are never reused. Every change is in the audit log.`,
  admin: `Usage:
  ipsift admin token create --name <name> --scope admin.read|admin.write [--expires <time>] [--json]
  ipsift admin token list [--json]
  ipsift admin token revoke <token-id> [--json]

Operator tokens authenticate the admin API (/admin/v1/… on the admin port): admin.read may
read organisations, keys, licences, usage, downloads and the audit log; admin.write may also
change them. The secret (iat_…) is printed once and stored only as a hash. --expires (an
ISO 8601 time) makes a token that stops working by itself. The admin API refuses to revoke
the last live admin.write token (409); revoke it here, at the control database.`,
  audit: `Usage: ipsift audit [--org <org-id>] [--limit <n, at most 200 taken>] [--before <entry id>] [--json]

The audit log, newest first: every change to organisations, licences, keys and operator
tokens, by the CLI (cli:<user>), the admin API (admin:<token id>) or a key managing keys
(key:<key id>), with where from. Entries never hold a secret.`,
  key: `Usage:
  ipsift key create --org <org-id> --name <name> [--scope db.download|apikeys.manage|changes.read]...
                    [--cidr <cidr>]... [--expires <ISO date-time>] [--json]
  ipsift key list [--org <org-id>] [--json]
  ipsift key show <key-id> [--json]
  ipsift key revoke <key-id> [--json]
  ipsift key rotate <key-id> [--json]

'create' and 'rotate' print the secret once; it is stored only as a hash. Revocations and
rotations reach running servers within a second. A key made without --scope can only look up:
db.download lets it download databases, apikeys.manage lets it manage its organisation's keys,
changes.read lets it read the change feed (GET /api/v1/changes; scale and max plans).
An organisation holds at most MAX_KEYS_PER_ORG live keys (default 1000).`,
  license: `Usage:
  ipsift license grant --org <org-id> --base <base> --type evaluation|subscription
                       --starts <date> --expires <date> [--renews-at <date>] [--notice-due-at <date>] [--json]
  ipsift license revoke --org <org-id> --base <base> [--json]
  ipsift license list [--org <org-id>] [--json]

A licence lets an organisation download a database base (every schema version of it) while
in term. Subscriptions renew at --renews-at (default: expiry); notice is due 30 days before
unless --notice-due-at says otherwise. Bases come from CATALOGUE_FILE (config/catalogue.json).`,
  publish: `Usage: ipsift publish [--build <id>] [--json]

Publishes a build's database files (default: the serving build) and then its index to the
object store, where downloads and serving nodes find them. 'ipsift build' already does this
for the build it makes; publish again after 'ipsift build --no-publish', or to another store.`,
  sources: `Usage: ipsift sources list [--json]
       ipsift sources status [--json]
       ipsift sources refresh [--all] [--no-build] [--publish] [--json]
       ipsift sources import [--file <sources.json>] [--json]
       ipsift sources disable|enable <name> [--no-build] [--json]

The sources ipsift fetches: SOURCES picks from the registry shipped with ipsift (public for all
of it, names, -name to leave one out), SOURCES_FILE adds your own in the same shape:
[{"name", "path" | "url", "format" (default auto), "category", "provider", "evidence",
"priority", "not", "skip_invalid", "allow_large_blocks", "interval" (90m, 1h, 1d; default 1d),
"max_bytes", "licence", "note"}], each import field as the option of 'ipsift feed import' of
the same name. A running server refreshes each source on its interval by itself.

  list      the registry: name, category, interval, licence, URL
  status    per source: state (ok, stale, expired, refused, failed, never, disabled), entries, age of the good
            copy, last change, and why a source was refused or failed
  refresh   fetch the sources that are due (--all: every one) with conditional requests, import
            what changed, and build when anything did (--no-build: not; --publish: publish it too)
  import    fetch and import every source now (--file: only that file's), without building
  disable   set a source aside: not fetched, its feed left out of builds, until enabled again;
            a build without it follows at once (--no-build: at the next refresh)
  enable    take a disabled source back, and build with it again

A fetch that fails, or brings an HTML page, an empty or cut-short body, more than the size cap,
or far fewer entries than the last good copy (SOURCES_SHRINK_PCT) is refused: the last good
copy keeps answering, and status says why. SOURCES_MIRROR=<base> fetches https://HOST/PATH as
<base>/HOST/PATH.`,
  completion: `Usage: ipsift completion

Prints a bash completion script for ipsift's commands and their subcommands, made from the
same table as this help: \`ipsift completion > /etc/bash_completion.d/ipsift\`, or
\`source <(ipsift completion)\` in ~/.bashrc.`,
  usage: `Usage: ipsift usage <org-id> [--json]

Requests counted in the current calendar month (UTC) against the plan's quota and the
overage limit. Running servers hold small leases (at most a few hundred requests each, given
back after a second idle), which count as used until returned.`,
};

/**
 * The help `--help` (or -h) asks for anywhere on the line: that of the longest command named
 * before it (`admin token --help` is admin's), or null when the line does not ask.
 */
export function helpFor(argv: readonly string[]): string | null {
  const at = argv.findIndex((a) => a === '--help' || a === '-h');
  if (at < 0 || argv.slice(0, at).includes('--')) return null;
  const words = argv.slice(0, at).filter((a) => !a.startsWith('-'));
  for (let n = Math.min(2, words.length); n > 0; n--) {
    const text = HELP[words.slice(0, n).join(' ')];
    if (text !== undefined) return text;
  }
  return words.length === 0 ? HELP[''] : null;
}
