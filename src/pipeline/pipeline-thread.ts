// A step of the build pipeline on a thread of its own (workers/pipeline.ts): a server's daily
// run and source refreshes call the same functions as the CLI, with the same typed settings,
// while its event loop goes on answering. Errors come back as errors, not as text on stderr.

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Config } from '../config.js';
import type { BuildRun, RefreshRun, RefreshSettings } from './pipeline.js';
import { releaseBuildLock } from './build-lock.js';

const WORKER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../workers/pipeline.js');

export type PipelineJob = { kind: 'build'; config: Config } | { kind: 'refresh'; config: Config; settings: RefreshSettings };

/** A job in progress: its outcome, and a way to end it early (a server stopping). */
export interface PipelineRun<T> {
  done: Promise<T>;
  stop(): Promise<void>;
}

export function onPipelineThread(job: { kind: 'build'; config: Config }): PipelineRun<BuildRun>;
export function onPipelineThread(job: { kind: 'refresh'; config: Config; settings: RefreshSettings }): PipelineRun<RefreshRun>;
export function onPipelineThread(job: PipelineJob): PipelineRun<unknown> {
  // A heap of its own, bounded (BUILD_MEMORY_MIB): a build that outgrows it ends this thread
  // with an error, never the server answering lookups beside it.
  const worker = new Worker(WORKER, { workerData: job, resourceLimits: { maxOldGenerationSizeMb: job.config.buildMemoryMib } });
  const done = new Promise<unknown>((resolve, reject) => {
    let settled = false;
    worker.once('message', (m: { ok?: unknown; error?: string }) => {
      settled = true;
      if (m.error !== undefined) reject(new Error(m.error));
      else resolve(m.ok);
    });
    worker.once('error', (e) => {
      settled = true;
      if ((e as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY') {
        if (job.kind === 'refresh' && job.settings.lockHeld !== true) releaseBuildLock(job.config.dataDir);
        return reject(
          new Error(
            `the ${job.kind} ran out of its memory (BUILD_MEMORY_MIB=${job.config.buildMemoryMib}) and stopped; the serving build is unchanged: raise BUILD_MEMORY_MIB`,
          ),
        );
      }
      reject(e);
    });
    worker.once('exit', (code) => {
      if (settled) return;
      // Ended before it could give the lock back: a refresh that took it must not leave it held.
      if (job.kind === 'refresh' && job.settings.lockHeld !== true) releaseBuildLock(job.config.dataDir);
      reject(new Error(`the pipeline thread stopped (exit ${code}) before it finished`));
    });
  });
  return { done, stop: async () => void (await worker.terminate()) };
}
