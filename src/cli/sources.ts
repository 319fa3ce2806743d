// `ipsift sources …`: the configured sources (SOURCES from the shipped registry, SOURCES_FILE's
// own) fetched, imported, built, and seen.

import fs from 'node:fs';
import os from 'node:os';
import { UsageError, parse, print } from './common.js';
import { HELP } from './help.js';
import { loadConfig, type Config } from '../config.js';
import { loadSources, intervalText, DEFAULT_INTERVAL_MS, type Source } from '../feeds/sources.js';
import { loadRegistry } from '../feeds/registry.js';
import { refreshSources, type SourceReport } from '../feeds/refresh.js';
import { readSourceStates, sourceStatuses, type SourceStatus } from '../feeds/source-state.js';
import { sourceStateFile } from '../data-dir.js';
import { readDisabledSources, switchSource } from '../feeds/source-switches.js';
import { configuredSources, refreshAndBuild, refreshOptions } from '../pipeline/pipeline.js';
import { releaseBuildLock, takeBuildLock } from '../pipeline/build-lock.js';

function configured(config: Config): Source[] {
  const sources = configuredSources(config);
  if (sources.length === 0) throw new UsageError('no sources configured: set SOURCES=public (the shipped registry) or SOURCES_FILE (your own), or give --file');
  return sources;
}

const reportLine = (r: SourceReport): string =>
  `${r.ok ? 'ok  ' : 'FAIL'} ${r.name}: ${r.rows} networks${r.skipped ? `, ${r.skipped} skipped` : ''}${r.fetch ? ` (${r.fetch})` : ''}${r.error ? ` — ${r.error}` : ''}`;

const BUSY = 'another process on this data directory is building: try again when it has finished';

/** `sources import`: every source now, due or not (a file's, or the configured ones). */
async function importAll(values: Record<string, unknown>): Promise<void> {
  const config = loadConfig(process.env);
  const file = values.file as string | undefined;
  const sources = file ? loadSources(file) : configured(config);
  // Under the data directory's build lock, so sources are never written while a build reads them.
  if (!takeBuildLock(config.dataDir)) throw new UsageError(BUSY);
  let reports: SourceReport[];
  try {
    reports = (await refreshSources(config.dataDir, sources, { ...refreshOptions(config), all: true, prune: !file })).reports;
  } finally {
    releaseBuildLock(config.dataDir);
  }
  print(values.json as boolean, reports, () => reports.map(reportLine).join('\n'));
}

/**
 * `sources refresh`: the sources that are due, then a build when any changed (or none serves
 * yet), under the data directory's build lock so it never races the daily build.
 */
async function refresh(values: Record<string, unknown>): Promise<void> {
  const config = loadConfig(process.env);
  const run = await refreshAndBuild(config, configured(config), {
    all: values.all === true,
    build: values['no-build'] !== true,
    publish: values.publish === true,
  });
  if (run.busy) return print(values.json as boolean, run, () => BUSY);
  print(values.json as boolean, run, () =>
    [
      ...run.reports.map(reportLine),
      ...run.removed.map((n) => `removed ${n}: no longer configured`),
      run.reports.length === 0 ? 'no source is due' : '',
      run.build ? `build ${run.build.id} serves${run.build.published ? ' and is published' : ''}` : 'nothing changed: no new build',
    ]
      .filter(Boolean)
      .join('\n'),
  );
}

const age = (s: number | null): string =>
  s === null ? '-' : s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : s < 172800 ? `${Math.round(s / 3600)}h` : `${Math.round(s / 86400)}d`;

export function statusTable(rows: readonly SourceStatus[]): string {
  const width = Math.max(4, ...rows.map((r) => r.name.length));
  const head = `${'name'.padEnd(width)}  state     entries  age     changed               reason`;
  const lines = rows.map(
    (r) =>
      `${r.name.padEnd(width)}  ${r.state.padEnd(8)}  ${String(r.entries).padStart(7)}  ${age(r.age_s).padEnd(6)}  ${(r.changed_at ?? '-').slice(0, 19).padEnd(20)}  ${r.reason ?? r.freshness_reason ?? ''}`,
  );
  const count = (state: string): number => rows.filter((r) => r.state === state).length;
  return [
    head,
    ...lines,
    `${rows.length} sources: ${count('ok')} ok, ${count('stale')} stale, ${count('expired')} expired, ${count('refused')} refused, ${count('failed')} failed, ${count('never')} never fetched${count('disabled') ? `, ${count('disabled')} disabled` : ''}`,
  ].join('\n');
}

/**
 * `sources status`: the configured sources; with none configured, the sources whose state the
 * data directory holds (registry entries by name, so their URL and interval show), since that
 * state is what a server started with SOURCES left behind.
 */
