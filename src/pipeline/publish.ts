// Publishing a build's exports: every artifact goes to the object store under
// <dataset id>/<build id>/<file>, the sources' NOTICE.txt beside them, and a publication
// (control/publications.ts) records each artifact's key, size and checksums. "Publish" means this and only this: making a build the one that
// answers lookups is "serving" it (index/builds.ts).

import fs from 'node:fs';
import path from 'node:path';
import type { ControlDb } from '../control/control-db.js';
import type { ExportsManifest } from '../exports/exporter.js';
import type { Checksums } from '../exports/checksums.js';
import { type Publication, CSV_DIFF_FORMAT, RANGE_DIFF_FORMAT, latestPublication, recordPublication } from '../control/publications.js';
import { writeRangeDiffFile } from '../exports/range-diff.js';
import { DATABASES } from '../exports/databases.js';
import { CATEGORIES } from '../model/categories.js';
import { compareBuilds } from '../index/build-changes.js';
import type { RangeChange } from '../index/compare.js';
import { writeCsvDiffFile } from '../exports/csv-diff.js';
import { readJsonFile } from '../files.js';
import type { ObjectStore } from '../objects/object-store.js';
import type { Format } from '../exports/databases.js';
import { CSV_DIFFS_FILE, EXPORTS_MANIFEST, INDEX_FILE, buildDir, exportsDir } from '../data-dir.js';
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
  // Every range that changed since a build, for the range diffs: compared once per build before.
  const compared = new Map<string, RangeChange[]>();
  const changes = (from: string): RangeChange[] => {
    let all = compared.get(from);
    if (all === undefined) compared.set(from, (all = compareBuilds(dataDir, from, buildId, Number.POSITIVE_INFINITY).examples));
    return all;
  };
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
      const diff = await publishCsvDiff(db, store, dataDir, { buildId, day, now, datasetId: ex.id, csv, before, changes });
      if (diff !== null) {
        diffs[ex.id] = diff;
        n += 2;
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
  /** The range diff beside it (JSON lines, gzip): its size, checksum and how many ranges it lists. */
  ranges: { bytes: number; sha256: string; count: number };
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
  o: {
    buildId: string;
    day: string;
    now: Date;
    datasetId: string;
    csv: { file: string; checksums: { sha256: string } };
    before: Publication;
    changes: (from: string) => RangeChange[];
  },
): Promise<CsvDiffRecord | null> {
  const older = path.join(exportsDir(dataDir, o.before.buildId), path.basename(o.before.key));
  if (!fs.existsSync(older) || !fs.existsSync(path.join(buildDir(dataDir, o.before.buildId), INDEX_FILE))) return null;
  const exports = exportsDir(dataDir, o.buildId);
  /** A diff file written beside the exports, put in the store and recorded as published. */
  const publishDiff = async <T extends { bytes: number; checksums: Checksums }>(
    name: string,
    format: Publication['format'],
    write: (file: string) => T,
  ): Promise<T> => {
    const made = write(path.join(exports, name));
    const key = `${o.datasetId}/${o.buildId}/${name}`;
    await store.put(key, path.join(exports, name));
    recordPublication(db, {
      datasetId: o.datasetId,
      format,
      sample: false,
      buildId: o.buildId,
      day: o.day,
      key,
      bytes: made.bytes,
      checksums: made.checksums,
      publishedAt: o.now.toISOString(),
    });
    return made;
  };
  const categories = DATABASES.find((d) => d.id === o.datasetId)?.dependsOn?.categories ?? CATEGORIES;
  const ranges = await publishDiff(`${o.datasetId}.ranges.jsonl.gz`, RANGE_DIFF_FORMAT, (file) =>
    writeRangeDiffFile(o.changes(o.before.buildId), categories, file),
  );
  const made = await publishDiff(`${o.datasetId}.csv.diff.gz`, CSV_DIFF_FORMAT, (file) =>
    writeCsvDiffFile(older, path.join(exports, o.csv.file), o.csv.checksums.sha256, file),
  );
  return {
    from_build: o.before.buildId,
    from_sha256: o.before.checksums.sha256,
    from_csv_sha256: made.header.from.sha256,
    to_csv_sha256: made.header.to.sha256,
    bytes: made.bytes,
    sha256: made.checksums.sha256,
    ranges: { bytes: ranges.bytes, sha256: ranges.checksums.sha256, count: ranges.ranges },
  };
}
