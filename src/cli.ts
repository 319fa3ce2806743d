#!/usr/bin/env node
// `ipsift`: serve, import feeds, build. Every command takes --help; listings take --json.

import { unknownProvidersLine } from './model/providers.js';
import { explainAddress } from './build/explain.js';
import { EVIDENCE, EVIDENCE_KINDS } from './feeds/evidence.js';
import fs from 'node:fs';
import path from 'node:path';
import type { ParseArgsConfig } from 'node:util';
import { runBuild } from './build/build.js';
import { INDEX_FILE, MANIFEST_FILE, buildDir, listBuilds, makeServing, readCurrentBuildId } from './index/builds.js';
import { loadIndexFile } from './index/loader.js';
import { ConfigError, loadConfig } from './config.js';
import { importFeed, type FeedFormat } from './feeds/import.js';
import { FEED_FORMATS } from './feeds/formats.js';
import { listFeeds, removeFeed } from './feeds/store.js';
import { jsonLogger, structuredWarnings } from './log.js';
import type { DetailField } from './model/categories.js';
import { startService } from './service.js';
import { UsageError, parse, print, terminalSafe } from './cli-common.js';
import { IpsiftError, reasonOf } from './errors.js';
import { ACCOUNT_HELP, accountCommand, publishBuild } from './cli-accounts.js';
import { RUNTIME, VERSION } from './version.js';

