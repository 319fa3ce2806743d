// From overlapping feed ranges to disjoint intervals (DESIGN.md §3).
//
// Stage 1, per category: a range from a higher-priority feed wins; among equal priorities the
// most specific range; among equal ranges the newest last_seen, then the fuller detail, then
// the greater detail text (so the result never depends on feed order). A winning NOT_IN range
// (a source saying its network is not in the category) leaves the address out of it.
// Stage 2, per family: the eight categories' segments are merged into one interval list
// covering the whole address space, each interval naming a record (one detail per category).
//
// Addresses are numbers for IPv4 and bigints for IPv6: the code uses only <, ===, + and -,
// which mean the same on both, so one implementation serves both families.

import { CATEGORIES } from '../model/categories.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
// biome-ignore lint/suspicious/noExplicitAny: one body for number and bigint keys, which no union lets TypeScript compare
type Key = any; // number (IPv4) or bigint (IPv6); never mixed within one call

export interface RangeSet {
  start: Key[];
  end: Key[];
  /** The feed's priority: higher wins over any range of lower priority. */
  priority: number[];
  /** Order among equal ranges of equal priority: lower wins. */
  rank: number[];
  /** Detail id within the category (≥ 1), or NOT_IN. */
  detail: number[];
}

/** The detail id of a range its source says is not in the category. */
export const NOT_IN = -1;

export interface Segments {
  start: Key[];
  end: Key[];
  detail: number[];
}

/** Min-heap of range indices ordered by (-priority, size, rank): the top is the winner. */
class PriorityHeap {
  private readonly items: number[] = [];
  constructor(
    private readonly priority: number[],
    private readonly size: Key[],
    private readonly rank: number[],
  ) {}
  get length(): number {
    return this.items.length;
  }
  top(): number {
    return this.items[0];
  }
  private before(a: number, b: number): boolean {
    const pa = this.priority[a];
    const pb = this.priority[b];
    if (pa !== pb) return pa > pb;
    const sa = this.size[a];
    const sb = this.size[b];
    return sa < sb || (sa === sb && this.rank[a] < this.rank[b]);
  }
  push(x: number): void {
    const items = this.items;
    let i = items.length;
    items.push(x);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(x, items[parent])) break;
      items[i] = items[parent];
      i = parent;
    }
    items[i] = x;
  }
  pop(): void {
    const items = this.items;
    const last = items.pop()!;
    if (items.length === 0) return;
    let i = 0;
    const n = items.length;
    while (true) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && this.before(items[child + 1], items[child])) child++;
      if (!this.before(items[child], last)) break;
      items[i] = items[child];
      i = child;
    }
    items[i] = last;
  }
}

/** Stage 1: overlapping ranges of one category and family → disjoint winning segments. */
export function resolveOverlaps(ranges: RangeSet, one: Key): Segments {
  const n = ranges.start.length;
  const { start, end, detail } = ranges;
  const size: Key[] = new Array(n);
  for (let i = 0; i < n; i++) size[i] = end[i] - start[i];
  const order = Array.from({ length: n }, (_, i) => i);
  order.sort((a, b) => (start[a] < start[b] ? -1 : start[a] > start[b] ? 1 : 0));

  const out: Segments = { start: [], end: [], detail: [] };
  const heap = new PriorityHeap(ranges.priority, size, ranges.rank);
  let i = 0;
  let p: Key;
  while (true) {
    if (heap.length === 0) {
      if (i >= n) break;
      p = start[order[i]];
    }
    while (i < n && start[order[i]] === p) heap.push(order[i++]);
    while (heap.length > 0 && end[heap.top()] < p) heap.pop();
    if (heap.length === 0) continue;
    const top = heap.top();
    let next: Key = end[top] + one;
    if (i < n && start[order[i]] < next) next = start[order[i]];
    const d = detail[top];
    const last = out.detail.length - 1;
    if (d === NOT_IN) {
      // The winner says the addresses are not in the category: no segment.
    } else if (last >= 0 && out.detail[last] === d && out.end[last] + one === p) {
      out.end[last] = next - one;
    } else {
      out.start.push(p);
      out.end.push(next - one);
      out.detail.push(d);
    }
    p = next;
  }
  return out;
}

