// What each build changed: just after a build is made, its index is compared with the build
// before it (compare.ts) and the result kept beside it (changes.json), so the console and
// GET /admin/v1/builds/{id}/changes read it without loading two indexes on a serving thread.
// Any two builds still on disk can be compared on demand (`ipsift builds compare`).

import fs from 'node:fs';
import path from 'node:path';
import { CHANGES_FILE, INDEX_FILE, buildDir } from '../data-dir.js';
import { readJsonFile, writeFileWhole } from '../files.js';
import { type BuildComparison, compareIndexes } from './compare.js';
import { listBuilds } from './builds.js';
import { RangeIndex } from './range-index.js';

/** Changed ranges kept as examples in changes.json. */
export const CHANGE_EXAMPLES = 100;

function readIndex(dataDir: string, id: string): RangeIndex {
  const bytes = fs.readFileSync(path.join(buildDir(dataDir, id), INDEX_FILE));
  // The views need 4-byte alignment: a large file's buffer is its own, but never assume it.
  return new RangeIndex(bytes.byteOffset % 4 === 0 ? bytes : Uint8Array.from(bytes), { trusted: true });
}

export function compareBuilds(dataDir: string, fromId: string, toId: string, examples = CHANGE_EXAMPLES): BuildComparison {
  return compareIndexes({ id: fromId, index: readIndex(dataDir, fromId) }, { id: toId, index: readIndex(dataDir, toId) }, examples);
}

/** The build made before `id` that is still on disk (null: none). */
export function buildBefore(dataDir: string, id: string): string | null {
  const builds = listBuilds(dataDir);
  const at = builds.indexOf(id);
  return at > 0 ? builds[at - 1] : null;
}

/** Compares a new build with the one before it and keeps the result beside it; null when it is the first. */
export function recordBuildChanges(dataDir: string, id: string): BuildComparison | null {
  const before = buildBefore(dataDir, id);
  if (before === null) return null;
  const changes = compareBuilds(dataDir, before, id);
  writeFileWhole(path.join(buildDir(dataDir, id), CHANGES_FILE), JSON.stringify(changes) + '\n');
  return changes;
}

/** What a build changed, as recorded when it was made (null: the first build, or made by an older ipsift). */
export function readBuildChanges(dataDir: string, id: string): BuildComparison | null {
  return readJsonFile<BuildComparison | null>(path.join(buildDir(dataDir, id), CHANGES_FILE), null);
}
