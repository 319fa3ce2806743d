// Builds kept on disk and in the object store: a bounded number (KEEP_BUILDS), so hourly source
// changes do not fill the disk. Never pruned: the serving build, the newest KEEP_BUILDS, the
// builds whose files downloads serve now (each dataset's newest publication), and the build the
// store's index pointer names (replicas read it). A pruned build leaves its directory, its
// objects in the store (the exports, their notice, the index replica) and nothing else: the
// publications' rows stay as the record of what was published when.

import fs from 'node:fs';
import path from 'node:path';
import type { ControlDb } from '../control/control-db.js';
import { publicationKeysOf, servedPublicationBuilds } from '../control/publications.js';
import { INDEX_FILE, MANIFEST_FILE, buildDir } from '../data-dir.js';
import { NOTICE_FILE } from '../exports/notices.js';
import { listBuilds, readCurrentBuildId } from '../index/builds.js';
import type { ObjectStore } from '../objects/object-store.js';

export interface PruneReport {
  removed: string[];
  kept: string[];
  /** Objects deleted from the store. */
  objects: number;
}

/** Which builds stay: the newest `keep`, the serving one, those downloads or replicas read. */
export function buildsToKeep(all: readonly string[], keep: number, pinned: Iterable<string | null>): Set<string> {
  const kept = new Set(all.slice(Math.max(0, all.length - keep)));
  for (const id of pinned) if (id !== null && all.includes(id)) kept.add(id);
  return kept;
}

/** Removes the builds past KEEP_BUILDS (and their objects); `replicaBuild`: the build the store's index pointer names. */
export async function pruneBuilds(db: ControlDb, store: ObjectStore, dataDir: string, keep: number, replicaBuild: string | null): Promise<PruneReport> {
  const all = listBuilds(dataDir);
  const kept = buildsToKeep(all, keep, [readCurrentBuildId(dataDir), replicaBuild, ...servedPublicationBuilds(db)]);
  const report: PruneReport = { removed: [], kept: [...kept], objects: 0 };
  for (const id of all) {
    if (kept.has(id)) continue;
    const keys = publicationKeysOf(db, id);
    const datasets = new Set(keys.map((k) => k.split('/')[0]));
    for (const key of [...keys, ...[...datasets].map((d) => `${d}/${id}/${NOTICE_FILE}`), `index/${id}/${INDEX_FILE}`, `index/${id}/${MANIFEST_FILE}`]) {
      await store.delete(key);
      report.objects++;
    }
    fs.rmSync(buildDir(dataDir, id), { recursive: true, force: true });
    report.removed.push(id);
  }
  return report;
}

/** The bytes a data directory's builds take (for the docs' sizing and the tests). */
export function buildsBytes(dataDir: string): number {
  let total = 0;
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else total += fs.statSync(p).size;
    }
  };
  for (const id of listBuilds(dataDir)) walk(buildDir(dataDir, id));
  return total;
}
