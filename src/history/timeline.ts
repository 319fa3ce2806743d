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

import crypto from 'node:crypto';
import type { RangeIndex } from '../index/range-index.js';

/** A record's answer, as the index holds it. */
export interface Content {
  mask: number;
  /** Every category's `,"<cat>":{…}` in order (the index's details text). */
  text: string;
  /** Per tier, the UTF-8 length of the text's prefix it shows. */
  ends: number[];
}

/**
 * One family's segments, flat: each segment's first address (one 32-bit word for IPv4, four
 * for IPv6, most significant first) and its versions, `(span number, content id)` pairs
 * oldest first, at vdata[voff[s] .. voff[s + 1]). Typed arrays, not an array per segment: a
 * million segments are 20 MB here, where arrays and BigInts were ten times that.
 */
class FamilyTable {
  constructor(
    readonly words: 1 | 4,
    readonly starts: Uint32Array,
    readonly voff: Uint32Array,
    readonly vdata: Uint32Array,
  ) {}

  static empty(words: 1 | 4): FamilyTable {
    return new FamilyTable(words, new Uint32Array(0), new Uint32Array(1), new Uint32Array(0));
  }

  get count(): number {
    return this.voff.length - 1;
  }

  start(s: number): bigint {
    if (this.words === 1) return BigInt(this.starts[s]);
    const w = this.starts;
    const k = s * 4;
    return (BigInt(w[k]) << 96n) | (BigInt(w[k + 1]) << 64n) | (BigInt(w[k + 2]) << 32n) | BigInt(w[k + 3]);
  }

  /** The last segment starting at or before `address`. */
  find(address: bigint): number {
    let lo = 0;
    let hi = this.count - 1;
    if (this.words === 1) {
      const a = Number(address);
      while (lo < hi) {
        const mid = (lo + hi + 1) >>> 1;
        if (this.starts[mid] <= a) lo = mid;
        else hi = mid - 1;
      }
      return lo;
    }
    const q = [Number(address >> 96n), Number((address >> 64n) & 0xffffffffn), Number((address >> 32n) & 0xffffffffn), Number(address & 0xffffffffn)];
    const w = this.starts;
    const atOrBelow = (s: number): boolean => {
      for (let k = 0; k < 4; k++) {
        const d = w[s * 4 + k] - q[k];
        if (d !== 0) return d < 0;
      }
      return true;
    };
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (atOrBelow(mid)) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}

/** A Uint32Array that grows: the columns of a million segments without a million boxed numbers. */
class Words {
  private data = new Uint32Array(1024);
  length = 0;

  push(v: number): void {
    if (this.length === this.data.length) {
      const more = new Uint32Array(this.data.length * 2);
      more.set(this.data);
      this.data = more;
    }
    this.data[this.length++] = v;
  }

  /** The words pushed, in an array of their own size (the one grown is let go). */
  done(): Uint32Array {
    return this.data.slice(0, this.length);
  }
}

/** Growing columns of a FamilyTable being made. */
class FamilyBuilder {
  private readonly starts = new Words();
  private readonly voff = new Words();
  private readonly vdata = new Words();
  constructor(private readonly words: 1 | 4) {
    this.voff.push(0);
  }

  /** A segment from `start` with `from`'s versions (segment of `table`; -1: none), then (span, added) unless added is -1. */
  push(start: bigint, table: FamilyTable, from: number, span: number, added: number): void {
    if (this.words === 1) this.starts.push(Number(start));
    else {
      this.starts.push(Number(start >> 96n));
      this.starts.push(Number((start >> 64n) & 0xffffffffn));
      this.starts.push(Number((start >> 32n) & 0xffffffffn));
      this.starts.push(Number(start & 0xffffffffn));
    }
    if (from >= 0) for (let k = table.voff[from]; k < table.voff[from + 1]; k++) this.vdata.push(table.vdata[k]);
    if (added !== -1) {
      this.vdata.push(span);
      this.vdata.push(added);
    }
    this.voff.push(this.vdata.length);
  }

  done(): FamilyTable {
    return new FamilyTable(this.words, this.starts.done(), this.voff.done(), this.vdata.done());
  }
}

/** A content a build added, still in its index: copied from there when the timeline is written. */
interface IndexedContent {
  mask: number;
  bytes: Uint8Array;
  ends: number[];
}

const digest = (bytes: Uint8Array): string => crypto.createHash('sha1').update(bytes).digest('base64');

/**
 * The contents versions name, by id: those read from a file stay in its bytes, those a build
 * adds in its index's, decoded only when asked for. Extending finds a content's id by its
 * mask and a digest of its text: a million texts are never held as strings.
 */
class ContentTable {
  /** Per category mask, each text's digest's id; made on first use (only extending needs it). */
  private ids: Map<string, number>[] | null = null;
  private readonly added: IndexedContent[] = [];

