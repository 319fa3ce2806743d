// The range index against a naive reference on seeded random feeds: dense overlaps, equal
// networks, every range boundary probed, IPv4 and IPv6, all four tiers.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { runBuild } from '../src/build/build.js';
import { importFeed } from '../src/feeds/import.js';
import { layoutOf } from '../src/index/format.js';
import { loadIndexFile } from '../src/index/loader.js';
import { compareIndexes } from '../src/index/compare.js';
import type { RangeIndex } from '../src/index/range-index.js';
import { MAX_BATCH_ADDRESSES, answerBatch, decodeOutcome } from '../src/lookup/batch.js';
import { CATEGORIES, DETAIL_FIELDS, type Category, type Classification, type Detail } from '../src/model/categories.js';
import { TIER_COUNT, TIER_MAX, project } from '../src/model/projection.js';
import { ParsedAddress, parseAddress } from '../src/net/address.js';
import { isBogonV4, isBogonV6 } from '../src/net/bogons.js';
import { formatAddress, type Family } from '../src/net/network.js';
import { prng } from '../scripts/gen-feeds.js';
import { TODAY, answerText, tempDir, writeFile } from './helpers.js';
import { INDEX_FILE, buildDir } from '../src/data-dir.js';

interface RefRange {
  family: Family;
  start: bigint;
  end: bigint;
  category: Category;
  detail: Detail;
  text: string;
  /** The feed's priority (default 0). */
  priority?: number;
  /** The source says this network is not in the category. */
  not?: boolean;
  /** The detail as the feed's row gives it (detail is it completed, as answered). */
  raw?: Detail;
}

/**
 * A row's detail as the build answers it: where the row is silent, a list's confidence
 * (medium) and the day it was imported as last_seen; fields in the category's order.
 */
function completed(category: Category, raw: Detail): { detail: Detail; text: string } {
  const fill: Detail = { confidence: 'medium', last_seen: TODAY };
  const detail: Detail = {};
  for (const f of DETAIL_FIELDS[category]) {
    const v = raw[f] ?? fill[f];
    if (v !== undefined) detail[f] = v;
  }
  return { detail, text: JSON.stringify(detail) };
}

const V4_WINDOW = 23n << 24n; // 23.0.0.0, a 2^20-address window of dense overlaps
const V6_WINDOW = 0x2a001450n << 96n;
const WINDOW = 1n << 20n;

/** UTF-8 sequences of every length, up to U+10FFFF: answers copy texts of every kind of byte. */
const PROVIDERS = ['p0', 'p1', 'p2', 'Prövïdér', 'Ωmega߿ࠀ', '東京\uffff', '😀 relay', 'x\u{10ffff}\u{10000}y'];

function randomDetail(rnd: () => number, category: Category, i: number): Detail {
  const d: Detail = {};
  for (const f of DETAIL_FIELDS[category]) {
    if (rnd() < 0.15) continue;
    if (f === 'provider') d[f] = PROVIDERS[(rnd() * PROVIDERS.length) | 0];
    else if (f === 'confidence') d[f] = ['low', 'medium', 'high'][(rnd() * 3) | 0];
    else if (f === 'method') d[f] = 'traffic';
    else if (f === 'first_seen') d[f] = '2026-01-0' + (1 + ((rnd() * 9) | 0));
    else if (f === 'last_seen')
      d[f] = '2026-03-0' + (1 + ((rnd() * 3) | 0)); // few values: ties happen
    else d[f] = (i * 7) % 50;
  }
  return d;
}

