// Read side of the serving index: typed-array views over one (shared) buffer, no copies.
// A lookup is a bucket step plus a binary search over integers; an answer is two
// precomputed pieces: the flags text of (tier, mask) and the tier's prefix of the record's
// details text.

import { CATEGORIES } from '../model/categories.js';
import { TIER_COUNT, flagsText } from '../model/projection.js';
import { BUCKETS, BUCKET_BITS, V4_ROW, V6_KEY_ROW, layoutOf, v6Key, readHeader, recordRow, type IndexCounts } from './format.js';

const BUCKET_SHIFT = 32 - BUCKET_BITS;

const MASKS = 1 << CATEGORIES.length;

/** Flags texts for every (tier, mask): small, made once per thread. */
class FlagTable {
  readonly bytes: Buffer;
  readonly start = new Uint32Array(TIER_COUNT * MASKS);
  readonly end = new Uint32Array(TIER_COUNT * MASKS);
  constructor() {
    const texts: string[] = [];
    let at = 0;
    for (let t = 0; t < TIER_COUNT; t++) {
      for (let m = 0; m < MASKS; m++) {
        const text = flagsText(t, m);
        texts.push(text);
        this.start[t * MASKS + m] = at;
        at += text.length;
        this.end[t * MASKS + m] = at;
      }
    }
    this.bytes = Buffer.from(texts.join(''), 'latin1');
  }
}
let flagTable: FlagTable | null = null;

export class RangeIndex {
  readonly counts: IndexCounts;
  /** The whole file's bytes (a view over shared memory when loaded for serving). */
  readonly bytes: Uint8Array;
  private readonly v4Bucket: Uint32Array;
  private readonly v4Rows: Uint32Array;
  private readonly v6Bucket: Uint32Array;
  private readonly v6Keys: Uint32Array;
  private readonly v6Starts: Uint32Array;
  private readonly records: Uint32Array;
  private readonly blob: Buffer;
  private readonly stride: number;
  private readonly flags: FlagTable;

  /**
   * Throws when the bytes are not a consistent index. `trusted` skips the O(n) checks for
   * bytes another thread already validated.
   */
  constructor(bytes: Uint8Array, options: { trusted?: boolean } = {}) {
    this.bytes = bytes;
    const c = readHeader(bytes);
    this.counts = c;
    if (c.tiers !== TIER_COUNT) throw new Error(`index has ${c.tiers} tiers, this version serves ${TIER_COUNT}`);
    this.stride = recordRow(c.tiers);
    this.flags = flagTable ??= new FlagTable();
    const l = layoutOf(c);
    const buf = bytes.buffer;
    const o = bytes.byteOffset;
    if (o % 4 !== 0) throw new Error('index buffer must be 4-byte aligned');
    this.v4Bucket = new Uint32Array(buf, o + l.v4Bucket, BUCKETS + 1);
    this.v4Rows = new Uint32Array(buf, o + l.v4Rows, c.v4 * V4_ROW);
    this.v6Bucket = new Uint32Array(buf, o + l.v6Bucket, BUCKETS + 1);
    this.v6Keys = new Uint32Array(buf, o + l.v6Keys, c.v6 * V6_KEY_ROW);
    this.v6Starts = new Uint32Array(buf, o + l.v6Starts, c.v6 * 4);
    this.records = new Uint32Array(buf, o + l.records, c.records * this.stride);
    this.blob = Buffer.from(buf, o + l.blob, c.blobBytes);
    if (!options.trusted) this.checkShape();
  }

  /** Cheap structural checks so a damaged file fails at load, not on a lookup. */
  private checkShape(): void {
    const c = this.counts;
    const v4 = this.v4Rows;
    const v6 = this.v6Starts;
    if (v4[0] !== 0) throw new Error('IPv4 intervals do not start at 0.0.0.0');
    if (v6[0] !== 0 || v6[1] !== 0 || v6[2] !== 0 || v6[3] !== 0) throw new Error('IPv6 intervals do not start at ::');
    if (this.v4Bucket[BUCKETS] !== c.v4 - 1 || this.v6Bucket[BUCKETS] !== c.v6 - 1) throw new Error('bucket table is damaged');
    for (let h = 0; h < BUCKETS; h++) {
      if (this.v4Bucket[h] > this.v4Bucket[h + 1] || this.v6Bucket[h] > this.v6Bucket[h + 1]) throw new Error('bucket table is damaged');
    }
    for (let i = 1; i < v4.length; i += V4_ROW) if (v4[i] >= c.records) throw new Error('IPv4 interval names a missing record');
    const keys = this.v6Keys;
    for (let i = 0; i < c.v6; i++) {
      if (keys[i * V6_KEY_ROW + 1] >= c.records) throw new Error('IPv6 interval names a missing record');
      if (keys[i * V6_KEY_ROW] !== v6Key(v6[i * 4], v6[i * 4 + 1])) throw new Error('IPv6 search key is damaged');
    }
    const r = this.records;
    for (let i = 0; i < r.length; i += this.stride) {
      if (r[i + 1] >= MASKS) throw new Error('record has an unknown category');
      for (let t = 2; t < this.stride; t++) {
        if (r[i] + r[i + t] > c.blobBytes) throw new Error('record details lie outside the blob');
      }
    }
  }

