// Serialises resolved intervals and answer fragments into the index file format.

import { BUCKETS, layoutOf, writeHeader, type IndexCounts } from '../index/format.js';
import { TIER_COUNT } from '../model/projection.js';

export interface IndexInput {
  v4Starts: readonly number[];
  v4Records: readonly number[];
  v6Starts: readonly bigint[];
  v6Records: readonly number[];
  /** Fragment text of record r, tier t at r * TIER_COUNT + t. */
  fragments: readonly string[];
}

export interface IndexStats extends IndexCounts {
  distinctFragments: number;
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
  // Identical fragments are stored once.
  const offsets = new Map<string, number>();
  const pieces: Buffer[] = [];
  let blobBytes = 0;
  const refs = new Uint32Array(input.fragments.length * 2);
  input.fragments.forEach((text, i) => {
    let off = offsets.get(text);
    const bytes = Buffer.byteLength(text);
    if (off === undefined) {
      off = blobBytes;
      offsets.set(text, off);
      pieces.push(Buffer.from(text));
      blobBytes += bytes;
    }
    refs[2 * i] = off;
    refs[2 * i + 1] = bytes;
  });

  const counts: IndexCounts = {
    tiers: TIER_COUNT,
    v4: input.v4Starts.length,
    v6: input.v6Starts.length,
    records: input.fragments.length / TIER_COUNT,
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

  u32(l.fragments, refs.length).set(refs);
  let at = l.blob;
  for (const p of pieces) at += p.copy(buf, at);
  return { bytes: buf, stats: { ...counts, distinctFragments: pieces.length, bytes: l.total } };
}