  constructor(
    private readonly tiers: number,
    private readonly masks: Uint32Array = new Uint32Array(0),
    private readonly ends: Uint32Array = new Uint32Array(0),
    private readonly textOff: Uint32Array = new Uint32Array(1),
    private readonly blob: Buffer = Buffer.alloc(0),
  ) {}

  get count(): number {
    return this.masks.length + this.added.length;
  }

  private bytesOf(id: number): Uint8Array {
    return id < this.masks.length ? this.blob.subarray(this.textOff[id], this.textOff[id + 1]) : this.added[id - this.masks.length].bytes;
  }

  maskOf(id: number): number {
    return id < this.masks.length ? this.masks[id] : this.added[id - this.masks.length].mask;
  }

  endsOf(id: number): ArrayLike<number> {
    return id < this.masks.length ? this.ends.subarray(id * this.tiers, (id + 1) * this.tiers) : this.added[id - this.masks.length].ends;
  }

  get(id: number): Content {
    const b = this.bytesOf(id);
    return { mask: this.maskOf(id), text: Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8'), ends: Array.from(this.endsOf(id)) };
  }

  textBytes(id: number): number {
    return this.bytesOf(id).byteLength;
  }

  /** Writes a content's text (UTF-8) at `pos`; returns the bytes written. */
  writeText(id: number, out: Buffer, pos: number): number {
    const bytes = this.bytesOf(id);
    out.set(bytes, pos);
    return bytes.byteLength;
  }

  intern(c: IndexedContent): number {
    if (this.ids === null) {
      this.ids = [];
      for (let id = 0; id < this.count; id++) (this.ids[this.maskOf(id)] ??= new Map()).set(digest(this.bytesOf(id)), id);
    }
    const ids = (this.ids[c.mask] ??= new Map());
    const key = digest(c.bytes);
    let id = ids.get(key);
    if (id === undefined) {
      id = this.count;
      this.added.push(c);
      ids.set(key, id);
    }
    return id;
  }
}

/** A build that served from a time (Unix seconds), as the serving log records it. */
export interface Span {
  build: string;
  from: number;
  /** Its build was pruned before the timeline recorded it: what it answered is not known. */
  lost?: true;
}

/** The file's header, JSON before the typed sections (timeline-file.ts writes it). */
interface TimelineHeader {
  format: 2;
  kept_from: number;
  first_span: number;
  spans: Span[];
  tiers: number;
  /** Lengths, in 32-bit words, of the sections in order; the last section is the contents' text, in bytes. */
  sections: number[];
}

const MAGIC = Buffer.from('IPSIFTTL');

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

export class Timeline {
  keptFrom = 0;
  spans: Span[] = [];
  /** The number of spans[0]: versions name spans by number, which forgetting does not change. */
  private firstSpan = 0;
  private contents: ContentTable;
  private v4 = FamilyTable.empty(1);
  private v6 = FamilyTable.empty(4);

  constructor(tiers = 0) {
    this.contents = new ContentTable(tiers);
  }

  /** The latest span (null: nothing served yet). */
  get last(): Span | null {
    return this.spans[this.spans.length - 1] ?? null;
  }

  get segments(): number {
    return this.v4.count + this.v6.count;
  }

  get versionCount(): number {
    return (this.v4.vdata.length + this.v6.vdata.length) / 2;
  }

  /**
   * Adds what a build answers from `from` (Unix seconds) on: its index walked against each
   * segment's latest content, segments split where its intervals start.
   */
  extend(build: string, from: number, index: RangeIndex): void {
    if (this.last !== null && from < this.last.from) throw new Error(`a span from ${from} cannot follow one from ${this.last.from}`);
    if (this.contents.count === 0) this.contents = new ContentTable(index.recordBytes(0).ends.length);
    // Each record's content id, once per record (-1: not yet asked).
    const content = new Int32Array(index.counts.records).fill(-1);
    const contentOf = (record: number): number => {
      let id = content[record];
      if (id < 0) content[record] = id = this.contents.intern(index.recordBytes(record));
      return id;
    };
    const span = this.firstSpan + this.spans.length;
    this.v4 = extendFamily(this.v4, span, index.counts.v4, (i) => ({ start: index.intervalStart(4, i), content: contentOf(index.intervalRecord(4, i)) }));
    this.v6 = extendFamily(this.v6, span, index.counts.v6, (i) => ({ start: index.intervalStart(6, i), content: contentOf(index.intervalRecord(6, i)) }));
    if (this.spans.length === 0) this.keptFrom = from;
    this.spans.push({ build, from });
  }

