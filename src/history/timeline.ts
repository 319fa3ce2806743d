// What every address answered over time: the timeline of answers, kept as builds serve, so a
// lookup can be asked as of a past time after the builds themselves are pruned.
//
// The address space is cut into segments at every boundary any served build had; each segment
// keeps its versions, oldest first: (the span from which it answered so, the content it
// answered), a span being a build's time of serving, numbered in order. A content is a record as the index holds it (the category mask, every
// category's details text and where each tier's prefix of it ends), kept once however many
// segments and versions share it. A new serving build extends the timeline by one walk of its
// index against the segments' latest contents: unchanged stretches add nothing, changed ones
// a version. Asking is a binary search for the segment and one for the version.
//
// Versions older than the retention are dropped but for the last one before it, which still
// answers at the retention's edge. Spans say which build served from when (as_of).

import type { RangeIndex } from '../index/range-index.js';

/** A record's answer, as the index holds it. */
export interface Content {
  mask: number;
  /** Every category's `,"<cat>":{…}` in order (the index's details text). */
  text: string;
  /** Per tier, the UTF-8 length of the text's prefix it shows. */
  ends: number[];
}

/** One family's segments: starts ascending (the first at the family's first address), and each one's versions. */
interface Family {
  starts: bigint[];
  /** Per segment, flat: span number, content id, span number, content id, … oldest first. */
  versions: number[][];
}

/** A build that served from a time (Unix seconds), as the serving log records it. */
export interface Span {
  build: string;
  from: number;
  /** Its build was pruned before the timeline recorded it: what it answered is not known. */
  lost?: true;
}

export interface TimelineDocument {
  format: 1;
  /** Answers before this time (Unix seconds) are no longer kept. */
  kept_from: number;
  /** The number of spans[0] (numbers count every span ever recorded, forgotten ones too). */
  first_span: number;
  spans: Span[];
  contents: [number, string, number[]][];
  v4: { starts: string[]; versions: number[][] };
  v6: { starts: string[]; versions: number[][] };
}

/** Where a reader of the change feed stands: after this range of this span. */
export interface ChangeCursor {
  span: number;
  family: 4 | 6;
  start: bigint;
}

/** A range whose answer changed when a span began. */
export interface RangeChangeOf {
  span: number;
  build: string;
  /** When the span began (Unix seconds). */
  from: number;
  family: 4 | 6;
  first: bigint;
  last: bigint;
  beforeId: number;
  afterId: number;
  before: Content | null;
  after: Content;
}

const cursorOf = (c: RangeChangeOf): ChangeCursor => ({ span: c.span, family: c.family, start: c.first });

/** What the timeline answered for one address at one time, or why it cannot say. */
export type AsOf = { content: Content; span: Span } | { outside: string };

const newFamily = (): Family => ({ starts: [], versions: [] });
/** The versions of a segment not yet made: one array, so the pieces of a first build join. */
const NONE: number[] = [];

export class Timeline {
  keptFrom = 0;
  spans: Span[] = [];
  /** The number of spans[0]: versions name spans by number, which forgetting does not change. */
  private firstSpan = 0;
  private contents: Content[] = [];
  private readonly ids = new Map<string, number>();
  private v4: Family = newFamily();
  private v6: Family = newFamily();

  /** The latest span (null: nothing served yet). */
  get last(): Span | null {
    return this.spans[this.spans.length - 1] ?? null;
  }

  get segments(): number {
    return this.v4.starts.length + this.v6.starts.length;
  }

  get versionCount(): number {
    let n = 0;
    for (const f of [this.v4, this.v6]) for (const v of f.versions) n += v.length / 2;
    return n;
  }

  private intern(c: Content): number {
    const key = `${c.mask}\u0000${c.text}`;
    let id = this.ids.get(key);
    if (id === undefined) {
      id = this.contents.length;
      this.contents.push(c);
      this.ids.set(key, id);
    }
    return id;
  }

  /**
   * Adds what a build answers from `from` (Unix seconds) on: its index walked against each
   * segment's latest content, segments split where its intervals start.
   */
  extend(build: string, from: number, index: RangeIndex): void {
    if (this.last !== null && from < this.last.from) throw new Error(`a span from ${from} cannot follow one from ${this.last.from}`);
    const content = new Map<number, number>();
    const contentOf = (record: number): number => {
      let id = content.get(record);
      if (id === undefined) content.set(record, (id = this.intern(index.recordContent(record))));
      return id;
    };
    const span = this.firstSpan + this.spans.length;
    this.v4 = this.extendFamily(this.v4, span, index.counts.v4, (i) => {
      const { start, record } = index.v4Interval(i);
      return { start: BigInt(start), content: contentOf(record) };
    });
    this.v6 = this.extendFamily(this.v6, span, index.counts.v6, (i) => {
      const { start, record } = index.v6Interval(i);
      return { start, content: contentOf(record) };
    });
    if (this.spans.length === 0) this.keptFrom = from;
    this.spans.push({ build, from });
  }

