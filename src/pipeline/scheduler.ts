// The daily build-and-publish: at PUBLISH_AT (UTC, HH:MM[:SS]) a pipeline thread
// (pipeline-thread.ts) refreshes the due sources (when sources are configured), then builds,
// serves and publishes, so the build's seconds of CPU never stall the event loop; servers pick
// the new index up through CURRENT as after any build.
//
// Once per data directory: a run takes DATA_DIR/daily-build.lock (created exclusively, holding
// the pid; a lock whose process is gone, or older than LOCK_STALE_MS, is taken over) and is
// skipped when the serving build is already today's, so servers sharing a data directory build
// once; in a cluster (ACCOUNTING=redis) builder nodes also share a lock in Redis
// (cluster-lock.ts), so the cluster builds once a day whatever the number of builders.
// A server whose serving build predates the latest run that fell due (today's PUBLISH_AT when
// past, else yesterday's: a server that was down over it) catches up at once.

import { buildIdDay, dayOfBuildId, readCurrentBuildId } from '../index/builds.js';
import type { Logger } from '../log.js';
import { reasonOf } from '../errors.js';
import type { ClusterBuildLock, LockOutcome } from './cluster-lock.js';
import { listFeeds } from '../feeds/feed-store.js';
import type { Config } from '../config.js';
import { releaseBuildLock, takeBuildLock } from './build-lock.js';
import { onPipelineThread, type PipelineRun } from './pipeline-thread.js';
import { systemClock, type Clock, type Timer } from '../clock.js';

/** ms from now until the next UTC time of day `at` (HH:MM or HH:MM:SS). */
export function msUntil(at: string, nowMs: number): number {
  const m = /^([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?$/.exec(at);
  if (!m) throw new Error(`PUBLISH_AT must be HH:MM or HH:MM:SS (UTC), got ${JSON.stringify(at)}`);
  const d = new Date(nowMs);
  let next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), Number(m[1]), Number(m[2]), Number(m[3] ?? 0));
  if (next <= nowMs) next += 86_400_000;
  return next - nowMs;
}

/** While a build runs, NOT_PUBLISHED answers suggest retrying after this long. */
const RUNNING_RETRY_MS = 60_000;

/** Whether the serving build of the data directory was made today (UTC). */
export function servingToday(dataDir: string, nowMs = Date.now()): boolean {
  const id = readCurrentBuildId(dataDir);
  return id !== null && dayOfBuildId(id) === buildIdDay(nowMs);
}

/**
 * Whether the serving build was made before the day of the latest run due at `at` by nowMs
 * (none serving counts as missed): then that run was missed, as by a server down over it.
 */
export function missedRun(dataDir: string, at: string, nowMs = Date.now()): boolean {
  const id = readCurrentBuildId(dataDir);
  const lastDue = nowMs + msUntil(at, nowMs) - 86_400_000;
  return id === null || dayOfBuildId(id) < buildIdDay(lastDue);
}

/** How soon a daily run that found a source refresh building tries again. */
const LOCK_RETRY_MS = 60_000;

export class PublishScheduler {
  private timer: Timer | null = null;
  /** The pipeline thread of the run in progress, if any. */
  private thread: PipelineRun<unknown> | null = null;
  private retrySoon = false;
  /** [running (1/0), next attempt (ms)], in shared memory: front-end threads read it too. */
  readonly state = new Float64Array(new SharedArrayBuffer(16));

  private get running(): boolean {
    return this.state[0] === 1;
  }
  private set running(on: boolean) {
    this.state[0] = on ? 1 : 0;
  }
  private get nextMs(): number {
    return this.state[1];
  }
  private set nextMs(ms: number) {
    this.state[1] = ms;
  }

  private readonly dataDir: string;

  constructor(
    private readonly at: string,
    private readonly config: Config,
    private readonly log: Logger,
    /** Builder nodes of a cluster (null: this machine's lock file only). */
    private readonly clusterLock: ClusterBuildLock | null = null,
    /**
     * The day (YYYY-MM-DD, UTC) of the last publication. Given where source refreshes build
     * during the day: then a run is skipped, or caught up, by what was published, not by
     * what serves.
     */
    private readonly publishedDay?: () => string | null,
    /** When the runs fall due (a test's clock runs one when it moves). */
    private readonly clock: Clock = systemClock,
  ) {
    msUntil(at, clock.now()); // validate now
    this.dataDir = config.dataDir;
  }

  /** Schedules the daily run; catches up at once when the latest one due was missed. */
  start(catchUp = true): void {
    const now = this.clock.now();
    if (catchUp && this.missed(now)) {
      this.log.info('the latest daily build due is missing: building now', { at_utc: this.at });
      this.nextMs = now;
      this.timer = this.clock.after(0, () => void this.runOnce().finally(() => this.next()));
      return;
    }
    const delay = msUntil(this.at, now);
    this.nextMs = now + delay;
    this.timer = this.clock.after(delay, () => void this.runOnce().finally(() => this.next()));
    this.log.info('daily build and publish scheduled', { at_utc: this.at, in_s: Math.round(delay / 1000) });
  }