  /** A span whose build was gone before it was recorded: asked about, it answers that it is not known. */
  lose(build: string, from: number): void {
    if (this.last !== null && from < this.last.from) throw new Error(`a span from ${from} cannot follow one from ${this.last.from}`);
    this.spans.push({ build, from, lost: true });
  }

  /** Drops versions before `cutoff` (Unix seconds) but the last one before it, and the spans that ended before it. */
  forgetBefore(cutoff: number): void {
    if (cutoff <= this.keptFrom) return;
    let first = 0;
    while (first + 1 < this.spans.length && this.spans[first + 1].from <= cutoff) first++;
    // The span serving at the cutoff stays: versions of it or before, but the last, go.
    const kept = this.firstSpan + first;
    const forget = (f: FamilyTable): FamilyTable => {
      const voff = new Uint32Array(f.voff.length);
      const vdata = new Words();
      for (let s = 0; s < f.count; s++) {
        let k = f.voff[s];
        const end = f.voff[s + 1];
        while (k + 2 < end && f.vdata[k + 2] <= kept) k += 2;
        for (; k < end; k++) vdata.push(f.vdata[k]);
        voff[s + 1] = vdata.length;
      }
      return new FamilyTable(f.words, f.starts, voff, vdata.done());
    };
    this.v4 = forget(this.v4);
    this.v6 = forget(this.v6);
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
    const s = f.find(address);
    // at ≥ keptFrom, the first span's start or later: some span serves then.
    const span = Math.max(0, this.spanIndexAt(at));
    const served = this.spans[span];
    const number = this.firstSpan + span;
    const base = f.voff[s];
    let k = -1;
    for (let a = 0, b = (f.voff[s + 1] - base) / 2 - 1; a <= b; ) {
      const mid = (a + b) >>> 1;
      if (f.vdata[base + mid * 2] <= number) {
        k = mid;
        a = mid + 1;
      } else b = mid - 1;
    }
    if (served.lost) return { outside: `build ${served.build}, which served from ${iso(served.from)}, was pruned before its answers were recorded` };
    // Every segment has a version from the first span on; none only before it.
    if (k < 0) return { outside: `answers are kept from ${iso(this.keptFrom)}` };
    return { content: this.contents.get(f.vdata[base + k * 2 + 1]), span: served };
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
        for (let s = 0; s < f.count; s++) {
          let k = -1;
          for (let i = f.voff[s]; i < f.voff[s + 1]; i += 2) if (f.vdata[i] === span) k = i;
          if (k < 0) {
            if (close()) return { changes: out, next: cursorOf(out[out.length - 1]) };
            continue;
          }
          const first = f.start(s);
          const segEnd = s + 1 < f.count ? f.start(s + 1) - 1n : end - 1n;
          const before = k - 2 >= f.voff[s] ? f.vdata[k - 1] : -1;
          const now = f.vdata[k + 1];
          const cur = run.open;
          if (cur !== null && cur.beforeId === before && cur.afterId === now && cur.last + 1n === first) {
            cur.last = segEnd;
            continue;
          }
          if (close()) return { changes: out, next: cursorOf(out[out.length - 1]) };
          run.open = {
            span,
            build: served.build,
            from: served.from,
            family,
            first,
            last: segEnd,
            beforeId: before,
            afterId: now,
            before: before < 0 ? null : this.contents.get(before),
            after: this.contents.get(now),
          };
        }
        if (close()) return { changes: out, next: cursorOf(out[out.length - 1]) };
      }
    }
    return { changes: out, next: out.length ? cursorOf(out[out.length - 1]) : after };
  }

