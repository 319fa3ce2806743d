// Keeps the configured sources fresh while ipsift serves: at each source's due time a child
// process runs `ipsift sources refresh` (fetch what is due, import what changed, build when
// anything did), so the fetches' parsing and the build's CPU never stall the event loop; the
// servers pick the new index up through CURRENT as after any build. The daily publication keeps
// its own schedule (scheduler.ts): a refresh build serves without publishing, except the first
// one of a data directory that has never published.

import { execFile, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, type Config } from '../config.js';
import { loadSources, SourcesError, type Source } from '../feeds/sources.js';
import { loadRegistry, selectSources } from '../feeds/registry.js';
import { DEFAULT_INTERVAL_MS } from '../feeds/sources.js';
import { isDue, REFRESH_DEFAULTS, type RefreshOptions, type SourceReport } from '../feeds/refresh.js';
import { readSourceStates, retryMs } from '../feeds/source-state.js';
import type { Logger } from '../log.js';
import { reasonOf } from '../errors.js';

const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../cli.js');

/** The sources this configuration imports: SOURCES's picks from the registry, then SOURCES_FILE's. */
export function configuredSources(config: Pick<Config, 'sources' | 'sourcesFile'>): Source[] {
  // A bad SOURCES or sources file is the configuration's to fix (exit 2 from the CLI).
  try {
    const picked = config.sources ? selectSources(config.sources, loadRegistry()) : [];
    const own = config.sourcesFile ? loadSources(config.sourcesFile) : [];
    const clash = own.find((s) => picked.some((p) => p.name === s.name));
    if (clash) throw new SourcesError(`${config.sourcesFile}: source ${clash.name} has the name of a registry source SOURCES picks; rename it, or leave the registry's out (-${clash.name})`);
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
  };
}

/** What one refresh run printed (`ipsift sources refresh --json`). */
export interface RefreshRun {
  busy?: boolean;
  changed: boolean;
  removed: string[];
  reports: SourceReport[];
  build: { id: string; published: boolean } | null;
}

const MIN_WAIT_MS = 30_000;
const MAX_WAIT_MS = 3_600_000;

export class SourceRefresher {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<RefreshRun | null> | null = null;
  private stopped = false;
  private child: ChildProcess | null = null;

  constructor(
    private readonly sources: readonly Source[],
    private readonly env: NodeJS.ProcessEnv,
    private readonly dataDir: string,
    private readonly log: Logger,
    /** Whether nothing was ever published here: the first refresh build then publishes too. */
    private readonly neverPublished: () => boolean,
  ) {}

  start(): void {
    this.schedule(0);
  }

  /** When the next source falls due (ms from now), between half a minute and an hour. */
  nextDueInMs(nowMs = Date.now()): number {
    const states = readSourceStates(this.dataDir);
    let next = Infinity;
    for (const s of this.sources) {
      const st = states[s.name];
      if (isDue(st, s.intervalMs ?? DEFAULT_INTERVAL_MS, nowMs)) return 0;
      next = Math.min(next, Date.parse(st!.attempted_at) + retryMs(st!.attempt, s.intervalMs ?? DEFAULT_INTERVAL_MS) - nowMs);
    }
    return Math.min(Math.max(next, 0), MAX_WAIT_MS);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.runOnce().finally(() => this.schedule(Math.max(MIN_WAIT_MS, this.nextDueInMs()))), ms);
    this.timer.unref();
  }

  /** One refresh (all sources with `all`) after any in flight; resolves with what it did, or null when it failed. */
  async runOnce(all = false): Promise<RefreshRun | null> {
    while (this.running) await this.running;
    if (this.stopped) return null;
    const run = this.refresh(all).finally(() => (this.running = null));
    this.running = run;
    return run;
  }

  private async refresh(all: boolean): Promise<RefreshRun | null> {
    const args = ['sources', 'refresh', '--json', ...(all ? ['--all'] : []), ...(this.neverPublished() ? ['--publish'] : [])];
    const t = Date.now();
    try {
      const run = await new Promise<RefreshRun>((resolve, reject) => {
        this.child = execFile(process.execPath, [CLI, ...args], { env: this.env, maxBuffer: 1 << 24 }, (err, stdout, stderr) => {
          this.child = null;
          if (err) reject(new Error(stderr.trim() || err.message));
          else resolve(JSON.parse(stdout) as RefreshRun);
        });
      });
      if (run.busy) this.log.info('source refresh skipped: another process on this data directory is building');
      for (const r of run.reports) if (!r.ok || r.error) this.log.warn('source not refreshed', { source: r.name, serving: r.ok, result: r.fetch, reason: r.error });
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
      this.log.error('source refresh failed; the serving build is unchanged', { reason: reasonOf(e) });
      return null;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // A refresh in flight is cut short: its writes are each whole (renamed into place), and the
    // next start fetches again whatever it had not recorded.
    this.child?.kill('SIGTERM');
    await this.running;
  }
}
