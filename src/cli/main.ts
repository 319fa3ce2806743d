// `ipsift`'s commands: serve, import feeds, build, and the accounts' and sources' commands
// (accounts.ts, sources.ts). Every command takes --help; listings take --json. src/cli.ts runs it.

import { unknownProvidersLine } from '../model/providers.js';
import { explainAddress } from '../build/explain.js';
import fs from 'node:fs';
import path from 'node:path';
import type { ParseArgsConfig } from 'node:util';
import { buildSummaries, listBuilds, readServingLog } from '../index/builds.js';
import { serveBuild } from '../index/loader.js';
import { buildBefore, compareBuilds } from '../index/build-changes.js';
import type { BuildComparison } from '../index/compare.js';
import { ConfigError, loadConfig } from '../config.js';
import { importFeed, type FeedFormat } from '../feeds/import.js';
import { FEED_FORMATS } from '../feeds/formats.js';
import { listFeeds, removeFeed } from '../feeds/feed-store.js';
import { jsonLogger, structuredWarnings } from '../log.js';
import type { DetailField } from '../model/categories.js';
import { startService, type Service } from '../service.js';
import { tuneV8 } from './v8-tuning.js';
import { UsageError, parse, print, terminalSafe } from './common.js';
import { IpsiftError } from '../errors.js';
import { accountCommand } from './accounts.js';
import { buildAndPublish } from '../pipeline/pipeline.js';
import { sourcesCommand } from './sources.js';
import { HELP, helpFor } from './help.js';
import { RUNTIME, VERSION } from '../version.js';

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

/** serve's options, each the setting of the same name for this run (it wins over the environment). */
const SERVE_OPTIONS: Record<string, string> = { host: 'HOST', port: 'PORT', 'admin-host': 'ADMIN_HOST', 'admin-port': 'ADMIN_PORT', 'data-dir': 'DATA_DIR' };

async function serve(args: string[]): Promise<void> {
  const { values, positionals } = parse(args, Object.fromEntries(Object.keys(SERVE_OPTIONS).map((o) => [o, { type: 'string' as const }])));
  if (positionals.length)
    throw new UsageError(
      `serve takes no arguments, only options (${Object.keys(SERVE_OPTIONS)
        .map((o) => `--${o}`)
        .join(', ')}): ${positionals[0]}`,
    );
  if (values.json) throw new UsageError('serve has no --json: it logs JSON lines already');
  // Into the environment itself: the daily run's children read their settings from it.
  for (const [option, name] of Object.entries(SERVE_OPTIONS)) if (typeof values[option] === 'string') process.env[name] = values[option] as string;
  const config = loadConfig(process.env);
  const log = jsonLogger(undefined, config.logLevel);
  // Before the request paths compile: they run under ipsift's V8 settings.
  tuneV8();
  // The signals are taken before the service starts: its threads answer as soon as they listen,
  // before this thread has logged that it listens, so a SIGTERM sent on the first answer found
  // no handler and killed the process undrained (seen under load). One that comes while the
  // service starts is acted on once it has.
  // First signal: drain and exit 0. A second one: exit at once.
  let service: Service | null = null;
  let stopping = false;
  const drain = (s: Service): void =>
    void s.drain(config.shutdownGraceMs).then((clean) => {
      log.info('stopped', { clean });
      process.exit(0);
    });
  const stop = (signal: string): void => {
    if (stopping) {
      log.warn('second signal: exiting at once', { signal });
      if (service === null) process.exit(1);
      void service.closeThreads().finally(() => process.exit(1));
      return;
    }
    stopping = true;
    log.info('stopping: draining requests in flight', { signal, grace_s: config.shutdownGraceMs / 1000 });
    if (service !== null) drain(service);
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  service = await startService(config, log);
  process.on('SIGHUP', () => void service?.holder.reload());
  if (stopping) drain(service);
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
  print(values.json as boolean, feeds, () =>
    feeds.length ? feeds.map((f) => `${f.name}\t${f.bytes} bytes\tevidence ${f.evidence}\tpriority ${f.priority}`).join('\n') : 'no feeds imported',
  );
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
  const {
    id,
    dir,
    manifest,
    publication,
    pruned,
    prune_error,
    publish_error,
    changes,
    build_ms,
    publish_ms,
    total_ms: total,
  } = await buildAndPublish(config, { serve, publish });
  // The build serves; its publication failed: an error for the command, saying which part failed.
  if (publish_error !== null) throw new IpsiftError('PUBLISH', `build ${id} serves, but publishing it failed: ${publish_error}`);
  print(values.json as boolean, { ...manifest, dir, serving: serve, publication, pruned, changes, build_ms, publish_ms, total_ms: total }, () => {
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
      ...(changes ? [`  changed against ${changes.from}: ${changes.ranges} ranges ('ipsift builds compare ${changes.from} ${id}' shows them)`] : []),
      `  timings: ${Object.entries(manifest.timings_ms)
        .map(([k, v]) => `${k} ${v} ms`)
        .join(', ')}; build ${build_ms} ms${publication ? `, publish ${publish_ms} ms` : ''}, total ${total} ms`,
      serve
        ? `serving: running servers switch to ${id} within INDEX_POLL_MS`
        : `not serving (--no-serve): 'ipsift builds use ${id}' makes it the serving build`,
      publication
        ? `published: ${publication.artifacts} database files and the index to the ${config.objectStore.kind} store; downloads serve build ${id}`
        : serve
          ? `not published (--no-publish): downloads serve the last published build until 'ipsift publish'`
          : 'not published',
      ...(pruned.length ? [`removed ${pruned.length} older build(s) past KEEP_BUILDS=${config.keepBuilds}: ${pruned.join(', ')}`] : []),
      ...(prune_error ? [`older builds not removed: ${prune_error}`] : []),
    ].join('\n');
  });
}