  /**
   * The timeline as one file: MAGIC, the header's length and the header (JSON), then each
   * section as 32-bit words, the contents' text last. Contents no version names any more are
   * left out, the rest numbered again.
   */
  toBytes(): Buffer {
    const renumbered = new Map<number, number>();
    const order: number[] = [];
    const renumber = (f: FamilyTable): Uint32Array => {
      const v = Uint32Array.from(f.vdata);
      for (let k = 1; k < v.length; k += 2) {
        let id = renumbered.get(v[k]);
        if (id === undefined) {
          id = order.length;
          renumbered.set(v[k], id);
          order.push(v[k]);
        }
        v[k] = id;
      }
      return v;
    };
    const v4data = renumber(this.v4);
    const v6data = renumber(this.v6);
    const tiers = order.length === 0 ? 0 : this.contents.endsOf(order[0]).length;
    const masks = new Uint32Array(order.length);
    const ends = new Uint32Array(order.length * tiers);
    const textOff = new Uint32Array(order.length + 1);
    let at = 0;
    order.forEach((id, n) => {
      masks[n] = this.contents.maskOf(id);
      ends.set(this.contents.endsOf(id), n * tiers);
      at += this.contents.textBytes(id);
      textOff[n + 1] = at;
    });
    const words = [this.v4.starts, this.v4.voff, v4data, this.v6.starts, this.v6.voff, v6data, masks, ends, textOff];
    const header: TimelineHeader = {
      format: 2,
      kept_from: this.keptFrom,
      first_span: this.firstSpan,
      spans: this.spans,
      tiers,
      sections: [...words.map((w) => w.length), at],
    };
    const head = Buffer.from(JSON.stringify(header), 'utf8');
    const pad = (4 - ((MAGIC.length + 4 + head.length) % 4)) % 4;
    const start = MAGIC.length + 4 + head.length + pad;
    // One buffer, written in place: the texts are never held twice.
    const out = Buffer.allocUnsafe(start + words.reduce((n, w) => n + w.byteLength, 0) + at);
    MAGIC.copy(out);
    out.writeUInt32LE(head.length + pad, MAGIC.length);
    head.copy(out, MAGIC.length + 4);
    out.fill(0x20, MAGIC.length + 4 + head.length, start);
    let pos = start;
    for (const w of words) {
      out.set(new Uint8Array(w.buffer, w.byteOffset, w.byteLength), pos);
      pos += w.byteLength;
    }
    for (const id of order) pos += this.contents.writeText(id, out, pos);
    return out;
  }

  /** A timeline from toBytes' file; its sections are views of `bytes`, not copies. Throws on a file that is not one. */
  static fromBytes(bytes: Buffer): Timeline {
    if (bytes.length < MAGIC.length + 4 || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) throw new Error('not a timeline file');
    const headLength = bytes.readUInt32LE(MAGIC.length);
    const h = JSON.parse(bytes.toString('utf8', MAGIC.length + 4, MAGIC.length + 4 + headLength)) as TimelineHeader;
    if (h.format !== 2) throw new Error(`timeline format ${h.format} is not known to this ipsift`);
    // Views need 4-byte alignment: a Buffer from the pool may not have it.
    const aligned = bytes.byteOffset % 4 === 0 ? bytes : Buffer.from(Uint8Array.prototype.slice.call(bytes));
    let at = aligned.byteOffset + MAGIC.length + 4 + headLength;
    const section = (n: number): Uint32Array => {
      const view = new Uint32Array(aligned.buffer, at, n);
      at += n * 4;
      return view;
    };
    const [v4s, v4o, v4d, v6s, v6o, v6d, masks, ends, textOff] = h.sections.slice(0, 9).map(section);
    const blob = Buffer.from(aligned.buffer, at, h.sections[9]);
    const t = new Timeline();
    t.keptFrom = h.kept_from;
    t.firstSpan = h.first_span;
    t.spans = h.spans;
    t.contents = new ContentTable(h.tiers, masks, ends, textOff, blob);
    t.v4 = new FamilyTable(1, v4s, v4o, v4d);
    t.v6 = new FamilyTable(4, v6s, v6o, v6d);
    return t;
  }
}

/** One family's segments and the index's intervals merged; a piece changed gets a version of span `span`. */
function extendFamily(f: FamilyTable, span: number, count: number, interval: (i: number) => { start: bigint; content: number }): FamilyTable {
  const out = new FamilyBuilder(f.words);
  // The piece being extended: the segment its versions came from (-1: none yet) and what it
  // appended, so the next piece with the same history and the same change joins it.
  let lastSource = -2;
  let lastAdded = -1;
  let i = 0;
  let next = count > 0 ? interval(0) : null;
  for (let j = 0; j < count; j++) {
    const here = next!;
    next = j + 1 < count ? interval(j + 1) : null;
    // The segments this interval covers, from the one holding its start.
    while (i + 1 < f.count && f.start(i + 1) <= here.start) i++;
    let start = here.start;
    for (;;) {
      const source = f.count === 0 ? -1 : i;
      const latest = source < 0 || f.voff[source] === f.voff[source + 1] ? -1 : f.vdata[f.voff[source + 1] - 1];
      const added = latest === here.content ? -1 : here.content;
      if (!(source === lastSource && added === lastAdded)) {
        out.push(start, f, source, span, added);
        lastSource = source;
        lastAdded = added;
      }
      // The next segment starts inside this interval: it is walked too.
      if (i + 1 < f.count && (next === null || f.start(i + 1) < next.start)) {
        i++;
        start = f.start(i);
      } else break;
    }
  }
  return out.done();
}

const iso = (seconds: number): string => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
