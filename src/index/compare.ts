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
  /** Runs open in `open`: none, the common case, and a piece with the same answer closes nothing. */
  let opened = 0;

  const close = (k: number): void => {
    const run = open[k];
    if (run === null) return;
    open[k] = null;
    opened--;
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

  const closeAll = (): void => {
    if (opened === 0) return;
    for (let k = 0; k < CATEGORIES.length; k++) close(k);
  };

  /**
   * One family: both interval lists merged into pieces on which neither changes its record.
   * Addresses become BigInt only on a piece whose answer differs: a build that changed little
   * is walked on the typed arrays alone.
   */
  const walk = (family: Family, lastAddress: bigint): void => {
    const na = family === 4 ? a.counts.v4 : a.counts.v6;
    const nb = family === 4 ? b.counts.v4 : b.counts.v6;
    let i = 0;
    let j = 0;
    while (i < na && j < nb) {
      const hasNextA = i + 1 < na;
      const hasNextB = j + 1 < nb;
      const order = hasNextA && hasNextB ? a.compareStarts(family, i + 1, b, j + 1) : 0;
      const stepA = hasNextA && (!hasNextB || order <= 0);
      const stepB = hasNextB && (!hasNextA || order >= 0);
      const ra = a.intervalRecord(family, i);
      const rb = b.intervalRecord(family, j);
      if (!a.sameContent(ra, b, rb)) {
        const start = a.compareStarts(family, i, b, j) >= 0 ? a.intervalStart(family, i) : b.intervalStart(family, j);
        const end = stepA ? a.intervalStart(family, i + 1) - 1n : stepB ? b.intervalStart(family, j + 1) - 1n : lastAddress;
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
            opened++;
          }
        }
      } else closeAll();
      if (!stepA && !stepB) break;
      if (stepA) i++;
      if (stepB) j++;
    }
    closeAll();
  };
  if (!a.sameTables(b)) {
    walk(4, 0xffffffffn);
    walk(6, (1n << 128n) - 1n);
  }

  const categories = Object.fromEntries(
    CATEGORIES.map((c) => {
      const { v4, v6, ...n } = counts[c];
      return [c, { ...n, ipv4_addresses: v4.toString(), ipv6_addresses: v6.toString() }];
    }),
  ) as Record<Category, CategoryChanges>;
  const ranges = CATEGORIES.reduce((sum, c) => sum + categories[c].ranges, 0);
  return { from: from.id, to: to.id, ranges, categories, examples: shown, more };
}