async function builds(args: string[]): Promise<void> {
  const { values, positionals } = parse(args);
  if (values.help) return print(false, null, () => HELP.builds);
  const dataDir = loadConfig(process.env).dataDir;
  if (positionals[0] === 'use') {
    if (positionals.length !== 2) throw new UsageError('builds use takes exactly one build id');
    if (!listBuilds(dataDir).includes(positionals[1])) throw new UsageError(`no build ${positionals[1]}`);
    await serveBuild(dataDir, positionals[1]);
    return print(values.json as boolean, { current: positionals[1] }, () => `serving build is now ${positionals[1]}`);
  }
  if (positionals[0] === 'log') {
    const spans = readServingLog(dataDir).reverse();
    return print(values.json as boolean, spans, () =>
      spans.length ? spans.map((s) => `${s.build}\t${s.from} – ${s.to ?? 'now'}\t${s.node}`).join('\n') : 'no build has served here yet',
    );
  }
  if (positionals[0] === 'compare') {
    const ids = positionals.slice(1);
    const known = listBuilds(dataDir);
    if (ids.length < 1 || ids.length > 2) throw new UsageError('builds compare takes one build id (compared with the build before it) or two (from, to)');
    for (const id of ids) if (!known.includes(id)) throw new UsageError(`no build ${id}: 'ipsift builds' lists them`);
    const from = ids.length === 2 ? ids[0] : buildBefore(dataDir, ids[0]);
    if (from === null) throw new UsageError(`${ids[0]} is the oldest build on disk: name two builds to compare`);
    const to = ids[ids.length - 1];
    const c = compareBuilds(dataDir, from, to, 20);
    return print(values.json as boolean, c, () => comparisonText(c));
  }
  if (positionals.length) throw new UsageError(`unknown builds command ${positionals[0]}: use, log or compare`);
  const list = buildSummaries(dataDir);
  print(values.json as boolean, list, () =>
    list.length ? list.map((b) => `${b.current ? '*' : ' '} ${b.id}\t${b.created}\t${b.bytes} bytes`).join('\n') : 'no builds',
  );
}

