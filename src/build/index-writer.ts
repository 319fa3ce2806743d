// Serialises resolved intervals and answer fragments into the index file format.

import { BUCKETS, BUCKET_BITS, v6Key, V4_ROW, V6_KEY_ROW, layoutOf, recordRow, writeHeader, type IndexCounts } from '../index/format.js';
import { TIER_COUNT } from '../model/projection.js';

export interface IndexInput {
  v4Starts: readonly number[];
  v4Records: readonly number[];
  /** IPv6 interval starts, four big-endian 32-bit words each. */
  v6Words: Uint32Array<ArrayBufferLike>;
  v6Records: readonly number[];
  /** Per record: its flag mask. */
  masks: readonly number[];
  /**
   * Per record: the UTF-8 length of its details text, then the text and, per tier, the byte
   * length of its prefix shown: made when the encoder writes it, so that a million texts are
   * never held at once beside the index they are written into.
   */
  detailsBytes: (record: number) => number;
  details: (record: number) => { text: string; ends: readonly number[] };
}

export interface IndexStats extends IndexCounts {
  bytes: number;
}

/** Per bucket h: the last interval starting before h's first address (0 for h = 0). */
function bucketTable(count: number, startsBefore: (i: number, h: number) => boolean): Uint32Array {
  const table = new Uint32Array(BUCKETS + 1);
  let j = 0;
  for (let h = 0; h < BUCKETS; h++) {
    while (j + 1 < count && startsBefore(j + 1, h)) j++;
    table[h] = j;
  }
  table[BUCKETS] = count - 1;
  return table;
}

export function encodeIndex(input: IndexInput): { bytes: Buffer; stats: IndexStats } {
  const records = input.masks.length;
  let blobBytes = 0;
  for (let r = 0; r < records; r++) blobBytes += input.detailsBytes(r);
  const counts: IndexCounts = {
    tiers: TIER_COUNT,
    v4: input.v4Starts.length,
    v6: input.v6Records.length,
    records,
    blobBytes,
  };
  const l = layoutOf(counts);
  const buf = Buffer.alloc(l.total);
  writeHeader(buf, counts);
  const u32 = (at: number, n: number): Uint32Array => new Uint32Array(buf.buffer, buf.byteOffset + at, n);

  const v4Rows = u32(l.v4Rows, counts.v4 * V4_ROW);
  for (let i = 0; i < counts.v4; i++) {
    v4Rows[i * V4_ROW] = input.v4Starts[i];
    v4Rows[i * V4_ROW + 1] = input.v4Records[i];
  }
  const span = 2 ** (32 - BUCKET_BITS);
  u32(l.v4Bucket, BUCKETS + 1).set(bucketTable(counts.v4, (i, h) => v4Rows[i * V4_ROW] < h * span));

  const v6Keys = u32(l.v6Keys, counts.v6 * V6_KEY_ROW);
  const v6Starts = u32(l.v6Starts, counts.v6 * 4);
  v6Starts.set(input.v6Words.subarray(0, counts.v6 * 4));
  for (let i = 0; i < counts.v6; i++) {
    v6Keys[i * V6_KEY_ROW] = v6Key(v6Starts[i * 4], v6Starts[i * 4 + 1]);
    v6Keys[i * V6_KEY_ROW + 1] = input.v6Records[i];
  }
  u32(l.v6Bucket, BUCKETS + 1).set(bucketTable(counts.v6, (i, h) => v6Starts[i * 4] < h * span));

  const stride = recordRow(TIER_COUNT);
  const rows = u32(l.records, records * stride);
  const masks = buf.subarray(l.masks, l.masks + records);
  let at = 0;
  for (let r = 0; r < records; r++) {
    const k = r * stride;
    rows[k] = at;
    rows[k + 1] = input.masks[r];
    masks[r] = input.masks[r];
    const { text, ends } = input.details(r);
    for (let t = 0; t < TIER_COUNT; t++) rows[k + 2 + t] = ends[t];
    at += buf.write(text, l.blob + at, 'utf8');
  }
  return { bytes: buf, stats: { ...counts, bytes: l.total } };
}
