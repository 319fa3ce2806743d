// Exports on several threads: databases are independent, so each thread writes a share of
// them from the same input, held once in shared memory. The build stays a synchronous
// call: the calling thread sleeps on an Atomics counter the workers raise when done.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { DATABASES, type DatabaseDef } from './databases.js';
import { writeExportsManifest, type ExportInput, type ExportsManifest } from './exporter.js';
import type { SourceNotice } from './notices.js';
import { makeDirectory } from '../files.js';
import { EXPORTS_DIR } from '../data-dir.js';

const WORKER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../workers/export.js');
/**
 * Relative cost of each database, measured on a 1 M-range build (export thread CPU seconds):
 * threads take the costliest first, so the last ones taken are small and threads finish close
 * together.
 */
const COST: Record<string, number> = {
  ipsift_extended_v1: 18,
  geoip2_anonymous_v1: 11.7,
  ipsift_v1: 8,
  proxy_v1: 7.1,
  hosting_v1: 7.1,
  vpn_v1: 1.6,
  proxy_provider_v1: 0.9,
  vpn_provider_v1: 0.5,
};
/**
 * Young generation of an export thread: exports make many short-lived objects, and with the
 * default a fifth of a thread's time went to scavenges. 256 MiB took about 1 s off a 31 s
 * build of 1 M ranges, but every thread touches all of it: a 1 M-range build peaked at 2.61 GB
 * with it, 1.81 GB at 64 MiB (with the build's arrays let go before the threads start), the
 * exports' time within the runs' noise (32 to 35 s on two cores).
 */
const YOUNG_GENERATION_MB = 64;
/** Longest a build waits for its export threads. */
const TIMEOUT_MS = 60 * 60 * 1000;

/** The exporter's input in shared memory, plus the detail texts (copied to each thread). */
export interface SharedExportInput {
  v4Starts: Float64Array;
  v4Records: Uint32Array;
  v6Words: Uint32Array;
  v6Records: Uint32Array;
  recordCount: number;
  recordDetailIds: Uint32Array;
  /** Per category, detail id → JSON text ('' for id 0). */
  detailTexts: string[][];
  notices: readonly SourceNotice[];
}

function shared<T extends Float64Array | Uint32Array>(Kind: { new (b: SharedArrayBuffer): T; BYTES_PER_ELEMENT: number }, values: ArrayLike<number>): T {
  const a = new Kind(new SharedArrayBuffer(values.length * Kind.BYTES_PER_ELEMENT));
  (a as unknown as { set(v: ArrayLike<number>): void }).set(values);
  return a;
}

export function shareExportInput(
  v4Starts: readonly number[],
  v4Records: readonly number[],
  /** In shared memory (v6WordsOf into a SharedArrayBuffer's view): the threads read it as it is. */
  v6Words: Uint32Array<ArrayBufferLike>,
  v6Records: readonly number[],
  recordCount: number,
  recordDetailIds: readonly number[],
  detailTexts: string[][],
  notices: readonly SourceNotice[] = [],
): SharedExportInput {
  return {
    v4Starts: shared(Float64Array, v4Starts),
    v4Records: shared(Uint32Array, v4Records),
    v6Words,
    v6Records: shared(Uint32Array, v6Records),
    recordCount,
    recordDetailIds: shared(Uint32Array, recordDetailIds),
    detailTexts,
    notices,
  };
}

/** The exporter's input view of shared input (in any thread). */
export function exportInputOf(s: SharedExportInput): ExportInput {
  const parsed = s.detailTexts.map((texts) => new Array<Readonly<Record<string, string | number>> | undefined>(texts.length));
  return {
    v4Starts: s.v4Starts as unknown as number[],
    v4Records: s.v4Records as unknown as number[],
    v6Words: s.v6Words,
    v6Records: s.v6Records as unknown as number[],
    recordCount: s.recordCount,
    recordDetailIds: s.recordDetailIds as unknown as number[],
    detail: (k, id) => (parsed[k][id] ??= JSON.parse(s.detailTexts[k][id]) as Record<string, string | number>),
    notices: s.notices,
  };
}

export function exportThreads(): number {
  return Math.max(1, Math.min(4, os.availableParallelism()));
}

/**
 * Starts writeExports on several threads and returns a function that waits for them and
 * returns the manifest (in catalogue order). The caller may do other work in between.
 */
export function startExportsParallel(
  buildDir: string,
  input: SharedExportInput,
  built: Date,
  threads = exportThreads(),
  databases: readonly DatabaseDef[] = DATABASES,
): () => ExportsManifest {
  const dir = path.join(buildDir, EXPORTS_DIR);
  makeDirectory(dir);
  // A queue, not fixed shares: each thread takes the next database when it is done with one
  // (`next` counts those taken), so a cost misjudged for this feed leaves no thread idle.
  // Editions are written with the database they are editions of (exporter.ts).
  const ids = databases
    .filter((d) => d.editionOf === undefined)
    .sort((a, b) => (COST[b.id] ?? 1) - (COST[a.id] ?? 1))
    .map((d) => d.id);
  const next = new Int32Array(new SharedArrayBuffer(4));
  const done = new Int32Array(new SharedArrayBuffer(4));
  const parts = Array.from({ length: Math.min(threads, ids.length) }, (_, k) => path.join(dir, `.part-${k}.json`));
  const workers = parts.map(
    (part) =>
      new Worker(WORKER, {
        workerData: { dir, input, built: built.toISOString(), ids, next, part, done },
        resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
      }),
  );
  return () => {
    const deadline = Date.now() + TIMEOUT_MS;
    for (let seen = Atomics.load(done, 0); seen < workers.length; seen = Atomics.load(done, 0)) {
      if (Date.now() > deadline) throw new Error('export threads did not finish');
      Atomics.wait(done, 0, seen, 1000);
    }
    const got: ExportsManifest[] = parts.map((file) => {
      const part = JSON.parse(fs.readFileSync(file, 'utf8')) as ExportsManifest & { error?: string };
      fs.rmSync(file);
      if (part.error) throw new Error(`export thread failed: ${part.error}`);
      return part;
    });
    for (const w of workers) void w.terminate();
    const manifest: ExportsManifest = { built: built.toISOString(), databases: {}, timings_ms: {} };
    for (const db of databases) {
      const part = got.find((p) => p.databases[db.id])!;
      manifest.databases[db.id] = part.databases[db.id];
      manifest.timings_ms[db.id] = part.timings_ms[db.id];
    }
    // How long the last thread waited, after its exports, for its MMDBs' gzip forms.
    manifest.timings_ms.gzip_wait = Math.max(0, ...got.map((p) => p.timings_ms.gzip_wait ?? 0));
    writeExportsManifest(dir, manifest);
    return manifest;
  };
}
