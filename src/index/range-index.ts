// Read side of the serving index: typed-array views over one (shared) buffer, no copies.
// A lookup is a bucket step plus a binary search over integers; the answer bytes are a
// precomputed fragment per record and tier.

import { BUCKETS, layoutOf, readHeader, type IndexCounts } from './format.js';

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
  private readonly fragments: Uint32Array;
  private readonly blob: Buffer;
  private readonly tiers: number;

  /**
   * Throws when the bytes are not a consistent index. `trusted` skips the O(n) checks for
   * bytes another thread already validated.
   */
  constructor(bytes: Uint8Array, options: { trusted?: boolean } = {}) {
    this.bytes = bytes;
    const c = readHeader(bytes);
    this.counts = c;
    this.tiers = c.tiers;
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
    this.fragments = new Uint32Array(buf, o + l.fragments, c.records * c.tiers * 2);
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
    const f = this.fragments;
    for (let i = 0; i < f.length; i += 2) {
      if (f[i] + f[i + 1] > c.blobBytes) throw new Error('answer fragment lies outside the blob');
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

  /** Copies the answer fragment of (record, tier) into out at pos; returns the new end. */
  copyFragment(record: number, tier: number, out: Buffer, pos: number): number {
    const f = (record * this.tiers + tier) * 2;
    const off = this.fragments[f];
    return pos + this.blob.copy(out, pos, off, off + this.fragments[f + 1]);
  }

  fragmentLength(record: number, tier: number): number {
    return this.fragments[(record * this.tiers + tier) * 2 + 1];
  }

  /** The fragment as text (cold paths and tests). */
  fragmentText(record: number, tier: number): string {
    const f = (record * this.tiers + tier) * 2;
    const off = this.fragments[f];
    return this.blob.toString('utf8', off, off + this.fragments[f + 1]);
  }
}
