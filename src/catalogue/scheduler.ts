// The daily build-and-publish: at PUBLISH_AT (UTC, HH:MM[:SS]) child processes run
// `ipsift sources import` (when SOURCES_FILE is set), `ipsift build` and `ipsift publish`, so the build's seconds of CPU never stall the event
// loop; servers pick the new index up through CURRENT as after any build.

import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../log.js';

const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../cli.js');

/** ms from now until the next UTC time of day `at` (HH:MM or HH:MM:SS). */
export function msUntil(at: string, nowMs: number): number {
  const m = /^([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?$/.exec(at);
  if (!m) throw new Error(`PUBLISH_AT must be HH:MM or HH:MM:SS (UTC), got ${JSON.stringify(at)}`);
  const d = new Date(nowMs);
  let next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), Number(m[1]), Number(m[2]), Number(m[3] ?? 0));
  if (next <= nowMs) next += 86_400_000;
  return next - nowMs;
}

function run(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [CLI, ...args, '--json'], { env, maxBuffer: 1 << 24 }, (err, stdout, stderr) => {
      if (err) reject(new Error(stderr.trim() || err.message));
      else resolve(stdout);
    });
  });
}

export class PublishScheduler {
  private timer: NodeJS.Timeout | null = null;
  private running = false;

  constructor(
    private readonly at: string,
    private readonly env: NodeJS.ProcessEnv,
    private readonly log: Logger,
  ) {
    msUntil(at, Date.now()); // validate now
  }

  start(): void {
    const delay = msUntil(this.at, Date.now());
    this.timer = setTimeout(() => void this.runOnce().finally(() => this.start()), delay);
    this.timer.unref();
    this.log.info('daily build and publish scheduled', { at_utc: this.at, in_s: Math.round(delay / 1000) });
  }

  /** Builds and publishes once; a run still going when the next is due is not doubled. */
  async runOnce(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const t = Date.now();
    try {
      if (this.env.SOURCES_FILE) {
        const reports = JSON.parse(await run(['sources', 'import'], this.env)) as { name: string; ok: boolean; error?: string }[];
        for (const r of reports) if (!r.ok || r.error) this.log.warn('source import', { source: r.name, ok: r.ok, reason: r.error });
      }
      const build = JSON.parse(await run(['build'], this.env)) as { id: string };
      const published = JSON.parse(await run(['publish', '--build', build.id], this.env)) as { artifacts: number };
      this.log.info('daily build published', { build: build.id, artifacts: published.artifacts, ms: Date.now() - t });
    } catch (e) {
      this.log.error('daily build and publish failed; the previous build keeps serving', { reason: e instanceof Error ? e.message : String(e) });
    } finally {
      this.running = false;
    }
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
