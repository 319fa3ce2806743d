// A database version's range diff: every range whose answer changed in the database's
// categories since the version before, one JSON object a line (category, first and last
// address, the detail before and after; null: not in the category), in address order per
// category. For programs that keep their own store of ranges rather than the CSV.

import zlib from 'node:zlib';
import type { RangeChange } from '../index/compare.js';
import type { Category } from '../model/categories.js';
import { ArtifactFile } from './artifact-file.js';

export function writeRangeDiffFile(changes: readonly RangeChange[], categories: readonly Category[], out: string) {
  const wanted = new Set<string>(categories);
  const lines: string[] = [];
  for (const c of changes) {
    if (wanted.has(c.category)) lines.push(JSON.stringify({ category: c.category, first: c.first, last: c.last, before: c.before, after: c.after }));
  }
  const w = new ArtifactFile(out);
  w.write(zlib.gzipSync(lines.length === 0 ? '' : `${lines.join('\n')}\n`, { level: 6 }));
  return { ...w.close(), ranges: lines.length };
}