  /** A span whose build was gone before it was recorded: asked about, it answers that it is not known. */
  lose(build: string, from: number): void {
    if (this.last !== null && from < this.last.from) throw new Error(`a span from ${from} cannot follow one from ${this.last.from}`);
    this.spans.push({ build, from, lost: true });
  }

  /** One family's segments and the index's intervals merged; a piece changed gets a version of span `span`. */
  private extendFamily(f: Family, span: number, count: number, interval: (i: number) => { start: bigint; content: number }): Family {
    const out = newFamily();
    // The piece being extended: where its versions came from and what it appended, so the
    // next piece with the same history and the same change joins it.
    let lastSource: number[] | null = null;
    let lastAdded = -1;
    let i = 0;
    let j = 0;
    let next = interval(0);
    while (j < count) {
      const here = next;
      next = j + 1 < count ? interval(j + 1) : { start: -1n, content: -1 };
      // The segments this interval covers, from the one holding its start.
      while (i + 1 < f.starts.length && f.starts[i + 1] <= here.start) i++;
      let start = here.start;
      for (;;) {
        const versions = f.versions[i] ?? NONE;
        const latest = versions.length ? versions[versions.length - 1] : -1;
        const added = latest === here.content ? -1 : here.content;
        if (!(versions === lastSource && added === lastAdded)) {
          out.starts.push(start);
          out.versions.push(added === -1 ? versions : [...versions, span, added]);
          lastSource = versions;
          lastAdded = added;
        }
        // The next segment starts inside this interval: it is walked too.
        if (i + 1 < f.starts.length && (next.start === -1n || f.starts[i + 1] < next.start)) {
          i++;
          start = f.starts[i];
        } else break;
      }
      j++;
    }
    return out;
  }

  /** Drops versions before `cutoff` (Unix seconds) but the last one before it, and the spans that ended before it. */
  forgetBefore(cutoff: number): void {
    if (cutoff <= this.keptFrom) return;
    let first = 0;
    while (first + 1 < this.spans.length && this.spans[first + 1].from <= cutoff) first++;
    // The span serving at the cutoff stays: versions of it or before, but the last, go.
    const kept = this.firstSpan + first;
    for (const f of [this.v4, this.v6]) {
      for (let s = 0; s < f.versions.length; s++) {
        const v = f.versions[s];
        let k = 0;
        while (k + 2 < v.length && v[k + 2] <= kept) k += 2;
        if (k > 0) f.versions[s] = v.slice(k);
      }
    }
    this.spans = this.spans.slice(first);
    this.firstSpan = kept;
    this.keptFrom = cutoff;
  }

  /** The span serving at `at` (Unix seconds): the last one from at or before it (null: none yet). */
  spanAt(at: number): Span | null {
    const i = this.spanIndexAt(at);
    return i < 0 ? null : this.spans[i];
  }

  /** spanAt's position in spans (-1: none). */
  private spanIndexAt(at: number): number {
    let span = -1;
    for (let a = 0, b = this.spans.length - 1; a <= b; ) {
      const mid = (a + b) >>> 1;
      if (this.spans[mid].from <= at) {
        span = mid;
        a = mid + 1;
      } else b = mid - 1;
    }
    return span;
  }

