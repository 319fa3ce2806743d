// File-system steps every part shares.

import fs from 'node:fs';
import path from 'node:path';

/**
 * mkdir -p, one level at a time: Node's recursive mkdir never returns for a path under a
 * directory that refuses new entries with ENOENT (DATA_DIR=/proc/nope spun at full CPU), so
 * each missing level is made on its own and the first refusal is the error.
 */
export function makeDirectory(dir: string, mode?: number): void {
  const missing: string[] = [];
  let at = path.resolve(dir);
  while (!fs.existsSync(at)) {
    missing.unshift(at);
    const parent = path.dirname(at);
    if (parent === at) break;
    at = parent;
  }
  for (const d of missing) {
    try {
      fs.mkdirSync(d, mode === undefined ? undefined : { mode });
    } catch (e) {
      // Another process made it between the look and the mkdir: as good as made here.
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
}

/**
 * Writes a whole file under a temporary name beside it, then renames it into place: a reader
 * sees the old file or the new one, never half of one.
 */
export function writeFileWhole(file: string, text: string | Uint8Array): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

/** A JSON file's value, or `missing` where there is no such file. */
export function readJsonFile<T>(file: string, missing: T): T {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as T;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return missing;
    throw e;
  }
}
