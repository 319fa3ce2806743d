// Keeps the configured sources fresh while ipsift serves: at each source's due time a pipeline
// thread (pipeline-thread.ts) fetches what is due, imports what changed and builds when
// anything did, so the fetches' parsing and the build's CPU never stall the event loop; the
// servers pick the new index up through CURRENT as after any build. The daily publication keeps
// its own schedule (scheduler.ts): a refresh build serves without publishing, except the first
// one of a data directory that has never published.

import type { Config } from '../config.js';
import type { Source } from '../feeds/sources.js';
import { DEFAULT_INTERVAL_MS } from '../feeds/sources.js';
import { isDue } from '../feeds/refresh.js';
import { readSourceStates, retryMs } from '../feeds/source-state.js';
import { type Disabled, readDisabledSources, switchSource } from '../feeds/source-switches.js';
import { nextFreshnessChange } from '../feeds/freshness.js';
import type { Logger } from '../log.js';
import { reasonOf } from '../errors.js';
import type { RefreshRun } from './pipeline.js';
import { onPipelineThread, type PipelineRun } from './pipeline-thread.js';
import { buildLockHeld } from './build-lock.js';

const MIN_WAIT_MS = 30_000;
const MAX_WAIT_MS = 3_600_000;

export class SourceRefresher {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<RefreshRun | null> | null = null;
  private stopped = false;
  private thread: PipelineRun<RefreshRun> | null = null;

  constructor(
    private readonly sources: readonly Source[],
    private readonly config: Config,
    private readonly log: Logger,
    /** Whether nothing was ever published here: the first refresh build then publishes too. */
    private readonly neverPublished: () => boolean,
  ) {}

  start(): void {
    this.schedule(0);
  }

  /** When the next source falls due (ms from now), between half a minute and an hour. */
  nextDueInMs(nowMs = Date.now()): number {
    const states = readSourceStates(this.config.dataDir);
    const disabled = readDisabledSources(this.config.dataDir);
    let next = Infinity;
    for (const s of this.sources) {
      const st = states[s.name];
      const off = s.name in disabled;
      // A switch not yet built calls for a refresh now; a disabled source is otherwise never due.
      if (st && (st.disabled ?? false) !== off) return 0;
      if (off) continue;
      if (isDue(st, s.intervalMs ?? DEFAULT_INTERVAL_MS, nowMs)) return 0;
      next = Math.min(next, Date.parse(st!.attempted_at) + retryMs(st!.attempt, s.intervalMs ?? DEFAULT_INTERVAL_MS) - nowMs);
      // A source going stale or expired calls for a build even when nothing is due.
      const turns = nextFreshnessChange({ ...st!, max_age_s: s.maxAgeMs ? s.maxAgeMs / 1000 : null }, nowMs);
      if (turns !== null) next = Math.min(next, turns - nowMs);
    }
    return Math.min(Math.max(next, 0), MAX_WAIT_MS);
  }

  /** One timer at a time: a schedule replaces the one pending. */
  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.runOnce().finally(() => this.schedule(Math.max(MIN_WAIT_MS, this.nextDueInMs()))), ms);
    this.timer.unref();
  }

  /** Whether a refresh is in progress. */
  get busy(): boolean {
    return this.running !== null;
  }

  /** Whether a build holds the data directory (a refresh started now would find it and do nothing). */
  get buildRunning(): boolean {
    return buildLockHeld(this.config.dataDir);
  }

  /** Whether a source of this name is configured here. */
  has(name: string): boolean {
    return this.sources.some((s) => s.name === name);
  }

  /** Whether an operator disabled it (it is then neither fetched nor built from). */
  disabled(name: string): Disabled | null {
    return readDisabledSources(this.config.dataDir)[name] ?? null;
  }

  /**
   * Disables (`by` given) or enables (`by` null) a configured source; when that changed
   * anything, a refresh of it follows (after any in flight), which builds without it or with it
   * again. Returns whether it changed.
   */
  switch(name: string, by: string | null): boolean {
    if (!switchSource(this.config.dataDir, name, by, new Date())) return false;
    // Where a build held the data directory, the switch waits for the next scheduled refresh: it
    // is brought forward (a pending switch makes nextDueInMs 0).
    void this.runOnce(false, [name]).finally(() => {
      this.schedule(Math.max(MIN_WAIT_MS, this.nextDueInMs()));
    });
    return true;
  }

  /**
   * One refresh (all sources with `all`, or only the named ones) after any in flight; resolves
   * with what it did, or null when it failed.
   */
  async runOnce(all = false, only?: readonly string[]): Promise<RefreshRun | null> {
    while (this.running) await this.running;
    if (this.stopped) return null;
    const run = this.refresh(all, only).finally(() => (this.running = null));
    this.running = run;
    return run;
  }

  private async refresh(all: boolean, only?: readonly string[]): Promise<RefreshRun | null> {
    const t = Date.now();
    try {
      const publish = this.neverPublished();
      this.thread = onPipelineThread({ kind: 'refresh', config: this.config, settings: { all, build: true, publish, only } });
      const run = await this.thread.done;
      if (run.busy) this.log.info('source refresh skipped: a build is running on this data directory; the next refresh fetches what was due');
      for (const r of run.reports)
        if (!r.ok || r.error) this.log.warn('source not refreshed', { source: r.name, serving: r.ok, result: r.fetch, reason: r.error });
      for (const f of run.freshness ?? []) this.log.warn('source content freshness changed', { source: f.name, from: f.from, to: f.to });
      if (run.build?.publish_error)
        this.log.error('sources refreshed and built; the build serves, but publishing it failed', { build: run.build.id, reason: run.build.publish_error });
      if (run.build?.prune_error) this.log.warn('older builds were not pruned', { reason: run.build.prune_error });
      this.adviseMirror(run);
      if (run.reports.length) {
        this.log.info('sources refreshed', {
          due: run.reports.length,
          changed: run.reports.filter((r) => r.changed).length,
          build: run.build?.id ?? null,
          published: run.build?.published ?? false,
          ms: Date.now() - t,
        });
      }
      return run;
    } catch (e) {
      if (this.stopped) return null;
      this.log.error('source refresh failed; the serving build is unchanged', { reason: reasonOf(e) });
      return null;
    } finally {
      this.thread = null;
    }
  }

  private mirrorAdvised = false;

  /** Once a process: where most sources cannot be reached at all, how to serve them from a mirror. */
  private adviseMirror(run: RefreshRun): void {
    if (this.mirrorAdvised || this.config.sourcesMirror) return;
    const unreachable = run.reports.filter((r) => /cannot fetch from|no answer within/.test(r.error ?? ''));
    if (unreachable.length === 0 || unreachable.length < run.reports.length / 2) return;
    this.mirrorAdvised = true;
    const urls = new Map(this.sources.map((x) => [x.name, x.url]));
    const hosts = [...new Set(unreachable.flatMap((r) => (urls.get(r.name) ? [new URL(urls.get(r.name)!).host] : [])))];
    this.log.warn(
      `${unreachable.length} of ${run.reports.length} sources could not be reached (${hosts.slice(0, 8).join(', ')}${hosts.length > 8 ? ', …' : ''}). Where this server has no Internet access, copy the feeds into a tree named after their hosts, serve it over HTTP(S) and set SOURCES_MIRROR to its base URL (docs/operators/sources.md, "Mirroring")`,
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // A refresh in flight is cut short: its writes are each whole (renamed into place), and the
    // next start fetches again whatever it had not recorded.
    await this.thread?.stop();
    await this.running;
  }
}