function randomRanges(seed: number, count: number): RefRange[] {
  const rnd = prng(seed);
  const out: RefRange[] = [];
  for (let i = 0; i < count; i++) {
    const category = CATEGORIES[(rnd() * CATEGORIES.length) | 0];
    const raw = randomDetail(rnd, category, i);
    const { detail, text } = completed(category, raw);
    if (i > 0 && rnd() < 0.1) {
      const same = out[(rnd() * out.length) | 0];
      out.push({ ...same, category, detail, text, raw }); // an equal network, another detail
      continue;
    }
    const family: Family = rnd() < 0.35 ? 6 : 4;
    const base = family === 4 ? V4_WINDOW : V6_WINDOW;
    // IPv6 windows at three scales: the low 20 bits (every start shares its search key),
    // bits 80..99 (one bucket, distinct keys) and bits 100..119 (across buckets).
    const unit = family === 4 ? 0n : [0n, 80n, 100n][(rnd() * 3) | 0];
    let offset = BigInt(Math.floor(rnd() * Number(WINDOW)));
    let length: bigint;
    if (rnd() < 0.6) {
      const bits = BigInt((rnd() * 13) | 0); // CIDR /20../32 in the window's terms
      offset &= ~((1n << bits) - 1n);
      length = 1n << bits;
    } else {
      length = BigInt(1 + Math.floor(rnd() * 5000));
    }
    const start = base + (offset << unit);
    const end = start + (length << unit) - 1n;
    out.push({ family, start, end, category, detail, text, raw });
  }
  // Ranges reaching into bogon space: bogons must still answer as bogons.
  out.push({ family: 4, start: (9n << 24n) + 0xffff00n, end: (10n << 24n) + 255n, category: 'vpn', ...completed('vpn', {}), raw: {} });
  out.push({ family: 6, start: 0xfbffn << 112n, end: (0xfc00n << 112n) + 5n, category: 'tor', ...completed('tor', {}), raw: {} });
  return out;
}

function toCsv(ranges: RefRange[]): string {
  const fields = ['provider', 'confidence', 'method', 'first_seen', 'last_seen', 'hits', 'hits_days_pct', 'providers_num'] as const;
  const lines = ['network,category,' + fields.join(',')];
  for (const r of ranges) {
    const d = (r.raw ?? r.detail) as Record<string, unknown>;
    lines.push(
      [
        `${formatAddress(r.family, r.start)}-${formatAddress(r.family, r.end)}`,
        r.category,
        ...fields.map((f) => (d[f] === undefined ? '' : String(d[f]))),
      ].join(','),
    );
  }
  return lines.join('\n') + '\n';
}

/** Does r win over b (undefined: nothing yet) for one category? DESIGN.md §3 plus priorities. */
function wins(r: RefRange, b: RefRange | undefined): boolean {
  if (!b) return true;
  const [p, bp] = [r.priority ?? 0, b.priority ?? 0];
  if (p !== bp) return p > bp;
  const [size, bSize] = [r.end - r.start, b.end - b.start];
  if (size !== bSize) return size < bSize;
  if (!!r.not !== !!b.not) return !!r.not;
  if (r.not) return false;
  const [ls, bls] = [String(r.detail.last_seen ?? ''), String(b.detail.last_seen ?? '')];
  if (ls !== bls) return ls > bls;
  const [fields, bFields] = [Object.keys(r.detail).length, Object.keys(b.detail).length];
  if (fields !== bFields) return fields > bFields;
  return r.text > b.text;
}

/**
 * The obvious answer: scan every range that holds v. Ranges sorted by start, with the greatest
 * end so far beside each, so the scan walks back from the last start at or below v and stops
 * where no earlier range reaches v (the outcome is the full scan's: wins() is a total order
 * where it matters).
 */
class Reference {
  private readonly byFamily = new Map<Family, { ranges: RefRange[]; maxEnd: bigint[] }>();
  constructor(ranges: readonly RefRange[]) {
    for (const family of [4, 6] as const) {
      const sorted = ranges.filter((r) => r.family === family).sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
      const maxEnd: bigint[] = [];
      for (const r of sorted) maxEnd.push(maxEnd.length && maxEnd[maxEnd.length - 1] > r.end ? maxEnd[maxEnd.length - 1] : r.end);
      this.byFamily.set(family, { ranges: sorted, maxEnd });
    }
  }

  classify(family: Family, v: bigint): Classification {
    const { ranges, maxEnd } = this.byFamily.get(family)!;
    let lo = 0;
    let hi = ranges.length; // the first start above v
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ranges[mid].start <= v) lo = mid + 1;
      else hi = mid;
    }
    const best: Partial<Record<Category, RefRange>> = {};
    for (let i = lo - 1; i >= 0 && maxEnd[i] >= v; i--) {
      const r = ranges[i];
      if (v <= r.end && wins(r, best[r.category])) best[r.category] = r;
    }
    const c: Classification = {};
    for (const cat of CATEGORIES) if (best[cat] && !best[cat]!.not) c[cat] = JSON.parse(best[cat]!.text) as Detail;
    return c;
  }
}