/** A comparison as an operator reads it: a line per category that changed, then the first ranges. */
function comparisonText(c: BuildComparison): string {
  const lines = [`${c.from} → ${c.to}: ${c.ranges} ranges changed`];
  for (const [category, n] of Object.entries(c.categories)) {
    if (n.ranges === 0) continue;
    lines.push(`  ${category}: ${n.ranges} (${n.gained} gained, ${n.lost} lost, ${n.changed} with another detail; ${n.ipv4_addresses} IPv4 addresses)`);
  }
  const side = (v: Record<string, unknown> | null): string => (v === null ? 'not' : JSON.stringify(v));
  for (const e of c.examples) lines.push(`    ${e.category}	${e.first} – ${e.last}	${side(e.before)} → ${side(e.after)}`);
  if (c.more) lines.push(`    … and ${c.more} more (--json lists the first ${c.examples.length})`);
  return lines.join('\n');
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
      for (const k of c.claims) {
        lines.push(`      ${k.feed}\t${k.evidence}\tpriority ${k.priority}\t${k.network}\t${k.detail === null ? `not ${category}` : JSON.stringify(k.detail)}`);
        if (k.source)
          lines.push(
            `        from ${k.source.url ?? '(unknown)'}, fetched ${k.source.fetched_at ?? '-'}, content of ${k.source.changed_at ?? 'no known date'}${k.source.dated_by ? ` (by ${k.source.dated_by})` : ''}, confirmed ${k.source.confirmed_at ?? '-'}`,
          );
      }
    }
    return lines.join('\n');
  });
}

/** `ipsift --version`: the package's version and the runtime it runs on. */
export function versionLine(): string {
  return `ipsift ${VERSION} (${RUNTIME}, ${process.platform}-${process.arch})`;
}

/** Commands that only read or change what a data directory holds: they never make one. */
const NEEDS_DATA_DIR = new Set(['feed', 'build', 'builds', 'explain', 'sources', 'publish', 'org', 'key', 'usage', 'license', 'admin', 'audit']);
/** Those of them that need it only for the control database (a PostgreSQL one lives elsewhere). */
const CONTROL_ONLY = new Set(['org', 'key', 'usage', 'license', 'admin', 'audit']);

/**
 * Refuses a command on a data directory that is not there, saying where it looked: opening a
 * store would otherwise make an empty one, in which a later `serve` finds no feeds and makes
 * no demo. Only `serve` makes a data directory. `sources list` reads the shipped registry alone.
 */
function requireDataDir(cmd: string, sub: string | undefined): void {
  if (!NEEDS_DATA_DIR.has(cmd) || (cmd === 'sources' && sub === 'list')) return;
  const config = loadConfig(process.env);
  if (CONTROL_ONLY.has(cmd) && config.controlDb !== null && config.accounting.kind === 'redis') return;
  if (fs.existsSync(config.dataDir)) return;
  const origin = process.env.DATA_DIR ? 'DATA_DIR' : 'the default DATA_DIR, ./data';
  throw new ConfigError(
    `no data directory at ${config.dataDir} (${origin}): 'ipsift serve' makes one on its first start; to use another, set DATA_DIR (DATA_DIR=/path/to/data ipsift ${cmd}${sub ? ` ${sub}` : ''} …)`,
  );
}

export async function main(argv: string[]): Promise<number> {
  const [cmd = 'serve', sub, ...rest] = argv;
  structuredWarnings(jsonLogger());
  try {
    const help = helpFor(argv);
    if (help !== null) return (print(false, null, () => help), 0);
    requireDataDir(cmd, sub);
    switch (cmd) {
      case 'serve':
        await serve(sub === undefined ? rest : [sub, ...rest]);
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
        await accountCommand(cmd, sub, rest);
        return 0;
      case 'sources':
        await sourcesCommand(sub, rest);
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
      process.stderr.write(
        `ipsift: DATA_DIR ${dataDir} is not usable (${fsError.code}: ${fsError.syscall ?? 'access'} ${fsError.path}): point DATA_DIR at a writable directory\n`,
      );
      return 2;
    }
    throw e;
  }
}
