// Publishing a build's exports: every artifact goes to the object store under
// <dataset id>/<build id>/<file>, and a publication row records its key, size and checksums.
// The newest publication of a dataset is what downloads, metadata and checksums serve.

import fs from 'node:fs';
import path from 'node:path';
import type { ControlDb } from '../accounts/control-db.js';
import { buildDir } from '../build/builds.js';
import { EXPORTS_DIR, EXPORTS_MANIFEST, type ExportsManifest } from '../exports/exporter.js';
import type { Checksums } from '../exports/checksums.js';
import type { ObjectStore } from '../store/object-store.js';
import type { Format } from './databases.js';

export interface Publication {
  datasetId: string;
  format: Format;
  sample: boolean;
  buildId: string;
  /** UTC date of the build (YYYY-MM-DD). */
  day: string;
  key: string;
  bytes: number;
  checksums: Checksums;
  publishedAt: string;
}

interface Row {
  dataset_id: string;
  format: Format;
  sample: number;
  build_id: string;
  day: string;
  object_key: string;
  bytes: number;
  checksums: string;
  published_at: string;
}

const publicationOf = (r: Row): Publication => ({
  datasetId: r.dataset_id,
  format: r.format,
  sample: r.sample === 1,
  buildId: r.build_id,
  day: r.day,
  key: r.object_key,
  bytes: r.bytes,
  checksums: JSON.parse(r.checksums) as Checksums,
  publishedAt: r.published_at,
});

export function readExportsManifest(dataDir: string, buildId: string): ExportsManifest {
  const file = path.join(buildDir(dataDir, buildId), EXPORTS_DIR, EXPORTS_MANIFEST);
  return JSON.parse(fs.readFileSync(file, 'utf8')) as ExportsManifest;
}

/** Puts every artifact of the build into the store and records it; returns the count. */
export async function publishExports(db: ControlDb, store: ObjectStore, dataDir: string, buildId: string, now = new Date()): Promise<number> {
  const manifest = readExportsManifest(dataDir, buildId);
  const day = manifest.built.slice(0, 10);
  const dir = path.join(buildDir(dataDir, buildId), EXPORTS_DIR);
  const insert = db.prepare(
    `INSERT INTO publications (dataset_id, format, sample, build_id, day, object_key, bytes, checksums, published_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (dataset_id, format, sample, build_id) DO UPDATE SET day = excluded.day, object_key = excluded.object_key,
       bytes = excluded.bytes, checksums = excluded.checksums, published_at = excluded.published_at`,
  );
  let n = 0;
  for (const ex of Object.values(manifest.databases)) {
    for (const [format, pair] of Object.entries(ex.artifacts)) {
      for (const [sample, art] of [[false, pair!.full], [true, pair!.sample]] as const) {
        if (art === null) continue; // too small for a sample
        const key = `${ex.id}/${buildId}/${art.file}`;
        await store.put(key, path.join(dir, art.file));
        insert.run(ex.id, format, sample ? 1 : 0, buildId, day, key, art.bytes, JSON.stringify(art.checksums), now.toISOString());
        n++;
      }
    }
  }
  return n;
}

/** The newest publication of a dataset's format (sample or full), or null. */
/** When anything was last published (null: never), for the metrics. */
export function lastPublishedAt(db: ControlDb): Date | null {
  const r = db.prepare('SELECT max(published_at) AS at FROM publications').get() as { at: string | null } | undefined;
  return r?.at ? new Date(r.at) : null;
}

export function latestPublication(db: ControlDb, datasetId: string, format: string, sample: boolean): Publication | null {
  const r = db
    .prepare('SELECT * FROM publications WHERE dataset_id = ? AND format = ? AND sample = ? ORDER BY day DESC, published_at DESC LIMIT 1')
    .get(datasetId, format, sample ? 1 : 0) as Row | undefined;
  return r ? publicationOf(r) : null;
}