/** Probes every range boundary and random addresses up to `count`; asserts every tier's answer. */
function probeAgainstReference(index: RangeIndex, ranges: RefRange[], count: number): void {
  const rnd = prng(7);
  const probes: [Family, bigint][] = [];
  for (const r of ranges) {
    for (const v of [r.start - 1n, r.start, r.end, r.end + 1n]) probes.push([r.family, v]);
  }
  while (probes.length < count) {
    const family: Family = rnd() < 0.5 ? 4 : 6;
    const inWindow = rnd() < 0.9;
    const v = inWindow
      ? family === 4
        ? V4_WINDOW + BigInt(Math.floor(rnd() * Number(WINDOW)))
        : V6_WINDOW + (BigInt(Math.floor(rnd() * Number(WINDOW))) << [0n, 80n, 100n][(rnd() * 3) | 0]) + BigInt(Math.floor(rnd() * 2 ** 20))
      : family === 4
        ? BigInt(Math.floor(rnd() * 2 ** 32))
        : (BigInt(Math.floor(rnd() * 2 ** 32)) << 96n) | BigInt(Math.floor(rnd() * 2 ** 52));
    probes.push([family, v]);
  }
  const p = new ParsedAddress();
  const reference = new Reference(ranges);
  let classified = 0;
  for (const [family, v] of probes) {
    const text = formatAddress(family, v);
    parseAddress(text, 0, text.length, p);
    const bogon = family === 4 ? isBogonV4(Number(v)) : isBogonV6(p.w);
    const c = bogon ? null : reference.classify(family, v);
    if (c && Object.keys(c).length > 0) classified++;
    for (let tier = 0; tier < TIER_COUNT; tier++) {
      const expected = JSON.stringify(project(text, c, tier));
      assert.equal(answerText(index, text, tier), expected, `${text} tier ${tier}`);
    }
  }
  assert.ok(probes.length >= count);
  assert.ok(classified > probes.length / 3, `only ${classified} probes hit a range`);
  batchesAgreeWithSingleAnswers(index, [...new Set(probes.map(([family, v]) => formatAddress(family, v)))]);
}

/**
 * Batches (staged lookups, batch writer) answer byte for byte as single lookups do; the
 * batches take the tiers in turn, so those that read the record rows and those that read
 * only the masks are both covered.
 */
function batchesAgreeWithSingleAnswers(index: RangeIndex, texts: string[]): void {
  for (let at = 0, tier = TIER_MAX; at < texts.length; at += MAX_BATCH_ADDRESSES, tier = (tier + 1) % TIER_COUNT) {
    const chunk = texts.slice(at, at + MAX_BATCH_ADDRESSES);
    const { status, answered, body } = decodeOutcome(answerBatch(JSON.stringify({ ips: chunk }), index, tier));
    assert.equal(status, 200);
    assert.equal(answered, chunk.length);
    const expected = `{"results":{${chunk.map((t) => `${JSON.stringify(t)}:${answerText(index, t, tier)}`).join(',')}},"errors":{}}`;
    assert.equal(Buffer.from(body).toString('utf8'), expected, `batch from ${chunk[0]}, tier ${tier}`);
  }
}