  /** What `address` of `family` answered at `at` (Unix seconds), or why that is not known. */
  asOf(family: 4 | 6, address: bigint, at: number): AsOf {
    if (this.spans.length === 0) return { outside: 'no build has served here yet' };
    if (at < this.keptFrom) return { outside: `answers are kept from ${iso(this.keptFrom)}` };
    const f = family === 4 ? this.v4 : this.v6;
    let lo = 0;
    let hi = f.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (f.starts[mid] <= address) lo = mid;
      else hi = mid - 1;
    }
    // at ≥ keptFrom, the first span's start or later: some span serves then.
    const span = Math.max(0, this.spanIndexAt(at));
    const served = this.spans[span];
    const number = this.firstSpan + span;
    const v = f.versions[lo] ?? [];
    let k = -1;
    for (let a = 0, b = v.length / 2 - 1; a <= b; ) {
      const mid = (a + b) >>> 1;
      if (v[mid * 2] <= number) {
        k = mid;
        a = mid + 1;
      } else b = mid - 1;
    }
    if (served.lost) return { outside: `build ${served.build}, which served from ${iso(served.from)}, was pruned before its answers were recorded` };
    // Every segment has a version from the first span on; none only before it.
    if (k < 0) return { outside: `answers are kept from ${iso(this.keptFrom)}` };
    return { content: this.contents[v[k * 2 + 1]], span: served };
  }

  /** The number of the first span kept and of the last (first > last: none). */
  get spanNumbers(): { first: number; last: number } {
    return { first: this.firstSpan, last: this.firstSpan + this.spans.length - 1 };
  }

  /**
   * The ranges whose answer changed when a span began, in order of span, family and address,
   * after `after` (null: from the first change kept), at most `limit`: each with the contents
   * before (null: none recorded) and after. Adjacent segments that changed alike are one
   * range, so a range once listed is never listed again however later builds split it.
   */
  changesSince(after: ChangeCursor | null, limit: number): { changes: RangeChangeOf[]; next: ChangeCursor | null } {
    const out: RangeChangeOf[] = [];
    const last = this.firstSpan + this.spans.length - 1;
    // The first span's versions are what it answered, not changes: the feed begins after it.
    let span = after === null ? this.firstSpan + 1 : Math.max(after.span, this.firstSpan + 1);
    for (; span <= last; span++) {
      const served = this.spans[span - this.firstSpan];
      if (served.lost) continue;
      for (const family of [4, 6] as const) {
        if (after !== null && span === after.span && family < after.family) continue;
        const f = family === 4 ? this.v4 : this.v6;
        const end = family === 4 ? 1n << 32n : 1n << 128n;
        // The range being joined (a holder: the closure below and the loop both change it).
        const run: { open: RangeChangeOf | null } = { open: null };
        const close = (): boolean => {
          const done = run.open;
          if (done === null) return false;
          run.open = null;
          if (after !== null && span === after.span && family === after.family && done.first <= after.start) return false;
          out.push(done);
          return out.length >= limit;
        };
        for (let s = 0; s < f.starts.length; s++) {
          const v = f.versions[s];
          let k = -1;
          for (let i = 0; i < v.length; i += 2) if (v[i] === span) k = i;
          const segEnd = s + 1 < f.starts.length ? f.starts[s + 1] - 1n : end - 1n;
          if (k < 0) {
            if (close()) return { changes: out, next: cursorOf(out[out.length - 1]) };
            continue;
          }
          const before = k >= 2 ? v[k - 1] : -1;
          const now = v[k + 1];
          const cur = run.open;
          if (cur !== null && cur.beforeId === before && cur.afterId === now && cur.last + 1n === f.starts[s]) {
            cur.last = segEnd;
            continue;
          }
          if (close()) return { changes: out, next: cursorOf(out[out.length - 1]) };
          run.open = {
            span,
            build: served.build,
            from: served.from,
            family,
            first: f.starts[s],
            last: segEnd,
            beforeId: before,
            afterId: now,
            before: before < 0 ? null : this.contents[before],
            after: this.contents[now],
          };
        }
        if (close()) return { changes: out, next: cursorOf(out[out.length - 1]) };
      }
    }
    return { changes: out, next: out.length ? cursorOf(out[out.length - 1]) : after };
  }

  toDocument(): TimelineDocument {
    // Contents no version names any more are left out, the rest numbered again.
    const used = new Map<number, number>();
    const contents: TimelineDocument['contents'] = [];
    const renumber = (f: Family): number[][] =>
      f.versions.map((v) => {
        const out = v.slice();
        for (let k = 1; k < out.length; k += 2) {
          let id = used.get(out[k]);
          if (id === undefined) {
            id = contents.length;
            used.set(out[k], id);
            const c = this.contents[out[k]];
            contents.push([c.mask, c.text, c.ends]);
          }
          out[k] = id;
        }
        return out;
      });
    const v4 = renumber(this.v4);
    const v6 = renumber(this.v6);
    const hex = (f: Family): string[] => f.starts.map((s) => s.toString(16));
    return {
      format: 1,
      kept_from: this.keptFrom,
      first_span: this.firstSpan,
      spans: this.spans,
      contents,
      v4: { starts: hex(this.v4), versions: v4 },
      v6: { starts: hex(this.v6), versions: v6 },
    };
  }

  static fromDocument(d: TimelineDocument): Timeline {
    const t = new Timeline();
    t.keptFrom = d.kept_from;
    t.firstSpan = d.first_span;
    t.spans = d.spans;
    for (const [mask, text, ends] of d.contents) t.intern({ mask, text, ends });
    const family = (x: TimelineDocument['v4']): Family => ({ starts: x.starts.map((s) => BigInt(`0x${s}`)), versions: x.versions });
    t.v4 = family(d.v4);
    t.v6 = family(d.v6);
    return t;
  }
}

const iso = (seconds: number): string => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