  /** Whether the latest run due was missed: by the publication's day where known, else the serving build's. */
  private missed(nowMs: number): boolean {
    if (!this.publishedDay) return missedRun(this.dataDir, this.at, nowMs);
    const day = this.publishedDay();
    // No feed yet (sources not fetched): the source refresh builds and publishes first.
    if (listFeeds(this.dataDir).length === 0) return false;
    const lastDue = new Date(nowMs + msUntil(this.at, nowMs) - 86_400_000).toISOString().slice(0, 10);
    return day === null || day < lastDue;
  }

  /** After a run: the next day's, or the same run again shortly when it found the lock held. */
  private next(): void {
    if (!this.retrySoon) return this.start(false);
    this.retrySoon = false;
    this.nextMs = this.clock.now() + LOCK_RETRY_MS;
    this.timer = this.clock.after(LOCK_RETRY_MS, () => void this.runOnce().finally(() => this.next()));
  }

  /** Seconds until a missing daily publication may be there: the next attempt, or a minute while one runs. */
  retryAfterS(nowMs = this.clock.now()): number {
    return retryAfterOf(this.state, nowMs);
  }

  /** Builds and publishes once, unless today's build serves already or another process is building. */
  async runOnce(): Promise<void> {
    if (this.running) return;
    if (this.publishedDay) {
      if (this.publishedDay() === new Date(this.clock.now()).toISOString().slice(0, 10))
        return void this.log.info('daily build skipped: today’s databases are published');
    } else if (servingToday(this.dataDir, this.clock.now())) return void this.log.info('daily build skipped: today’s build already serves');
    if (!takeBuildLock(this.dataDir)) {
      // Where sources refresh, the holder may be a refresh of a few seconds: the day's run waits for it.
      if (this.publishedDay) {
        this.retrySoon = true;
        return void this.log.info('daily build waits: another process on this data directory is building', { retry_in_s: LOCK_RETRY_MS / 1000 });
      }
      return void this.log.info('daily build skipped: another process on this data directory is running it');
    }
    const day = new Date(this.clock.now()).toISOString().slice(0, 10);
    if (this.clusterLock) {
      let outcome: LockOutcome;
      try {
        outcome = await this.clusterLock.take(day);
      } catch (e) {
        outcome = { taken: false, reason: `the cluster's lock cannot be taken (${reasonOf(e)}); tried again at the next run` };
      }
      if (!outcome.taken) {
        releaseBuildLock(this.dataDir);
        return void this.log.info('daily build skipped', { reason: outcome.reason });
      }
    }
    this.running = true;
    const t = Date.now();
    let built: string | null = null;
    try {
      if (this.config.sources || this.config.sourcesFile) {
        // The sources that are due, without a build of their own: the build below is the day's.
        const refresh = { all: false, build: false, publish: false, lockHeld: true };
        const refreshing = onPipelineThread({ kind: 'refresh', config: this.config, settings: refresh });
        this.thread = refreshing;
        const refreshed = await refreshing.done;
        for (const r of refreshed.reports) if (!r.ok || r.error) this.log.warn('source not refreshed', { source: r.name, serving: r.ok, reason: r.error });
      }
      // The build, made serving, then published.
      const building = onPipelineThread({ kind: 'build', config: this.config });
      this.thread = building;
      const build = await building.done;
      built = build.id;
      if (build.publish_error !== null)
        this.log.error('daily build serves, but publishing it failed: downloads serve the last published build', {
          build: build.id,
          reason: build.publish_error,
        });
      else this.log.info('daily build published', { build: build.id, artifacts: build.publication?.artifacts ?? 0, ms: Date.now() - t });
      if (build.prune_error !== null) this.log.warn('older builds were not pruned', { reason: build.prune_error });
    } catch (e) {
      this.log.error('daily build and publish failed; the previous build keeps serving', { reason: e instanceof Error ? e.message : String(e) });
    } finally {
      this.thread = null;
      this.running = false;
      releaseBuildLock(this.dataDir);
      // An unreleased cluster lock frees itself when it expires.
      await this.clusterLock?.release(day, built).catch((e: unknown) => this.log.warn('the cluster build lock was not released', { reason: reasonOf(e) }));
    }
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = null;
    // A run in progress ends with the server; the next start catches the day up.
    void this.thread?.stop();
  }
}

/** PublishScheduler.retryAfterS from its shared state (on any thread). */
export function retryAfterOf(state: Float64Array, nowMs = Date.now()): number {
  const ms = state[0] === 1 ? RUNNING_RETRY_MS : state[1] - nowMs;
  return Math.max(1, Math.ceil(ms / 1000));
}