describe('range index', () => {
  const dataDir = tempDir();
  const ranges = randomRanges(2026, 1800);
  let index: RangeIndex;

  before(async () => {
    // Split across two feeds so the build has to merge files.
    const half = Math.floor(ranges.length / 2);
    importFeed({ dataDir, file: writeFile(dataDir, 'a.csv', toCsv(ranges.slice(0, half))), allowLargeBlocks: true });
    importFeed({ dataDir, file: writeFile(dataDir, 'b.csv', toCsv(ranges.slice(half))), allowLargeBlocks: true });
    const { id } = runBuild({ dataDir });
    index = (await loadIndexFile(path.join(buildDir(dataDir, id), INDEX_FILE))).index;
  });

  test('answers exactly as the naive reference on ≥ 100 000 probes, every range boundary included', () => {
    probeAgainstReference(index, ranges, 100_000);
  });

  test('IPv4-mapped IPv6 answers with the IPv4 classification', () => {
    const r = ranges.find((x) => x.family === 4)!;
    const v4 = formatAddress(4, r.start);
    const mapped = answerText(index, `::ffff:${v4}`, 3);
    assert.equal(mapped, answerText(index, v4, 3).replace(`"ip":"${v4}"`, `"ip":"::ffff:${v4}"`));
  });

  test('the same feeds build a byte-identical index, whatever the order of rows and files', () => {
    const other = tempDir();
    const shuffled = [...ranges].reverse();
    importFeed({ dataDir: other, file: writeFile(other, 'z.csv', toCsv(shuffled)), allowLargeBlocks: true });
    const first = runBuild({ dataDir: other });
    const second = runBuild({ dataDir: other });
    assert.notEqual(first.id, second.id);
    const a = fs.readFileSync(path.join(first.dir, INDEX_FILE));
    const b = fs.readFileSync(path.join(second.dir, INDEX_FILE));
    const c = Buffer.from(index.bytes);
    assert.ok(a.equals(b));
    assert.ok(a.equals(c), 'row and file order changed the index');
  });

  test('a damaged index file is refused at load', async () => {
    const dir = tempDir();
    const good = Buffer.from(index.bytes);
    const cut = writeFile(dir, 'cut.bin', '');
    fs.writeFileSync(cut, good.subarray(0, good.length - 8));
    await assert.rejects(loadIndexFile(cut), /does not match its header/);
    const bad = Buffer.from(good);
    bad.writeUInt32LE(0xffffffff, layoutOf(index.counts).v4Rows + 4); // first IPv4 interval's record
    const badFile = path.join(dir, 'bad.bin');
    fs.writeFileSync(badFile, bad);
    await assert.rejects(loadIndexFile(badFile), /missing record/);
    const badMask = Buffer.from(good);
    badMask[layoutOf(index.counts).masks + 1] ^= 1; // second record's mask byte
    fs.writeFileSync(badFile, badMask);
    await assert.rejects(loadIndexFile(badFile), /record masks disagree/);
    const older = Buffer.from(good);
    older.writeUInt32LE(3, 8); // format version
    fs.writeFileSync(badFile, older);
    await assert.rejects(loadIndexFile(badFile), /index format 3 is not supported \(expected 4\)/);
  });
});

describe('range index with feed priorities and "not" sources', () => {
  test('answers exactly as the naive reference: higher priority wins however specific; a winning "not" leaves the category out', async () => {
    const dataDir = tempDir();
    const rnd = prng(99);
    const all = randomRanges(4242, 1500);
    // Four feeds: two plain ones of priorities 0 and 1, and two sources that rule categories
    // out for their own networks, at priorities 0 and 2.
    const feeds: { name: string; priority: number; not: Category[]; ranges: RefRange[] }[] = [
      { name: 'p0', priority: 0, not: [], ranges: [] },
      { name: 'p1', priority: 1, not: [], ranges: [] },
      { name: 'not-vpn-tor', priority: 0, not: ['vpn', 'tor'], ranges: [] },
      { name: 'not-hosting', priority: 2, not: ['hosting'], ranges: [] },
    ];
    for (const r of all) {
      const f = feeds[(rnd() * feeds.length) | 0];
      if (f.not.includes(r.category)) feeds[0].ranges.push(r);
      else f.ranges.push(r);
    }
    const reference: RefRange[] = [];
    for (const f of feeds) {
      importFeed({ dataDir, file: writeFile(dataDir, `${f.name}.csv`, toCsv(f.ranges)), priority: f.priority, not: f.not, allowLargeBlocks: true });
      for (const r of f.ranges) {
        reference.push({ ...r, priority: f.priority });
        for (const category of f.not) reference.push({ ...r, category, priority: f.priority, not: true, detail: {}, text: '' });
      }
    }
    const { id } = runBuild({ dataDir });
    const index = (await loadIndexFile(path.join(buildDir(dataDir, id), INDEX_FILE))).index;
    probeAgainstReference(index, reference, 60_000);
  });
});

