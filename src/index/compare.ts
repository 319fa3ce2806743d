// Two builds compared by what they answer: both indexes walked side by side, every stretch of
// addresses where a category's answer differs (gained, lost, or its detail changed) counted as
// one range, adjacent stretches with the same before and after joined. An operator reads it as
// "what did this build change"; it is also the range diff of the change history.

import { CATEGORIES, type Category } from '../model/categories.js';
import { type Family, formatAddress } from '../net/network.js';
import type { RangeIndex } from './range-index.js';

/** One changed range of one category: its answer before and after (null: not in the category). */
export interface RangeChange {
  category: Category;
  first: string;
  last: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

export interface CategoryChanges {
  /** Ranges whose answer changed: gained + lost + changed. */
  ranges: number;
  gained: number;
  lost: number;
  /** In the category before and after, with another detail. */
  changed: number;
  /** Addresses in those ranges, as decimal text (IPv6 counts overflow a double). */
  ipv4_addresses: string;
  ipv6_addresses: string;
}

export interface BuildComparison {
  from: string;
  to: string;
  /** Ranges changed in every category together. */
  ranges: number;
  categories: Record<Category, CategoryChanges>;
  /** The first changed ranges in address order (at most `examples`); `more`: how many were left out. */
  examples: RangeChange[];
  more: number;
}

/** Each record's category answers as text (null: not in it), parsed once per record. */
class RecordAnswers {
  private readonly parsed = new Map<number, (string | null)[]>();
  constructor(private readonly index: RangeIndex) {}
  of(record: number): (string | null)[] {
    let answers = this.parsed.get(record);
    if (answers === undefined) {
      const { mask, text: details } = this.index.recordContent(record);
      const all = details === '' ? {} : (JSON.parse(`{${details.slice(1)}}`) as Record<string, unknown>);
      answers = CATEGORIES.map((c, k) => ((mask & (1 << k)) === 0 ? null : JSON.stringify(all[c] ?? {})));
      this.parsed.set(record, answers);
    }
    return answers;
  }
}

/** A category's run of changed addresses being extended: joined while before and after stay the same. */
interface OpenRun {
  family: Family;
  first: bigint;
  last: bigint;
  before: string | null;
  after: string | null;
}

export function compareIndexes(from: { id: string; index: RangeIndex }, to: { id: string; index: RangeIndex }, examples = 100): BuildComparison {
  const a = from.index;
  const b = to.index;
  const answersA = new RecordAnswers(a);
  const answersB = new RecordAnswers(b);
  const counts = Object.fromEntries(CATEGORIES.map((c) => [c, { ranges: 0, gained: 0, lost: 0, changed: 0, v4: 0n, v6: 0n }])) as Record<
    Category,
    { ranges: number; gained: number; lost: number; changed: number; v4: bigint; v6: bigint }
  >;
  const shown: RangeChange[] = [];
  let more = 0;
  const open: (OpenRun | null)[] = CATEGORIES.map(() => null);

  const close = (k: number): void => {
    const run = open[k];
    if (run === null) return;
    open[k] = null;
    const c = counts[CATEGORIES[k]];
    c.ranges++;
    if (run.before === null) c.gained++;
    else if (run.after === null) c.lost++;
    else c.changed++;
    const size = run.last - run.first + 1n;
    if (run.family === 4) c.v4 += size;
    else c.v6 += size;
    if (shown.length < examples)
      shown.push({
        category: CATEGORIES[k],
        first: formatAddress(run.family, run.first),
        last: formatAddress(run.family, run.last),
        before: run.before === null ? null : (JSON.parse(run.before) as Record<string, unknown>),
        after: run.after === null ? null : (JSON.parse(run.after) as Record<string, unknown>),
      });
    else more++;
  };

  /** One family: both interval lists merged into pieces on which neither changes its record. */
  const walk = (family: Family, na: number, nb: number, at: (index: RangeIndex, i: number) => { start: bigint; record: number }, lastAddress: bigint): void => {
    let i = 0;
    let j = 0;
    let start = 0n;
    while (i < na && j < nb) {
      const ra = at(a, i).record;
      const rb = at(b, j).record;
      const nextA = i + 1 < na ? at(a, i + 1).start : lastAddress + 1n;
      const nextB = j + 1 < nb ? at(b, j + 1).start : lastAddress + 1n;
      const end = (nextA < nextB ? nextA : nextB) - 1n;
      if (!a.sameContent(ra, b, rb)) {
        const before = answersA.of(ra);
        const after = answersB.of(rb);
        for (let k = 0; k < CATEGORIES.length; k++) {
          if (before[k] === after[k]) {
            close(k);
            continue;
          }
          const run = open[k];
          if (run !== null && run.family === family && run.last + 1n === start && run.before === before[k] && run.after === after[k]) run.last = end;
          else {
            close(k);
            open[k] = { family, first: start, last: end, before: before[k], after: after[k] };
          }
        }
      } else for (let k = 0; k < CATEGORIES.length; k++) close(k);
      start = end + 1n;
      if (nextA === start) i++;
      if (nextB === start) j++;
    }
    for (let k = 0; k < CATEGORIES.length; k++) close(k);
  };
  walk(
    4,
    a.counts.v4,
    b.counts.v4,
    (x, i) => {
      const { start, record } = x.v4Interval(i);
      return { start: BigInt(start), record };
    },
    0xffffffffn,
  );
  walk(6, a.counts.v6, b.counts.v6, (x, i) => x.v6Interval(i), (1n << 128n) - 1n);

  const categories = Object.fromEntries(
    CATEGORIES.map((c) => {
      const { v4, v6, ...n } = counts[c];
      return [c, { ...n, ipv4_addresses: v4.toString(), ipv6_addresses: v6.toString() }];
    }),
  ) as Record<Category, CategoryChanges>;
  const ranges = CATEGORIES.reduce((sum, c) => sum + categories[c].ranges, 0);
  return { from: from.id, to: to.id, ranges, categories, examples: shown, more };
}
