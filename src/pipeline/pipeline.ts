// The build pipeline as functions with typed settings: build (and make serving), publish to
// the object store, refresh the configured sources. The CLI, the daily scheduler and the
// source refresher all call these; the last two on a worker thread (pipeline-thread.ts, workers/pipeline.ts), so a
// build's seconds of CPU never stall a server's event loop. Nothing here reads the
// environment: the settings are the validated Config.

import { ConfigError, type Config } from '../config.js';
import { reasonOf } from '../errors.js';
import { loadSources, SourcesError, type Source } from '../feeds/sources.js';
import { loadRegistry, selectSources } from '../feeds/registry.js';
import { openControlDb } from '../control/control-db.js';
import { runBuild, type BuildManifest } from '../build/build.js';
import { refreshSources, type SourceReport } from '../feeds/refresh.js';
import { listFeeds } from '../feeds/feed-store.js';
import { updateTimeline } from '../history/timeline-file.js';
import { collectGarbage } from '../build/build.js';
import { readCurrentBuildId } from '../index/builds.js';
import { openObjectStore } from '../objects/open-object-store.js';
import { publishIndexReplica } from '../replica/index-replica.js';
import { publishExports } from './publish.js';
import { REFRESH_DEFAULTS, type RefreshOptions, type RefreshResult } from '../feeds/refresh.js';
import { releaseBuildLock, takeBuildLock } from './build-lock.js';
import { pruneBuilds, type PruneReport } from './prune.js';

/** What publishing a build put in the object store. */
export interface PublicationReport {
  build: string;
  artifacts: number;
  index: Awaited<ReturnType<typeof publishIndexReplica>>;
}

/** Puts a build's database files, then its index, into the configured object store. */
export async function publishBuild(config: Config, build: string): Promise<PublicationReport> {
  const db = openControlDb(config.dataDir, config.controlDb);
  try {
    const { store } = await openObjectStore(config);
    const n = await publishExports(db, store, config.dataDir, build);
    // The index last: followers (ROLE=serve) switch once it is there, with the exports in place.
    const index = await publishIndexReplica(store, config.dataDir, build);
    return { build, artifacts: n, index };
  } finally {
    db.close();
  }
}

/** What `ipsift build` did: the build, whether it serves, what was published, how long it all took. */
export interface BuildRun {
  id: string;
  dir: string;
  manifest: BuildManifest;
  serving: boolean;
  publication: PublicationReport | null;
  /** Older builds removed past KEEP_BUILDS (their directories and objects). */
  pruned: string[];
  /** Why pruning failed (null: it did not): the build stands either way. */
  prune_error: string | null;
  /** Why publishing failed while the build serves (null: published, or not asked to). */
  publish_error: string | null;
  /** What it changed against the build before it (null: the first build, or the comparison failed). */
  changes: { from: string; ranges: number } | null;
  /** The build (index, exports, made serving), then publishing it, then both. */
  build_ms: number;
  publish_ms: number;
  total_ms: number;
}

/** Why publishing failed, with the way out where it is the usual one (files a root CLI run left). */
function publishFailure(e: unknown, config: Config): string {
  const reason = reasonOf(e);
  if ((e as NodeJS.ErrnoException).code !== 'EACCES' && (e as NodeJS.ErrnoException).code !== 'EPERM') return reason;
  const user = process.getuid ? `uid ${process.getuid()}` : 'this user';
  return `${reason}: the ${config.objectStore.kind} store's files are not writable by this process (${user}); a CLI run as another user (root) leaves them so: run the CLI as the service's user, or chown -R the data directory to it`;
}

/**
 * Builds past KEEP_BUILDS removed, with their objects (pipeline/prune.ts); `published`: the build
 * whose index the store's pointer now names.
 */
export async function pruneOldBuilds(config: Config, published: string | null): Promise<PruneReport & { error?: string }> {
  // A build stands whether or not older ones could be removed: a failure is reported, not thrown.
  try {
    const db = openControlDb(config.dataDir, config.controlDb);
    try {
      const { store } = await openObjectStore(config);
      return await pruneBuilds(db, store, config.dataDir, config.keepBuilds, published);
    } finally {
      db.close();
    }
  } catch (e) {
    return { removed: [], kept: [], objects: 0, error: reasonOf(e) };
  }
}

/** What a new build answers from now on joins the timeline of answers (history/), if it serves. */
function noteServed(config: Config): void {
  // What the build let go is collected first: the timeline's update reads the new index whole.
  collectGarbage();
  try {
    updateTimeline(config.dataDir, Date.now(), config.historyDays);
  } catch {
    // the timeline catches up at the next build, or is rebuilt from the builds on disk
  }
}

