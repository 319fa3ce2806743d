// The gzip form of each MMDB a build exports (`<file>.mmdb.gz`), written on the export threads
// as each database is done, so publishing links it instead of compressing hundreds of
// megabytes after the build. zlib runs on libuv's thread pool: the compression of
// one database overlaps the export of the next.

import path from 'node:path';
import { gzippedPath, writeGzipped } from '../objects/local-store.js';
import type { ExportsManifest } from './exporter.js';

/** The gzip forms of every MMDB in the manifest's databases (full and sample), all at once. */
export async function gzipMmdbs(dir: string, manifest: Pick<ExportsManifest, 'databases'>): Promise<number> {
  const files: string[] = [];
  for (const db of Object.values(manifest.databases)) {
    const pair = db.artifacts.mmdb;
    if (!pair) continue;
    for (const art of [pair.full, pair.sample]) if (art) files.push(path.join(dir, art.file));
  }
  await Promise.all(files.map((f) => writeGzipped(f, gzippedPath(f))));
  return files.length;
}