describe('two builds compared', () => {
  test('every address whose answer differs in a category lies in exactly one reported range of it, and no other does', async () => {
    const ranges = randomRanges(77, 1200);
    const rnd = prng(78);
    // The second build: a fifth dropped, a fifth with another detail, and some new.
    const next: RefRange[] = [];
    for (const r of ranges) {
      const roll = rnd();
      if (roll < 0.2) continue;
      if (roll < 0.4) next.push({ ...r, ...completed(r.category, { ...r.raw, provider: 'moved' }), raw: { ...r.raw, provider: 'moved' } });
      else next.push(r);
    }
    next.push(...randomRanges(79, 200));
    const build = async (rs: RefRange[]): Promise<{ id: string; index: RangeIndex }> => {
      const dir = tempDir();
      importFeed({ dataDir: dir, file: writeFile(dir, 'f.csv', toCsv(rs)), allowLargeBlocks: true });
      const { id } = runBuild({ dataDir: dir, exports: false });
      return { id, index: (await loadIndexFile(path.join(buildDir(dir, id), INDEX_FILE))).index };
    };
    const a = await build(ranges);
    const b = await build(next);
    const c = compareIndexes(a, b, Number.POSITIVE_INFINITY);
    assert.equal(c.more, 0);
    assert.equal(c.examples.length, c.ranges);
    assert.ok(c.ranges > 100, `${c.ranges} ranges changed`);

    /** The category's answer at an address in an index, as text (null: not in it). */
    const answerAt = (index: RangeIndex, family: Family, v: bigint, k: number): string | null => {
      const words = new Uint32Array([Number(v >> 96n), Number((v >> 64n) & 0xffffffffn), Number((v >> 32n) & 0xffffffffn), Number(v & 0xffffffffn)]);
      const record = family === 4 ? index.lookupV4(Number(v)) : index.lookupV6(words);
      const { mask, text: details } = index.recordContent(record);
      if ((mask & (1 << k)) === 0) return null;
      return JSON.stringify((JSON.parse(`{${details.slice(1)}}`) as Record<string, unknown>)[CATEGORIES[k]]);
    };
    const v6 = (text: string): bigint => {
      const [head, tail] = text.split('::');
      const h = head ? head.split(':') : [];
      const t = tail ? tail.split(':') : [];
      const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
      return groups.reduce((n, g) => (n << 16n) | BigInt(`0x${g}`), 0n);
    };
    const parse = (text: string): { family: Family; v: bigint } =>
      text.includes(':') ? { family: 6, v: v6(text) } : { family: 4, v: text.split('.').reduce((n, o) => (n << 8n) | BigInt(o), 0n) };
    const runs = c.examples.map((e) => ({ ...e, k: CATEGORIES.indexOf(e.category), lo: parse(e.first), hi: parse(e.last) }));
    // Probes: both builds' range edges and their neighbours, and every reported run's edges.
    const probes: { family: Family; v: bigint }[] = [];
    for (const r of [...ranges, ...next]) for (const v of [r.start - 1n, r.start, r.end, r.end + 1n]) probes.push({ family: r.family, v });
    for (const r of runs) probes.push(r.lo, r.hi, { family: r.lo.family, v: r.lo.v - 1n }, { family: r.hi.family, v: r.hi.v + 1n });
    let differing = 0;
    for (const p of probes) {
      if (p.v < 0n || p.v >= (p.family === 4 ? 1n << 32n : 1n << 128n)) continue;
      for (let k = 0; k < CATEGORIES.length; k++) {
        const before = answerAt(a.index, p.family, p.v, k);
        const after = answerAt(b.index, p.family, p.v, k);
        const inside = runs.filter((r) => r.k === k && r.lo.family === p.family && r.lo.v <= p.v && p.v <= r.hi.v);
        if (before === after) assert.equal(inside.length, 0, `${p.v} ${CATEGORIES[k]} is unchanged but reported`);
        else {
          differing++;
          assert.equal(inside.length, 1, `${p.v} ${CATEGORIES[k]} changed; reported in ${inside.length} ranges`);
          assert.equal(JSON.stringify(inside[0].before), before ?? 'null');
          assert.equal(JSON.stringify(inside[0].after), after ?? 'null');
        }
      }
    }
    assert.ok(differing > 100);
    // Runs are maximal: no two of a category touch with the same before and after.
    const sorted = [...runs].sort((x, y) => x.k - y.k || x.lo.family - y.lo.family || (x.lo.v < y.lo.v ? -1 : 1));
    for (let i = 1; i < sorted.length; i++) {
      const [x, y] = [sorted[i - 1], sorted[i]];
      if (x.k === y.k && x.lo.family === y.lo.family && x.hi.v + 1n === y.lo.v)
        assert.ok(JSON.stringify([x.before, x.after]) !== JSON.stringify([y.before, y.after]), 'two touching runs with the same change');
    }
    // The per-category counts add up to the runs.
    for (const [k, cat] of CATEGORIES.entries()) {
      const mine = runs.filter((r) => r.k === k);
      const n = c.categories[cat];
      assert.equal(n.ranges, mine.length);
      assert.equal(n.gained, mine.filter((r) => r.before === null).length);
      assert.equal(n.lost, mine.filter((r) => r.after === null).length);
      assert.equal(n.changed, mine.filter((r) => r.before !== null && r.after !== null).length);
    }
    // Nothing changed: nothing reported.
    assert.equal(compareIndexes(a, { id: 'same', index: a.index }).ranges, 0);
  });
});