export interface Intervals {
  /** Interval i covers [start[i], start[i+1]) (the last one, to the end of the space). */
  start: Key[];
  record: number[];
}

/**
 * Stage 2: the categories' segments (indexed as CATEGORIES) → intervals covering the family
 * from 0 to `last`. Records are interned in `records` (key: the eight detail ids, 0 = not in
 * the category); record 0 is the empty one.
 */
export function combineCategories(perCategory: readonly Segments[], last: Key, zero: Key, one: Key, records: RecordTable): Intervals {
  const c = CATEGORIES.length;
  const at = new Array<number>(c).fill(0);
  const ids = new Array<number>(c).fill(0);
  const out: Intervals = { start: [], record: [] };
  let p: Key = zero;
  while (true) {
    let next: Key; // undefined = the end of the space
    for (let k = 0; k < c; k++) {
      const seg = perCategory[k];
      let j = at[k];
      while (j < seg.end.length && seg.end[j] < p) j++;
      at[k] = j;
      if (j < seg.end.length && seg.start[j] <= p) {
        ids[k] = seg.detail[j];
        const e = seg.end[j] + one;
        if (next === undefined || e < next) next = e;
      } else {
        ids[k] = 0;
        if (j < seg.end.length && (next === undefined || seg.start[j] < next)) next = seg.start[j];
      }
    }
    const rec = records.intern(ids);
    if (out.record.length === 0 || out.record[out.record.length - 1] !== rec) {
      out.start.push(p);
      out.record.push(rec);
    }
    if (next === undefined || next > last) break;
    p = next;
  }
  return out;
}

/**
 * Distinct combinations of per-category detail ids, numbered in order of first sight. An
 * open-addressing table of record numbers hashed over the ids (FNV-1a): a 1 M-range build
 * interns about 1.8 M intervals, and a joined string per interval as a Map key cost a fifth
 * of combining them.
 */
export class RecordTable {
  /** Flat: record r's detail id for category k at r * 8 + k. */
  readonly details: number[] = [];
  /** Slots hold record + 1 (0: empty); the table doubles at half full. */
  private slots = new Int32Array(1 << 16);

  constructor() {
    this.intern(new Array<number>(CATEGORIES.length).fill(0));
  }

  get count(): number {
    return this.details.length / CATEGORIES.length;
  }

  intern(ids: readonly number[]): number {
    const c = CATEGORIES.length;
    const mask = this.slots.length - 1;
    for (let s = hashIds(ids) & mask; ; s = (s + 1) & mask) {
      const held = this.slots[s];
      if (held === 0) {
        const rec = this.count;
        for (let k = 0; k < c; k++) this.details.push(ids[k]);
        this.slots[s] = rec + 1;
        if (2 * (rec + 1) > this.slots.length) this.grow();
        return rec;
      }
      if (this.sameIds(held - 1, ids)) return held - 1;
    }
  }

  private sameIds(rec: number, ids: readonly number[]): boolean {
    const c = CATEGORIES.length;
    for (let k = 0; k < c; k++) if (this.details[rec * c + k] !== ids[k]) return false;
    return true;
  }

  private grow(): void {
    const c = CATEGORIES.length;
    const slots = new Int32Array(this.slots.length * 2);
    const mask = slots.length - 1;
    const ids = new Array<number>(c);
    for (let rec = 0; rec < this.count; rec++) {
      for (let k = 0; k < c; k++) ids[k] = this.details[rec * c + k];
      let s = hashIds(ids) & mask;
      while (slots[s] !== 0) s = (s + 1) & mask;
      slots[s] = rec + 1;
    }
    this.slots = slots;
  }
}

/** FNV-1a over the ids' 32-bit values. */
function hashIds(ids: readonly number[]): number {
  let h = 0x811c9dc5;
  for (let k = 0; k < ids.length; k++) {
    const v = ids[k];
    h = Math.imul(h ^ (v & 0xff), 0x01000193);
    h = Math.imul(h ^ ((v >>> 8) & 0xff), 0x01000193);
    h = Math.imul(h ^ ((v >>> 16) & 0xff), 0x01000193);
    h = Math.imul(h ^ (v >>> 24), 0x01000193);
  }
  return h >>> 0;
}