/** A new build of every imported feed; made serving unless `serve` is false, then published unless `publish` is. */
export async function buildAndPublish(config: Config, o: { serve: boolean; publish: boolean }): Promise<BuildRun> {
  const started = performance.now();
  const { id, dir, manifest, changes } = runBuild({
    dataDir: config.dataDir,
    serve: o.serve,
    exportsRestricted: config.exportsRestricted,
    exportThreads: config.exportThreads,
  });
  if (o.serve) noteServed(config);
  const built = performance.now();
  // The build serves already: a failed publication is reported as such, not as a failed build.
  let publication: PublicationReport | null = null;
  let publishError: string | null = null;
  if (o.serve && o.publish) {
    try {
      publication = await publishBuild(config, id);
    } catch (e) {
      publishError = publishFailure(e, config);
    }
  }
  const done = performance.now();
  const pruned = await pruneOldBuilds(config, publication ? id : null);
  return {
    id,
    dir,
    manifest,
    serving: o.serve,
    publication,
    pruned: pruned.removed,
    prune_error: pruned.error ?? null,
    publish_error: publishError,
    changes,
    build_ms: Math.round(built - started),
    publish_ms: publication ? Math.round(done - built) : 0,
    total_ms: Math.round(done - started),
  };
}

/** The sources this configuration imports: SOURCES's picks from the registry, then SOURCES_FILE's. */
export function configuredSources(config: Pick<Config, 'sources' | 'sourcesFile'>): Source[] {
  // A bad SOURCES or sources file is the configuration's to fix (exit 2 from the CLI).
  try {
    const picked = config.sources ? selectSources(config.sources, loadRegistry()) : [];
    const own = config.sourcesFile ? loadSources(config.sourcesFile) : [];
    const clash = own.find((s) => picked.some((p) => p.name === s.name));
    if (clash)
      throw new SourcesError(
        `${config.sourcesFile}: source ${clash.name} has the name of a registry source SOURCES picks; rename it, or leave the registry's out (-${clash.name})`,
      );
    return [...picked, ...own];
  } catch (e) {
    if (e instanceof SourcesError) throw new ConfigError(e.message, { cause: e });
    throw e;
  }
}

/** The refresh options a configuration sets. */
export function refreshOptions(config: Config): RefreshOptions {
  return {
    mirror: config.sourcesMirror || undefined,
    concurrency: config.sourcesConcurrency,
    maxBytes: config.sourcesMaxBytes,
    shrinkLimit: config.sourcesShrinkPct / 100,
    maxEntries: config.sourcesMaxEntries,
    timeoutMs: REFRESH_DEFAULTS.timeoutMs,
    prune: true,
    guardedPorts: [config.adminPort],
    // Read where it is used, like the S3 client's credentials: never a setting that is shown.
    githubToken: process.env.GITHUB_TOKEN || undefined,
  };
}

/** What one refresh run did (`ipsift sources refresh --json`). */
export interface RefreshRun {
  /** Another process on the data directory was building: nothing was done. */
  busy?: boolean;
  changed: boolean;
  removed: string[];
  reports: SourceReport[];
  /** Sources whose content went stale or expired (or fresh again) in this run. */
  freshness?: RefreshResult['freshness'];
  build: { id: string; published: boolean; publish_error?: string | null; prune_error?: string } | null;
}

export interface RefreshSettings {
  /** Every source, due or not. */
  all: boolean;
  /** Build when a source changed (or none serves yet). */
  build: boolean;
  /** Publish that build too. */
  publish: boolean;
  /** The caller holds the data directory's build lock already (the daily run). */
  lockHeld?: boolean;
  /** Only these sources (by name), as an operator asks for one; absent: every configured source. */
  only?: readonly string[];
}

/**
 * The sources that are due (all with `all`), then a build when any changed or none serves
 * yet, under the data directory's build lock so it never races another build; busy when
 * another process holds the lock.
 */
export async function refreshAndBuild(config: Config, sources: readonly Source[], o: RefreshSettings): Promise<RefreshRun> {
  const held = o.lockHeld === true;
  if (!held && !takeBuildLock(config.dataDir)) return { busy: true, changed: false, removed: [], reports: [], build: null };
  try {
    // Every configured source is passed, `only` or not: one left out would be pruned as no
    // longer configured, its feed removed from the build.
    const result = await refreshSources(config.dataDir, sources, { ...refreshOptions(config), all: o.all, only: o.only });
    let build: RefreshRun['build'] = null;
    const nothingServes = readCurrentBuildId(config.dataDir) === null && listFeeds(config.dataDir).length > 0;
    if (o.build && (result.changed || nothingServes)) {
      const { id } = runBuild({ dataDir: config.dataDir, serve: true, exportsRestricted: config.exportsRestricted, exportThreads: config.exportThreads });
      noteServed(config);
      let publishError: string | null = null;
      if (o.publish) await publishBuild(config, id).catch((e: unknown) => (publishError = publishFailure(e, config)));
      build = { id, published: o.publish && publishError === null, publish_error: publishError };
      const pruned = await pruneOldBuilds(config, build.published ? id : null);
      if (pruned.error) build.prune_error = pruned.error;
    }
    return { changed: result.changed, removed: result.removed, reports: result.reports, freshness: result.freshness, build };
  } finally {
    if (!held) releaseBuildLock(config.dataDir);
  }
}
