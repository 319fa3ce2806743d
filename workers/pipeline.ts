// Pipeline thread: one step of the build pipeline (src/pipeline/pipeline.ts) for a server's
// daily run or source refresh, off its event loop. Takes the job in workerData, posts back
// {ok: result} or {error: message}, then ends.

import { parentPort, workerData } from 'node:worker_threads';
import { buildAndPublish, configuredSources, refreshAndBuild } from '../src/pipeline/pipeline.js';
import type { PipelineJob } from '../src/pipeline/pipeline-thread.js';

const job = workerData as PipelineJob;

async function run(): Promise<unknown> {
  if (job.kind === 'build') return buildAndPublish(job.config, { serve: true, publish: true });
  return refreshAndBuild(job.config, configuredSources(job.config), job.settings);
}

run().then(
  (ok) => parentPort!.postMessage({ ok }),
  (e: unknown) => parentPort!.postMessage({ error: e instanceof Error ? e.message : String(e) }),
);
