// Read side of the serving index: typed-array views over one (shared) buffer, no copies.
// A lookup is a bucket step plus a binary search over integers; an answer is two
// precomputed pieces: the flags text of (tier, mask) and the tier's prefix of the record's
// details text.

import { CATEGORIES } from '../model/categories.js';
import { TIER_COUNT, flagsText } from '../model/projection.js';
import { BUCKETS, layoutOf, readHeader, type IndexCounts } from './format.js';

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
  private readonly v4Starts: Uint32Array;
  private readonly v4Records: Uint32Array;
  private readonly v6Bucket: Uint32Array;
  private readonly v6Starts: Uint32Array;
  private readonly v6Records: Uint32Array;
  private readonly records: Uint32Array;
  private readonly masks: Uint8Array;
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
    this.stride = 1 + c.tiers;
    this.flags = flagTable ??= new FlagTable();
    const l = layoutOf(c);
    const buf = bytes.buffer;
    const o = bytes.byteOffset;
    if (o % 4 !== 0) throw new Error('index buffer must be 4-byte aligned');
    this.v4Bucket = new Uint32Array(buf, o + l.v4Bucket, BUCKETS + 1);
    this.v4Starts = new Uint32Array(buf, o + l.v4Starts, c.v4);
    this.v4Records = new Uint32Array(buf, o + l.v4Records, c.v4);
    this.v6Bucket = new Uint32Array(buf, o + l.v6Bucket, BUCKETS + 1);
    this.v6Starts = new Uint32Array(buf, o + l.v6Starts, c.v6 * 4);
    this.v6Records = new Uint32Array(buf, o + l.v6Records, c.v6);
    this.records = new Uint32Array(buf, o + l.records, c.records * this.stride);
    this.masks = new Uint8Array(buf, o + l.masks, c.records);
    this.blob = Buffer.from(buf, o + l.blob, c.blobBytes);
    if (!options.trusted) this.checkShape();
  }

  /** Cheap structural checks so a damaged file fails at load, not on a lookup. */
  private checkShape(): void {
    const c = this.counts;
    if (this.v4Starts[0] !== 0) throw new Error('IPv4 intervals do not start at 0.0.0.0');
    if (this.v6Starts[0] !== 0 || this.v6Starts[1] !== 0 || this.v6Starts[2] !== 0 || this.v6Starts[3] !== 0) {
      throw new Error('IPv6 intervals do not start at ::');
    }
    if (this.v4Bucket[BUCKETS] !== c.v4 - 1 || this.v6Bucket[BUCKETS] !== c.v6 - 1) throw new Error('bucket table is damaged');
    for (let i = 0; i < c.v4; i++) if (this.v4Records[i] >= c.records) throw new Error('IPv4 interval names a missing record');
    for (let i = 0; i < c.v6; i++) if (this.v6Records[i] >= c.records) throw new Error('IPv6 interval names a missing record');
    const r = this.records;
    for (let i = 0; i < r.length; i += this.stride) {
      for (let t = 1; t < this.stride; t++) {
        if (r[i] + r[i + t] > c.blobBytes) throw new Error('record details lie outside the blob');
      }
    }
  }

  /** Record of the interval holding IPv4 address `a` (unsigned). */
  lookupV4(a: number): number {
    const starts = this.v4Starts;
    const h = a >>> 16;
    let lo = this.v4Bucket[h];
    let hi = this.v4Bucket[h + 1];
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (starts[mid] <= a) lo = mid;
      else hi = mid - 1;
    }
    return this.v4Records[lo];
  }

  /** Record of the interval holding the IPv6 address in words w[0..3] (big-endian order). */
  lookupV6(w: Uint32Array): number {
    const starts = this.v6Starts;
    const w0 = w[0];
    const w1 = w[1];
    const w2 = w[2];
    const w3 = w[3];
    const h = w0 >>> 16;
    let lo = this.v6Bucket[h];
    let hi = this.v6Bucket[h + 1];
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      const k = mid * 4;
      // starts[mid] <= w ?
      const s0 = starts[k];
      let le: boolean;
      if (s0 !== w0) le = s0 < w0;
      else {
        const s1 = starts[k + 1];
        if (s1 !== w1) le = s1 < w1;
        else {
          const s2 = starts[k + 2];
          le = s2 !== w2 ? s2 < w2 : starts[k + 3] <= w3;
        }
      }
      if (le) lo = mid;
      else hi = mid - 1;
    }
    return this.v6Records[lo];
  }

  /** Writes the answer after `{"ip":"…"` for (record, tier) into out at pos; returns the end. */
  copyFragment(record: number, tier: number, out: Buffer, pos: number): number {
    const f = this.flags;
    const k = tier * MASKS + this.masks[record];
    pos += f.bytes.copy(out, pos, f.start[k], f.end[k]);
    const r = record * this.stride;
    const len = this.records[r + 1 + tier];
    if (len !== 0) {
      const off = this.records[r];
      pos += this.blob.copy(out, pos, off, off + len);
    }
    out[pos] = 125; // }
    return pos + 1;
  }

  fragmentLength(record: number, tier: number): number {
    const k = tier * MASKS + this.masks[record];
    return this.flags.end[k] - this.flags.start[k] + this.records[record * this.stride + 1 + tier] + 1;
  }
}
