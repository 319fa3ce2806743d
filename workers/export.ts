// Export thread: takes databases from the shared queue until none is left (see
// src/exports/parallel.ts), leaves its part of the manifest in a file, and raises the shared
// counter the build waits on.

import fs from 'node:fs';
import { workerData } from 'node:worker_threads';
import { DATABASES } from '../src/exports/databases.js';
import { writeDatabases, type ExportsManifest } from '../src/exports/exporter.js';
import { exportInputOf, type SharedExportInput } from '../src/exports/parallel.js';
import { gzipMmdbs } from '../src/exports/mmdb-gzip.js';

const { dir, input, built, ids, next, part, done } = workerData as {
  dir: string;
  input: SharedExportInput;
  built: string;
  /** The queue: database ids, costliest first; `next` counts those taken. */
  ids: string[];
  next: Int32Array;
  part: string;
  done: Int32Array;
};

try {
  const view = exportInputOf(input);
  const manifest: ExportsManifest = { built, databases: {}, timings_ms: {} };
  // Each database's MMDBs are gzipped on libuv's pool while this thread exports the next.
  const gzipping: Promise<number>[] = [];
  for (let k = Atomics.add(next, 0, 1); k < ids.length; k = Atomics.add(next, 0, 1)) {
    const one = writeDatabases(
      dir,
      view,
      new Date(built),
      DATABASES.filter((d) => d.id === ids[k]),
    );
    Object.assign(manifest.databases, one.databases);
    Object.assign(manifest.timings_ms, one.timings_ms);
    gzipping.push(gzipMmdbs(dir, one));
  }
  const t = performance.now();
  await Promise.all(gzipping);
  manifest.timings_ms.gzip_wait = Math.round(performance.now() - t);
  fs.writeFileSync(part, JSON.stringify(manifest));
} catch (e) {
  fs.writeFileSync(part, JSON.stringify({ error: e instanceof Error ? (e.stack ?? e.message) : String(e) }));
} finally {
  Atomics.add(done, 0, 1);
  Atomics.notify(done, 0);
}
