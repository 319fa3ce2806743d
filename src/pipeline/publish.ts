// Publishing a build's exports: every artifact goes to the object store under
// <dataset id>/<build id>/<file>, the sources' NOTICE.txt beside them, and a publication
// (control/publications.ts) records each artifact's key, size and checksums. "Publish" means this and only this: making a build the one that
// answers lookups is "serving" it (index/builds.ts).

import fs from 'node:fs';
import path from 'node:path';
import type { ControlDb } from '../control/control-db.js';
import type { ExportsManifest } from '../exports/exporter.js';
import { type Publication, CSV_DIFF_FORMAT, latestPublication, recordPublication } from '../control/publications.js';
import { writeCsvDiffFile } from '../exports/csv-diff.js';
import { readJsonFile } from '../files.js';
import type { ObjectStore } from '../objects/object-store.js';
import type { Format } from '../exports/databases.js';
import { CSV_DIFFS_FILE, EXPORTS_MANIFEST, exportsDir } from '../data-dir.js';
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
  const diffs: Record<string, CsvDiffRecord> = {};
  for (const ex of Object.values(manifest.databases)) {
    // The version downloads served until now, for the diff from it (before this one is recorded).
    const before = latestPublication(db, ex.id, 'csvgz', false);
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
    const csv = ex.artifacts.csvgz?.full;
    if (csv && before !== null && before.buildId !== buildId) {
      const diff = await publishCsvDiff(db, store, dataDir, { buildId, day, now, datasetId: ex.id, csv, before });
      if (diff !== null) {
        diffs[ex.id] = diff;
        n++;
      }
    }
    // The sources' licences beside the files (a build from before notices has none).
    const notice = path.join(dir, NOTICE_FILE);
    if (fs.existsSync(notice)) await store.put(`${ex.id}/${buildId}/${NOTICE_FILE}`, notice);
  }
  if (Object.keys(diffs).length > 0) fs.writeFileSync(path.join(dir, CSV_DIFFS_FILE), JSON.stringify(diffs, null, 2) + '\n');
  return n;
}

/** What a published CSV diff takes from and to (diffs.json beside the exports, by dataset id). */
export interface CsvDiffRecord {
  /** The build whose CSV it applies to, and that file's SHA-256 as published (its checksum). */
  from_build: string;
  from_sha256: string;
  /** SHA-256 of the CSV text before and after (the diff's header names them too). */
  from_csv_sha256: string;
  to_csv_sha256: string;
  /** The diff file itself (gzip). */
  bytes: number;
  sha256: string;
}

/** The diffs a build's publication made, by dataset id ({} when none). */
export function readCsvDiffs(dataDir: string, buildId: string): Record<string, CsvDiffRecord> {
  return readJsonFile<Record<string, CsvDiffRecord>>(path.join(exportsDir(dataDir, buildId), CSV_DIFFS_FILE), {});
}

/**
 * The diff from the CSV downloads served before to this build's, published beside it. Made
 * only while the older file is still on disk (pruning keeps the build downloads serve until
 * the next is published); null when it is not.
 */
async function publishCsvDiff(
  db: ControlDb,
  store: ObjectStore,
  dataDir: string,
  o: { buildId: string; day: string; now: Date; datasetId: string; csv: { file: string; checksums: { sha256: string } }; before: Publication },
): Promise<CsvDiffRecord | null> {
  const older = path.join(exportsDir(dataDir, o.before.buildId), path.basename(o.before.key));
  if (!fs.existsSync(older)) return null;
  const name = `${o.datasetId}.csv.diff.gz`;
  const file = path.join(exportsDir(dataDir, o.buildId), name);
  const made = writeCsvDiffFile(older, path.join(exportsDir(dataDir, o.buildId), o.csv.file), o.csv.checksums.sha256, file);
  const key = `${o.datasetId}/${o.buildId}/${name}`;
  await store.put(key, file);
  recordPublication(db, {
    datasetId: o.datasetId,
    format: CSV_DIFF_FORMAT,
    sample: false,
    buildId: o.buildId,
    day: o.day,
    key,
    bytes: made.bytes,
    checksums: made.checksums,
    publishedAt: o.now.toISOString(),
  });
  return {
    from_build: o.before.buildId,
    from_sha256: o.before.checksums.sha256,
    from_csv_sha256: made.header.from.sha256,
    to_csv_sha256: made.header.to.sha256,
    bytes: made.bytes,
    sha256: made.checksums.sha256,
  };
}
