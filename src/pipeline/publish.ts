// Publishing a build's exports: every artifact goes to the object store under
// <dataset id>/<build id>/<file>, the sources' NOTICE.txt beside them, and a publication
// (control/publications.ts) records each artifact's key, size and checksums. "Publish" means this and only this: making a build the one that
// answers lookups is "serving" it (index/builds.ts).

import fs from 'node:fs';
import path from 'node:path';
import type { ControlDb } from '../control/control-db.js';
import type { ExportsManifest } from '../exports/exporter.js';
import { recordPublication } from '../control/publications.js';
import type { ObjectStore } from '../objects/object-store.js';
import type { Format } from '../exports/databases.js';
import { EXPORTS_MANIFEST, exportsDir } from '../data-dir.js';
import { NOTICE_FILE } from '../exports/notices.js';

export function readExportsManifest(dataDir: string, buildId: string): ExportsManifest {
  const file = path.join(exportsDir(dataDir, buildId), EXPORTS_MANIFEST);
  return JSON.parse(fs.readFileSync(file, 'utf8')) as ExportsManifest;
}

/** Puts every artifact of the build into the store and records it; returns the count. */
export async function publishExports(db: ControlDb, store: ObjectStore, dataDir: string, buildId: string, now = new Date()): Promise<number> {
  const manifest = readExportsManifest(dataDir, buildId);
  const day = manifest.built.slice(0, 10);
  const dir = exportsDir(dataDir, buildId);
  let n = 0;
  for (const ex of Object.values(manifest.databases)) {
    for (const [format, pair] of Object.entries(ex.artifacts)) {
      for (const [sample, art] of [
        [false, pair!.full],
        [true, pair!.sample],
      ] as const) {
        if (art === null) continue; // too small for a sample
        const key = `${ex.id}/${buildId}/${art.file}`;
        await store.put(key, path.join(dir, art.file));
        recordPublication(db, {
          datasetId: ex.id,
          format: format as Format,
          sample,
          buildId,
          day,
          key,
          bytes: art.bytes,
          checksums: art.checksums,
          publishedAt: now.toISOString(),
        });
        n++;
      }
    }
    // The sources' licences beside the files (a build from before notices has none).
    const notice = path.join(dir, NOTICE_FILE);
    if (fs.existsSync(notice)) await store.put(`${ex.id}/${buildId}/${NOTICE_FILE}`, notice);
  }
  return n;
}
