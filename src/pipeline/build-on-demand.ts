// A build an operator asks for (POST /admin/v1/builds, the console's "Build now"): what the
// daily run does (build from the imported feeds, make it serving, publish), at once and
// whatever was built today, on the pipeline thread. One at a time per data directory: the
// same lock as the daily run and the source refresher, so a request while any of them builds
// is turned away rather than queued.

import type { Config } from '../config.js';
import { reasonOf } from '../errors.js';
import type { Logger } from '../log.js';
import { releaseBuildLock, takeBuildLock } from './build-lock.js';
import { onPipelineThread, type PipelineRun } from './pipeline-thread.js';
import type { BuildRun } from './pipeline.js';

export class BuildOnDemand {
  private thread: PipelineRun<unknown> | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
  ) {}

  /** Starts a build; false when one is running here or another process holds the build lock. */
  start(by: string): boolean {
    if (this.running !== null || !takeBuildLock(this.config.dataDir)) return false;
    const t = Date.now();
    this.log.info('build asked for', { by });
    this.running = (async () => {
      try {
        const run = onPipelineThread({ kind: 'build', config: this.config }) as PipelineRun<BuildRun>;
        this.thread = run;
        const build = await run.done;
        if (build.publish_error !== null)
          this.log.error('build asked for serves, but publishing it failed: downloads serve the last published build', {
            build: build.id,
            reason: build.publish_error,
            by,
          });
        else this.log.info('build asked for published', { build: build.id, artifacts: build.publication?.artifacts ?? 0, ms: Date.now() - t, by });
        if (build.prune_error !== null) this.log.warn('older builds were not pruned', { reason: build.prune_error });
      } catch (e) {
        this.log.error('build asked for failed; the previous build keeps serving', { reason: reasonOf(e), by });
      } finally {
        this.thread = null;
        this.running = null;
        releaseBuildLock(this.config.dataDir);
      }
    })();
    return true;
  }

  /** Resolves when the build in progress (if any) has ended. */
  async settled(): Promise<void> {
    await this.running;
  }

  /** Ends a build in progress (the server stopping); its lock goes with it. */
  async stop(): Promise<void> {
    await this.thread?.stop();
    await this.running;
  }
}
