// Export thread: writes its share of the databases (see src/exports/parallel.ts), leaves
// its part of the manifest in a file, and raises the shared counter the build waits on.

import fs from 'node:fs';
import { workerData } from 'node:worker_threads';
import { DATABASES } from '../src/exports/databases.js';
import { writeDatabases } from '../src/exports/exporter.js';
import { exportInputOf, type SharedExportInput } from '../src/exports/parallel.js';

const { dir, input, built, ids, part, done } = workerData as {
  dir: string;
  input: SharedExportInput;
  built: string;
  ids: string[];
  part: string;
  done: Int32Array;
};

try {
  const manifest = writeDatabases(dir, exportInputOf(input), new Date(built), DATABASES.filter((d) => ids.includes(d.id)));
  fs.writeFileSync(part, JSON.stringify(manifest));
} catch (e) {
  fs.writeFileSync(part, JSON.stringify({ error: e instanceof Error ? (e.stack ?? e.message) : String(e) }));
} finally {
  Atomics.add(done, 0, 1);
  Atomics.notify(done, 0);
}