function status(values: Record<string, unknown>): void {
  const config = loadConfig(process.env);
  const states = readSourceStates(config.dataDir);
  let sources: readonly Source[] = configuredSources(config);
  let note = '';
  if (sources.length === 0) {
    const held = Object.keys(states).sort();
    if (held.length === 0) {
      throw new UsageError(
        `no sources configured and none fetched into ${sourceStateFile(config.dataDir)}: set SOURCES=public or SOURCES_FILE, or point DATA_DIR at the data directory a server with sources uses`,
      );
    }
    const registry = new Map(loadRegistry().map((s) => [s.name, s]));
    sources = held.map((name) => registry.get(name) ?? ({ name } as Source));
    note = `(SOURCES is not set: the ${held.length} sources in ${sourceStateFile(config.dataDir)})\n`;
  }
  const rows = sourceStatuses(sources, states, Date.now(), DEFAULT_INTERVAL_MS, readDisabledSources(config.dataDir));
  print(values.json as boolean, rows, () => note + statusTable(rows));
}

function list(values: Record<string, unknown>): void {
  const registry = loadRegistry();
  const rows = registry.map((s) => ({
    name: s.name,
    category: s.category ?? 'by format',
    evidence: s.evidence ?? 'list',
    provider: s.details.provider ?? null,
    licence: s.licence ?? 'not stated',
    interval: intervalText(s.intervalMs ?? DEFAULT_INTERVAL_MS),
    url: s.url,
    frozen: s.frozen ?? null,
  }));
  const width = Math.max(...rows.map((r) => r.name.length));
  print(values.json as boolean, rows, () =>
    rows
      .map(
        (r) =>
          `${r.name.padEnd(width)}  ${r.category.padEnd(9)}  ${r.interval.padEnd(4)}  ${r.licence.padEnd(17)}  ${r.url}${r.frozen ? `  (frozen: ${r.frozen})` : ''}`,
      )
      .join('\n'),
  );
}

/**
 * `sources disable|enable <name>`: the switch written (who: the OS user), then, unless
 * --no-build, a refresh of that source here, which builds without it (or with it again); a
 * running server switches to that build as to any other, and its own refreshes skip the source.
 */
async function setSwitch(disable: boolean, names: string[], values: Record<string, unknown>): Promise<void> {
  const config = loadConfig(process.env);
  const sources = configured(config);
  const verb = disable ? 'disable' : 'enable';
  if (names.length !== 1) throw new UsageError(`sources ${verb} takes one source's name: ipsift sources ${verb} <name> ('ipsift sources status' lists them)`);
  const name = names[0];
  if (!sources.some((s) => s.name === name)) throw new UsageError(`no source named ${name} is configured: 'ipsift sources status' lists them`);
  const switched = switchSource(config.dataDir, name, disable ? `cli:${os.userInfo().username}` : null, new Date());
  const said = switched
    ? `${name} ${disable ? 'disabled: neither fetched nor built from' : 'enabled: fetched and built from again'}`
    : `${name} was already ${verb}d`;
  if (!switched || values['no-build'] === true) return print(values.json as boolean, { name, disabled: disable, switched, build: null }, () => said);
  const run = await refreshAndBuild(config, sources, { all: false, build: true, publish: false, only: [name] });
  const build = run.build?.id ?? null;
  print(values.json as boolean, { name, disabled: disable, switched, build, busy: run.busy === true }, () =>
    run.busy
      ? `${said}; a build is running on this data directory, so the next refresh builds ${disable ? 'without' : 'with'} it`
      : `${said}; ${build ? `build ${build} serves ${disable ? 'without' : 'with'} it` : 'no build needed: its feed was not in the serving build'}`,
  );
}

export async function sourcesCommand(sub: string | undefined, args: string[]): Promise<void> {
  if (sub?.startsWith('-')) {
    args = [sub, ...args];
    sub = undefined;
  }
  const { values, positionals } = parse(args, {
    file: { type: 'string' },
    all: { type: 'boolean' },
    'no-build': { type: 'boolean' },
    publish: { type: 'boolean' },
  });
  if (values.help || sub === undefined || sub === 'help') return print(false, null, () => HELP.sources);
  if (values.file !== undefined && !fs.existsSync(values.file as string)) throw new UsageError(`no sources file ${values.file as string}`);
  if (sub === 'import') return importAll(values);
  if (sub === 'refresh') return refresh(values);
  if (sub === 'status') return status(values);
  if (sub === 'list') return list(values);
  if (sub === 'disable' || sub === 'enable') return setSwitch(sub === 'disable', positionals, values);
  throw new UsageError(`unknown sources command ${sub}: list, status, refresh, import, disable or enable`);
}