const HELP: Record<string, string> = {
  ...ACCOUNT_HELP,
  '': `ipsift — IP classification service

Usage: ipsift <command> [options]
       ipsift --version

Commands:
  serve                 run the HTTP service (default command)
  feed import <file>    import a feed (canonical CSV or plain list)
  feed list             list imported feeds
  feed remove <name>    remove an imported feed
  build                 build from all imported feeds, serve the build and publish it
  builds                list builds and the one serving
  builds use <id>       make an existing build the serving one
  explain <ip>          every feed that covers an address, and the rule that decided each category
  org create|list|show|plan|limit|delete  organisations, plans and overage limits
  key create|list|show|revoke|rotate  API keys
  admin token create|list|revoke      operator tokens for the admin API
  audit                 who changed which organisation, licence or key, when, from where
  usage <org-id>        requests in the current window against quota and overage limit
  license grant|revoke|list           database licences per organisation and base
  publish               publish a build's database files and index to the object store again
  sources import        import every source of the sources file (SOURCES_FILE)

Every command takes --help. Configuration comes from the environment (see README):
DATA_DIR (default ./data), HOST, PORT, ADMIN_HOST, ADMIN_PORT, HTTP_SERVER (auto, uws, bun,
node), FRONTEND_THREADS (default: the cores), KEEP_ALIVE_TIMEOUT_S, PUBLIC_URL, CORS_ORIGINS,
TRUSTED_PROXIES, BATCH_WORKERS, BATCH_QUEUE, MAX_BATCH_BODY_BYTES, BATCH_BODY_MEMORY_MIB,
BODY_TIMEOUT_S, KEYLESS_TIER, KEYLESS_IPV6_PREFIX, ACCOUNTING_GRACE_S, SHUTDOWN_GRACE_S, DEMO,
INDEX_POLL_MS, PLANS_FILE, CATALOGUE_FILE, PUBLISH_AT, SOURCES_FILE, STORE (local, s3),
S3_BUCKET, S3_PREFIX, S3_REGION, S3_ENDPOINT, ACCOUNTING (lmdb, redis), REDIS_URL, REDIS_PREFIX,
REDIS_TIMEOUT_MS, CONTROL_DB (sqlite, postgres://…), CONTROL_TIMEOUT_MS, CONTROL_GRACE_S, ROLE
(all, serve), REPLICA_POLL_S, LOG_LEVEL (info, warn, error), ACCESS_LOG (off, on, or a share such
as 0.01), MAX_KEYS_PER_ORG, KEY_CHANGES_PER_MIN. CONFIG_FILE names an optional JSON file of the same settings
({"PORT": 8080, "DATA_DIR": "/var/lib/ipsift"}); the environment wins where both set one.`,
  serve: `Usage: ipsift serve

Serves lookups on HOST:PORT (default 127.0.0.1:8080) and health, readiness and metrics on
ADMIN_HOST:ADMIN_PORT (default 127.0.0.1:8081). On a data directory with no feeds and no
builds it first imports the bundled demo feeds and builds (DEMO=0 to skip). A new build
published by 'ipsift build' is picked up without a restart (also on SIGHUP).`,
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
       ipsift builds use <id>`,
  explain: `Usage: ipsift explain <ip> [--json]

Lists every imported feed range that covers the address, per category, in the order the build
resolves them (evidence band, then priority, then the more specific network, then a "not"
on ties, then the newer last_seen, the fuller detail, the greater detail text), the winner
first, and the rule that made it win. Read from the feeds imported now: a build made since
answers the same.`,
};

const DETAIL_OPTIONS: Record<string, DetailField> = {
  provider: 'provider',
  confidence: 'confidence',
  method: 'method',
  'first-seen': 'first_seen',
  'last-seen': 'last_seen',
  hits: 'hits',
  'hits-days-pct': 'hits_days_pct',
  'providers-num': 'providers_num',
};

async function serve(): Promise<void> {
  const config = loadConfig(process.env);
  const log = jsonLogger(undefined, config.logLevel);
  const service = await startService(config, log);
  process.on('SIGHUP', () => void service.holder.reload());
  // First signal: drain and exit 0. A second one: exit at once.
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) {
      log.warn('second signal: exiting at once', { signal });
      void service.closeThreads().finally(() => process.exit(1));
      return;
    }
    stopping = true;
    log.info('stopping: draining requests in flight', { signal, grace_s: config.shutdownGraceMs / 1000 });
    void service.drain(config.shutdownGraceMs).then((clean) => {
      log.info('stopped', { clean });
      process.exit(0);
    });
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

function feedImport(args: string[]): void {
  const options: ParseArgsConfig['options'] = {
    format: { type: 'string' },
    name: { type: 'string' },
    category: { type: 'string' },
    'skip-invalid': { type: 'boolean' },
    priority: { type: 'string' },
    not: { type: 'string' },
    evidence: { type: 'string' },
    'allow-large-blocks': { type: 'boolean' },
    replace: { type: 'boolean' },
  };
  for (const o of Object.keys(DETAIL_OPTIONS)) options[o] = { type: 'string' };
  const { values, positionals } = parse(args, options);
  if (values.help) return print(false, null, () => HELP['feed import']);
  if (positionals.length !== 1) throw new UsageError('feed import takes exactly one file');
  const format = values.format as string | undefined;
  const known = ['csv', 'auto', ...FEED_FORMATS.map((f) => f.name)];
  if (format !== undefined && !known.includes(format)) throw new UsageError(`--format must be one of ${known.join(', ')}`);
  const details: Partial<Record<DetailField, string>> = {};
  for (const [o, field] of Object.entries(DETAIL_OPTIONS)) {
    const v = values[o];
    if (typeof v === 'string') details[field] = v;
  }
  const priorityText = values.priority as string | undefined;
  if (priorityText !== undefined && !/^-?\d+$/.test(priorityText)) throw new UsageError('--priority must be an integer');
  const config = loadConfig(process.env);
  const r = importFeed({
    dataDir: config.dataDir,
    file: path.resolve(positionals[0]),
    format: format as FeedFormat | undefined,
    name: values.name as string | undefined,
    category: values.category as string | undefined,
    details,
    skipInvalid: values['skip-invalid'] === true,
    priority: priorityText === undefined ? undefined : Number(priorityText),
    not: typeof values.not === 'string' ? values.not.split(',').map((c) => c.trim()) : undefined,
    evidence: values.evidence as string | undefined,
    allowLargeBlocks: values['allow-large-blocks'] === true,
    replace: values.replace === true,
  });
  print(values.json as boolean, r, () => {
    const cats = Object.entries(r.byCategory)
      .map(([c, n]) => `${c} ${n}`)
      .join(', ');
    const skipped = r.skipped ? `; skipped ${r.skipped} invalid line(s), e.g. ${r.skippedExamples[0]}` : '';
    const notes = r.notes.map((n) => `; ${n}`).join('');
    return `imported feed ${r.name} (${r.format}, evidence ${r.evidence}): ${r.rows} networks (${cats}) → ${r.file}${skipped}${notes}`;
  });
}

function feedList(args: string[]): void {
  const { values } = parse(args);
  if (values.help) return print(false, null, () => HELP['feed list']);
  const feeds = listFeeds(loadConfig(process.env).dataDir);
  print(values.json as boolean, feeds, () => (feeds.length ? feeds.map((f) => `${f.name}\t${f.bytes} bytes\tevidence ${f.evidence}\tpriority ${f.priority}`).join('\n') : 'no feeds imported'));
}

function feedRemove(args: string[]): void {
  const { values, positionals } = parse(args);
  if (values.help) return print(false, null, () => HELP['feed remove']);
  if (positionals.length !== 1) throw new UsageError('feed remove takes exactly one feed name');
  const removed = removeFeed(loadConfig(process.env).dataDir, positionals[0]);
  if (!removed) throw new UsageError(`no feed named ${positionals[0]}`);
  print(values.json as boolean, { removed: positionals[0] }, () => `removed feed ${positionals[0]}`);
}

/**
 * `ipsift build`: a new build, made the serving one, its databases and index published to the
 * object store, so that what the command says it did (serving, published) is what downloads
 * and followers see. --no-publish stops before the store; --no-serve makes the build only.
 */
async function build(args: string[]): Promise<void> {
  const { values } = parse(args, { 'no-publish': { type: 'boolean' }, 'no-serve': { type: 'boolean' } });
  if (values.help) return print(false, null, () => HELP.build);
  const serve = !values['no-serve'];
  const publish = serve && !values['no-publish'];
  const config = loadConfig(process.env);
  const started = performance.now();
  const { id, dir, manifest } = runBuild({ dataDir: config.dataDir, publish: serve });
  const publication = publish ? await publishBuild(config, id) : null;
  const total = Math.round(performance.now() - started);
  print(values.json as boolean, { ...manifest, dir, serving: serve, publication, total_ms: total }, () => {
    const ranges = (r: Record<string, number | undefined>) =>
      Object.entries(r)
        .map(([c, n]) => `${c} ${n}`)
        .join(', ') || 'none';
    const i = manifest.index;
    return [
      `build ${id} → ${dir}`,
      `  ranges IPv4: ${ranges(manifest.ranges.v4)}`,
      `  ranges IPv6: ${ranges(manifest.ranges.v6)}`,
      `  index: ${i.v4} IPv4 + ${i.v6} IPv6 intervals, ${i.records} records, ${i.bytes} bytes`,
      ...(manifest.unknown_providers.length ? [`  ${unknownProvidersLine(manifest.unknown_providers)}`] : []),
      `  timings: ${Object.entries(manifest.timings_ms)
        .map(([k, v]) => `${k} ${v} ms`)
        .join(', ')}; total ${total} ms`,
      serve ? `serving: running servers switch to ${id} within INDEX_POLL_MS` : `not serving (--no-serve): 'ipsift builds use ${id}' makes it the serving build`,
      publication
        ? `published: ${publication.artifacts} database files and the index to the ${config.store.kind} store; downloads serve build ${id}`
        : serve
          ? `not published (--no-publish): downloads serve the last published build until 'ipsift publish'`
          : 'not published',
    ].join('\n');
  });
}

/** A build is made current only if its index matches its manifest and reads as an index. */
async function verifyBuild(dataDir: string, id: string): Promise<void> {
  const dir = buildDir(dataDir, id);
  try {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, MANIFEST_FILE), 'utf8')) as { index: { sha256: string } };
    await loadIndexFile(path.join(dir, INDEX_FILE), manifest.index.sha256);
  } catch (e) {
    throw new IpsiftError('BUILD_DAMAGED', `build ${id} is damaged (${reasonOf(e)}); the serving build is unchanged`, { cause: e });
  }
}

async function builds(args: string[]): Promise<void> {
  const { values, positionals } = parse(args);
  if (values.help) return print(false, null, () => HELP.builds);
  const dataDir = loadConfig(process.env).dataDir;
  if (positionals[0] === 'use') {
    if (positionals.length !== 2) throw new UsageError('builds use takes exactly one build id');
    if (!listBuilds(dataDir).includes(positionals[1])) throw new UsageError(`no build ${positionals[1]}`);
    await verifyBuild(dataDir, positionals[1]);
    makeServing(dataDir, positionals[1]);
    return print(values.json as boolean, { current: positionals[1] }, () => `serving build is now ${positionals[1]}`);
  }
  if (positionals.length) throw new UsageError(`unknown builds command ${positionals[0]}`);
  const current = readCurrentBuildId(dataDir);
  const list = listBuilds(dataDir).map((id) => {
    const manifest = JSON.parse(fs.readFileSync(path.join(buildDir(dataDir, id), MANIFEST_FILE), 'utf8')) as { created: string; index: { bytes: number } };
    return { id, current: id === current, created: manifest.created, bytes: manifest.index.bytes };
  });
  print(values.json as boolean, list, () =>
    list.length ? list.map((b) => `${b.current ? '*' : ' '} ${b.id}\t${b.created}\t${b.bytes} bytes`).join('\n') : 'no builds',
  );
}

function explain(args: string[]): void {
  const { values, positionals } = parse(args);
  if (values.help) return print(false, null, () => HELP.explain);
  if (positionals.length !== 1) throw new UsageError('explain takes exactly one address');
  const e = explainAddress(loadConfig(process.env).dataDir, positionals[0]);
  if (e === null) throw new UsageError(`not an IP address: ${JSON.stringify(positionals[0])}`);
  print(values.json as boolean, e, () => {
    const lines = [`${e.ip}${e.bogon ? ': a bogon, answered without a lookup (every flag false)' : ''}`];
    const cats = Object.entries(e.categories);
    if (cats.length === 0) lines.push('  no feed covers it: every flag false');
    for (const [category, c] of cats) {
      lines.push(`  ${category}: ${c.answer === null ? `not ${category}` : `is_${category} ${JSON.stringify(c.answer)}`} — ${c.rule}`);
      for (const k of c.claims) lines.push(`      ${k.feed}\t${k.evidence}\tpriority ${k.priority}\t${k.network}\t${k.detail === null ? `not ${category}` : JSON.stringify(k.detail)}`);
    }
    return lines.join('\n');
  });
}

/** `ipsift --version`: the package's version and the runtime it runs on. */
export function versionLine(): string {
  return `ipsift ${VERSION} (${RUNTIME}, ${process.platform}-${process.arch})`;
}

export async function main(argv: string[]): Promise<number> {
  const [cmd = 'serve', sub, ...rest] = argv;
  structuredWarnings(jsonLogger());
  try {
    switch (cmd) {
      case 'serve':
        if (sub === '--help' || sub === '-h') return print(false, null, () => HELP.serve), 0;
        await serve();
        return -1; // keeps running
      case 'feed':
        if (sub === 'import') feedImport(rest);
        else if (sub === 'list') feedList(rest);
        else if (sub === 'remove') feedRemove(rest);
        else if (sub === '--help' || sub === '-h' || sub === 'help') print(false, null, () => HELP.feed);
        else throw new UsageError(`unknown feed command ${sub ?? '(none)'}: import, list or remove`);
        return 0;
      case 'build':
        await build(sub === undefined ? rest : [sub, ...rest]);
        return 0;
      case 'builds':
        await builds(sub === undefined ? rest : [sub, ...rest]);
        return 0;
      case 'explain':
        explain(sub === undefined ? rest : [sub, ...rest]);
        return 0;
      case 'org':
      case 'key':
      case 'usage':
      case 'license':
      case 'admin':
      case 'audit':
      case 'publish':
      case 'sources':
        await accountCommand(cmd, sub, rest);
        return 0;
      case '--help':
      case '-h':
      case 'help':
        print(false, null, () => HELP['']);
        return 0;
      case '--version':
      case '-V':
      case 'version':
        process.stdout.write(`${versionLine()}\n`);
        return 0;
      default:
        throw new UsageError(`unknown command ${cmd}`);
    }
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`ipsift: ${terminalSafe(e.message)}\n(see ipsift --help)\n`);
      return 2;
    }
    // The configuration, like the arguments, is the caller's to fix: exit 2, one line.
    if (e instanceof ConfigError) {
      process.stderr.write(`ipsift: ${terminalSafe(e.message)}\n`);
      return 2;
    }
    if (e instanceof IpsiftError) {
      process.stderr.write(`ipsift: ${terminalSafe(e.message)}\n`);
      return 1;
    }
    // The file system refusing DATA_DIR (a path that cannot be made, no write access) is the
    // configuration's fault: one line naming it, as serve's own check says it.
    const fsError = e as NodeJS.ErrnoException;
    let dataDir: string;
    try {
      dataDir = loadConfig(process.env).dataDir;
    } catch {
      dataDir = path.resolve(process.env.DATA_DIR || './data');
    }
    if (typeof fsError?.code === 'string' && typeof fsError.path === 'string' && (path.resolve(fsError.path) + path.sep).startsWith(dataDir + path.sep)) {
      process.stderr.write(`ipsift: DATA_DIR ${dataDir} is not usable (${fsError.code}: ${fsError.syscall ?? 'access'} ${fsError.path}): point DATA_DIR at a writable directory\n`);
      return 2;
    }
    throw e;
  }
}

const code = await main(process.argv.slice(2));
if (code >= 0) process.exitCode = code;
