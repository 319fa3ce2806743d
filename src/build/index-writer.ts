// Serialises resolved intervals and answer fragments into the index file format.

import { BUCKETS, layoutOf, writeHeader, type IndexCounts } from '../index/format.js';
import { TIER_COUNT } from '../model/projection.js';

export interface IndexInput {
  v4Starts: readonly number[];
  v4Records: readonly number[];
  v6Starts: readonly bigint[];
  v6Records: readonly number[];
  /** Per record: flag mask, details text, and per tier the byte length of its prefix shown. */
  masks: readonly number[];
  details: readonly string[];
  ends: readonly (readonly number[])[];
}

export interface IndexStats extends IndexCounts {
  bytes: number;
}

/** Interval holding each (h << shift): the last i whose start <= that point. */
function bucketTable(count: number, startAtOrBefore: (i: number, h: number) => boolean): Uint32Array {
  const table = new Uint32Array(BUCKETS + 1);
  let j = 0;
  for (let h = 0; h < BUCKETS; h++) {
    while (j + 1 < count && startAtOrBefore(j + 1, h)) j++;
    table[h] = j;
  }
  table[BUCKETS] = count - 1;
  return table;
}

export function encodeIndex(input: IndexInput): { bytes: Buffer; stats: IndexStats } {
  const records = input.details.length;
  let blobBytes = 0;
  for (const text of input.details) blobBytes += Buffer.byteLength(text);
  const counts: IndexCounts = {
    tiers: TIER_COUNT,
    v4: input.v4Starts.length,
    v6: input.v6Starts.length,
    records,
    blobBytes,
  };
  const l = layoutOf(counts);
  const buf = Buffer.alloc(l.total);
  writeHeader(buf, counts);
  const u32 = (at: number, n: number): Uint32Array => new Uint32Array(buf.buffer, buf.byteOffset + at, n);

  const v4Starts = u32(l.v4Starts, counts.v4);
  v4Starts.set(input.v4Starts);
  u32(l.v4Records, counts.v4).set(input.v4Records);
  u32(l.v4Bucket, BUCKETS + 1).set(bucketTable(counts.v4, (i, h) => v4Starts[i] <= h * 65536));

  const v6Starts = u32(l.v6Starts, counts.v6 * 4);
  input.v6Starts.forEach((v, i) => {
    v6Starts[4 * i] = Number(v >> 96n);
    v6Starts[4 * i + 1] = Number((v >> 64n) & 0xffffffffn);
    v6Starts[4 * i + 2] = Number((v >> 32n) & 0xffffffffn);
    v6Starts[4 * i + 3] = Number(v & 0xffffffffn);
  });
  u32(l.v6Records, counts.v6).set(input.v6Records);
  u32(l.v6Bucket, BUCKETS + 1).set(
    bucketTable(counts.v6, (i, h) => {
      const w0 = v6Starts[4 * i];
      const b = h * 65536;
      return w0 < b || (w0 === b && v6Starts[4 * i + 1] === 0 && v6Starts[4 * i + 2] === 0 && v6Starts[4 * i + 3] === 0);
    }),
  );

  const stride = 1 + TIER_COUNT;
  const refs = u32(l.records, records * stride);
  const masks = new Uint8Array(buf.buffer, buf.byteOffset + l.masks, records);
  let at = 0;
  for (let r = 0; r < records; r++) {
    refs[r * stride] = at;
    for (let t = 0; t < TIER_COUNT; t++) refs[r * stride + 1 + t] = input.ends[r][t];
    masks[r] = input.masks[r];
    at += buf.write(input.details[r], l.blob + at, 'utf8');
  }
  return { bytes: buf, stats: { ...counts, bytes: l.total } };
}