  /** Record of the interval holding IPv4 address `a` (unsigned). */
  lookupV4(a: number): number {
    const rows = this.v4Rows;
    const h = a >>> BUCKET_SHIFT;
    let lo = this.v4Bucket[h];
    let hi = this.v4Bucket[h + 1];
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (rows[mid * V4_ROW] <= a) lo = mid;
      else hi = mid - 1;
    }
    return rows[lo * V4_ROW + 1];
  }

  /** Record of the interval holding the IPv6 address in words w[0..3] (big-endian order). */
  lookupV6(w: Uint32Array): number {
    const keys = this.v6Keys;
    const w0 = w[0];
    const w1 = w[1];
    const k = v6Key(w0, w1);
    const h = w0 >>> BUCKET_SHIFT;
    const first = this.v6Bucket[h];
    let lo = first;
    let hi = this.v6Bucket[h + 1];
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (keys[mid * V6_KEY_ROW] <= k) lo = mid;
      else hi = mid - 1;
    }
    if (lo !== first && keys[lo * V6_KEY_ROW] === k) {
      // Intervals past `first` start inside this bucket. Keys cannot order those whose key
      // equals the address's; their full starts can (those with smaller keys start before
      // the address, so "starts at or before" stays monotonic over (first, lo]).
      hi = lo;
      lo = first;
      while (lo < hi) {
        const mid = (lo + hi + 1) >>> 1;
        if (this.startsAfter(mid, w)) hi = mid - 1;
        else lo = mid;
      }
    }
    return keys[lo * V6_KEY_ROW + 1];
  }

  /** Whether interval i of IPv6 starts after the address w. */
  private startsAfter(i: number, w: Uint32Array): boolean {
    const s = this.v6Starts;
    const k = i * 4;
    for (let j = 0; j < 4; j++) if (s[k + j] !== w[j]) return s[k + j] > w[j];
    return false;
  }

  /** Writes the answer after `{"ip":"…"` for (record, tier) into out at pos; returns the end. */
  copyFragment(record: number, tier: number, out: Buffer, pos: number): number {
    const f = this.flags;
    const r = record * this.stride;
    const k = tier * MASKS + this.records[r + 1];
    pos = copyBytes(f.bytes, f.start[k], f.end[k], out, pos);
    const len = this.records[r + 2 + tier];
    if (len !== 0) {
      const off = this.records[r];
      pos = copyBytes(this.blob, off, off + len, out, pos);
    }
    out[pos] = 125; // }
    return pos + 1;
  }

  fragmentLength(record: number, tier: number): number {
    const r = record * this.stride;
    const k = tier * MASKS + this.records[r + 1];
    return this.flags.end[k] - this.flags.start[k] + this.records[r + 2 + tier] + 1;
  }

  /**
   * Reads one byte per cache line of the (record, tier) details, so that a later
   * copyFragment finds them in cache. Called for a whole batch in a tight loop, the misses
   * of different records overlap instead of stalling each copy in turn. Returns a value
   * only so the reads are not optimised away.
   */
  touchFragment(record: number, tier: number): number {
    const r = record * this.stride;
    const off = this.records[r];
    const end = off + this.records[r + 2 + tier];
    const blob = this.blob;
    let sum = 0;
    for (let at = off; at < end; at += 64) sum += blob[at];
    return sum;
  }
}

/**
 * Up to this many bytes a loop beats a native copy (~40 ns: a view and a call; the loop costs
 * ~1.7 ns a byte).
 */
const LOOP_COPY_MAX = 24;

/**
 * Copies src[start, end) into out at pos; returns the end. TypedArray#set on a fresh view
 * measured ~40 % faster than Buffer#copy, which validates its arguments in three layers of JS.
 */
function copyBytes(src: Uint8Array, start: number, end: number, out: Uint8Array, pos: number): number {
  const n = end - start;
  if (n > LOOP_COPY_MAX) {
    out.set(new Uint8Array(src.buffer, src.byteOffset + start, n), pos);
    return pos + n;
  }
  for (let i = start; i < end; i++) out[pos++] = src[i];
  return pos;
}
