// Publications: which artifact of which build each dataset's downloads serve. A row is written
// when an artifact reaches the object store (pipeline/publish.ts); the newest of a dataset is
// what downloads, metadata and checksums answer with.

import type { ControlDb } from './control-db.js';
import type { Checksums } from '../exports/checksums.js';
import type { Format } from '../exports/databases.js';

/** A published CSV diff's format: the diff to a csvgz from the version published before it. */
export const CSV_DIFF_FORMAT = 'csvdiff';
/** A published range diff's format: the ranges whose answer changed, as JSON lines. */
export const RANGE_DIFF_FORMAT = 'rangediff';

export interface Publication {
  datasetId: string;
  format: Format | typeof CSV_DIFF_FORMAT | typeof RANGE_DIFF_FORMAT;
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
  format: Publication['format'];
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

/** Records one artifact as published (again: the newer row replaces the older). */
export function recordPublication(db: ControlDb, p: Publication): void {
  db.prepare(
    `INSERT INTO publications (dataset_id, format, sample, build_id, day, object_key, bytes, checksums, published_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (dataset_id, format, sample, build_id) DO UPDATE SET day = excluded.day, object_key = excluded.object_key,
       bytes = excluded.bytes, checksums = excluded.checksums, published_at = excluded.published_at`,
  ).run(p.datasetId, p.format, p.sample ? 1 : 0, p.buildId, p.day, p.key, p.bytes, JSON.stringify(p.checksums), p.publishedAt);
}

/** How many artifacts have ever been published. */
export function publicationCount(db: ControlDb): number {
  return (db.prepare('SELECT COUNT(*) AS n FROM publications').get() as { n: number }).n;
}

/** When anything was last published (null: never), for the metrics. */
export function lastPublishedAt(db: ControlDb): Date | null {
  const r = db.prepare('SELECT max(published_at) AS at FROM publications').get() as { at: string | null } | undefined;
  return r?.at ? new Date(r.at) : null;
}

/** The newest publication of a dataset's format (sample or full), or null. */
export function latestPublication(db: ControlDb, datasetId: string, format: string, sample: boolean): Publication | null {
  const r = db
    .prepare('SELECT * FROM publications WHERE dataset_id = ? AND format = ? AND sample = ? ORDER BY day DESC, published_at DESC LIMIT 1')
    .get(datasetId, format, sample ? 1 : 0) as Row | undefined;
  return r ? publicationOf(r) : null;
}

/** The builds whose artifacts downloads serve now: each dataset's, format's and sample's newest publication. */
export function servedPublicationBuilds(db: ControlDb): Set<string> {
  const rows = db.prepare('SELECT dataset_id, format, sample, build_id, day, published_at FROM publications').all() as Row[];
  const newest = new Map<string, Row>();
  for (const r of rows) {
    const k = `${r.dataset_id}\n${r.format}\n${r.sample}`;
    const seen = newest.get(k);
    if (!seen || r.day > seen.day || (r.day === seen.day && r.published_at > seen.published_at)) newest.set(k, r);
  }
  return new Set([...newest.values()].map((r) => r.build_id));
}

/** The object keys a build's publications put in the store. */
export function publicationKeysOf(db: ControlDb, buildId: string): string[] {
  return (db.prepare('SELECT object_key FROM publications WHERE build_id = ?').all(buildId) as { object_key: string }[]).map((r) => r.object_key);
}
