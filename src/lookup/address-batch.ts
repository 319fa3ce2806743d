// Resolving many addresses at once: parse them all, then search them all.
//
// A lookup is bound by memory latency (a bucket read, then a row read, each likely a cache
// miss). One address at a time, every lookup waits for its misses alone; searched together
// in stages (RangeIndex.lookupManyV4/V6), the misses of independent addresses are in flight
// at once. On a 1 M-range index that is about 1.6 times the lookups/s (see README, benchmarks).

import { IPV4, IPV6, NOT_ADDRESS, ParsedAddress, parseAddress, writeNormalisedParts, type AddressKind } from '../net/address.js';
import { isBogonV4, isBogonV6 } from '../net/bogons.js';
import type { RangeIndex } from '../index/range-index.js';

/** addDistinct()'s answer for a string the batch already holds. */
export const REPEATED = -1;

/** Slots of the repeat table: a power of two, at least twice the capacity. */
const tableSize = (capacity: number): number => 2 ** Math.ceil(Math.log2(2 * capacity + 1));

export class AddressBatch {
  /** Entries added since the last clear(). */
  count = 0;
  /** The input string of each entry added by addDistinct(). */
  readonly texts: string[];
  readonly kinds: Uint8Array;
  /** IPv4 value per entry (IPv4 and IPv4-mapped entries). */
  readonly v4: Uint32Array;
  /** Four words per entry (IPv6 entries). */
  readonly w: Uint32Array;
  /** Eight groups per entry, for the RFC 5952 text of IPv6 entries. */
  private readonly groups: Uint16Array;
  /** Record per entry, after resolve(). */
  readonly records: Uint32Array;
  private readonly p = new ParsedAddress();
  private readonly one = new Uint32Array(4);
  /** resolve()'s scratch: the non-bogon addresses of each family and their entries. */
  private readonly q4: Uint32Array;
  private readonly at4: Uint32Array;
  private readonly q6: Uint32Array;
  private readonly at6: Uint32Array;
  private readonly found: Uint32Array;
  /** addDistinct()'s open-addressing table: entry + 1 per slot, 0 for free; and each entry's hash. */
  private readonly slots: Int32Array;
  private readonly hashes: Uint32Array;

  constructor(readonly capacity: number) {
    this.texts = new Array<string>(capacity).fill('');
    this.slots = new Int32Array(tableSize(capacity));
    this.hashes = new Uint32Array(capacity);
    this.kinds = new Uint8Array(capacity);
    this.v4 = new Uint32Array(capacity);
    this.w = new Uint32Array(capacity * 4);
    this.groups = new Uint16Array(capacity * 8);
    this.records = new Uint32Array(capacity);
    this.q4 = new Uint32Array(capacity);
    this.at4 = new Uint32Array(capacity);
    this.q6 = new Uint32Array(capacity * 4);
    this.at6 = new Uint32Array(capacity);
    this.found = new Uint32Array(capacity);
  }

  clear(): void {
    if (this.count > 0) this.slots.fill(0);
    this.count = 0;
  }

  /**
   * add(), except that a string equal to one added before answers REPEATED and is not kept.
   * Equal strings parse to equal addresses, so a hash of the address finds the candidates:
   * much cheaper than hashing strings (a Set of them cost as much as parsing).
   */
  addDistinct(s: string): AddressKind | typeof REPEATED {
    const kind = this.add(s);
    if (kind === NOT_ADDRESS) return kind;
    const i = this.count - 1;
    const hash = (kind === IPV6 ? hashWords(this.w, i * 4) : Math.imul(this.v4[i] ^ kind, 0x9e3779b1)) >>> 0;
    const { slots, hashes, texts } = this;
    const mask = slots.length - 1;
    for (let at = hash >>> 16; ; at++) {
      const e = slots[at & mask];
      if (e === 0) {
        slots[at & mask] = i + 1;
        break;
      }
      if (hashes[e - 1] === hash && texts[e - 1] === s) {
        this.count = i;
        return REPEATED;
      }
    }
    hashes[i] = hash;
    texts[i] = s;
    return kind;
  }

  /** Parses s as the next entry; returns its kind. Non-addresses are not kept. */
  add(s: string): AddressKind {
    const p = this.p;
    const kind = parseAddress(s, 0, s.length, p);
    if (kind === NOT_ADDRESS) return kind;
    const i = this.count++;
    this.kinds[i] = kind;
    if (kind === IPV4) {
      this.v4[i] = p.v4;
      return kind;
    }
    this.v4[i] = p.v4;
    const w = this.w;
    const pw = p.w;
    w[i * 4] = pw[0];
    w[i * 4 + 1] = pw[1];
    w[i * 4 + 2] = pw[2];
    w[i * 4 + 3] = pw[3];
    const g = this.groups;
    const pg = p.groups;
    for (let k = 0; k < 8; k++) g[i * 8 + k] = pg[k];
    return kind;
  }

  /** Fills records[0, n) (default: every entry): record 0 (nothing known) for bogons. */
  resolve(index: RangeIndex, n = this.count): void {
    const kinds = this.kinds;
    const v4 = this.v4;
    const w = this.w;
    const one = this.one;
    const records = this.records;
    // Gather the non-bogons of each family, look them up together, scatter the records.
    const { q4, at4, q6, at6, found } = this;
    let n4 = 0;
    let n6 = 0;
    for (let i = 0; i < n; i++) {
      if (kinds[i] !== IPV6) {
        const a = v4[i];
        if (isBogonV4(a)) records[i] = 0;
        else {
          q4[n4] = a;
          at4[n4++] = i;
        }
        continue;
      }
      one[0] = w[i * 4];
      one[1] = w[i * 4 + 1];
      one[2] = w[i * 4 + 2];
      one[3] = w[i * 4 + 3];
      if (isBogonV6(one)) records[i] = 0;
      else {
        for (let k = 0; k < 4; k++) q6[n6 * 4 + k] = one[k];
        at6[n6++] = i;
      }
    }
    index.lookupManyV4(q4, n4, found);
    for (let j = 0; j < n4; j++) records[at4[j]] = found[j];
    index.lookupManyV6(q6, n6, found);
    for (let j = 0; j < n6; j++) records[at6[j]] = found[j];
  }

  /** Writes the normalised `ip` of entry i; returns the end. */
  writeNormalised(i: number, out: Uint8Array, pos: number): number {
    return writeNormalisedParts(out, pos, this.kinds[i] as AddressKind, this.v4[i], this.groups, i * 8);
  }
}

/** A 32-bit hash of the four words at w[at..at+3]. */
function hashWords(w: Uint32Array, at: number): number {
  let h = Math.imul(w[at] ^ 0x2c1b3c6d, 0x9e3779b1);
  h = Math.imul(h ^ w[at + 1], 0x85ebca6b);
  h = Math.imul(h ^ w[at + 2], 0xc2b2ae35);
  return Math.imul(h ^ w[at + 3], 0x9e3779b1);
}
