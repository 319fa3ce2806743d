// `ipsift build`: every imported feed → one immutable, dated build directory holding the
// serving index. Same feeds → byte-identical index.bin (nothing time- or order-dependent
// goes into it; the manifest carries the build's time and provenance).

import crypto from 'node:crypto';
import fs from 'node:fs';
import v8 from 'node:v8';
import vm from 'node:vm';
import path from 'node:path';
import { CATEGORIES, type Category } from '../model/categories.js';
import { providerNamed } from '../model/providers.js';
import { feedStanding } from '../feeds/freshness.js';
import { readDisabledSources } from '../feeds/source-switches.js';
import { readSourceStates } from '../feeds/source-state.js';
import { detailsBytes, detailsText, flagMask } from '../model/projection.js';
import { NOT_IN_CATEGORY, listFeeds, readFeed } from '../feeds/feed-store.js';
import { nextBuildId, makeServing } from '../index/builds.js';
import { encodeIndex, type IndexStats } from './index-writer.js';
import { NOT_IN, RecordTable, combineCategories, resolveOverlaps, type RangeSet, type Segments } from './resolve.js';
import { v6WordsOf, writeExports, writeExportsManifest, type ExportsManifest } from '../exports/exporter.js';
import { NOTICE_FILE, noticeText, type SourceNotice } from '../exports/notices.js';
import { shareExportInput, startExportsParallel } from '../exports/parallel.js';
import { IpsiftError } from '../errors.js';
import { makeDirectory } from '../files.js';
import { identityOfTag, identityTag, isRunning, ownIdentity } from '../process-identity.js';
import { EXPORTS_DIR, INDEX_FILE, MANIFEST_FILE, buildDir, buildsDir } from '../data-dir.js';
import { recordBuildChanges } from '../index/build-changes.js';

export interface BuildOptions {
  dataDir: string;
  now?: Date;
  /** Make the new build the serving one (default true). Publishing to the store is another step (pipeline/publish.ts). */
  serve?: boolean;
  /** Write the catalogue's database exports into the build (default true). */
  exports?: boolean;
  /** Write the exports on other threads (default: for builds of PARALLEL_EXPORT_RECORDS records or more). */
  threadedExports?: boolean;
  /** Feeds whose terms forbid redistribution that the exports include anyway (EXPORTS_RESTRICTED). */
  exportsRestricted?: readonly string[];
  /** Threads the exports are written on (EXPORT_THREADS; default: one a core, four at most). */
  exportThreads?: number | null;
}

export interface BuildManifest {
  id: string;
  created: string;
  /** Whether the build was made the serving one when it was built. */
  made_serving: boolean;
  feeds: { name: string; bytes: number; sha256: string }[];
  ranges: { v4: Partial<Record<Category, number>>; v6: Partial<Record<Category, number>> };
  /** Addresses answered in each category once overlaps are resolved, as decimal text. */
  addresses: { v4: Partial<Record<Category, string>>; v6: Partial<Record<Category, string>> };
  /** Sources whose content is past its max_age: stale (a band lower) or expired (left out). */
  set_aside: { name: string; freshness: 'stale' | 'expired'; changed_at: string | null }[];
  /** Feeds of sources an operator disabled (feeds/source-switches.ts): left out whatever their freshness. */
  disabled: string[];
  /** Provider names in the feeds that the registry (model/providers.ts) does not know. */
  unknown_providers: string[];
  index: IndexStats & { file: string; sha256: string };
  /** Database exports: id → entries and artifact sizes (details in exports/exports.json). */
  exports: Record<string, { entries: number; bytes: Record<string, number> }>;
  timings_ms: Record<string, number>;
}

export class BuildError extends IpsiftError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('BUILD', message, options);
  }
}

const V4_LAST = 2 ** 32 - 1;
/** Builds with at least this many records write their exports on several threads. */
const PARALLEL_EXPORT_RECORDS = 50_000;
const V6_LAST = (1n << 128n) - 1n;

/** Per-category detail texts, interned; id 0 means "not in the category". */
class DetailTable {
  readonly texts: string[] = [''];
  readonly lastSeen: string[] = [''];
  /** Number of detail fields: among equal networks and last_seen, the fuller detail wins. */
  readonly fields: number[] = [0];
  /** Each detail's provider (for the manifest's unknown providers), read when it is parsed anyway. */
  readonly providers: (string | undefined)[] = [undefined];
  private readonly ids = new Map<string, number>();
  intern(json: string): number {
    let id = this.ids.get(json);
    if (id === undefined) {
      id = this.texts.length;
      this.ids.set(json, id);
      this.texts.push(json);
      const detail = JSON.parse(json) as { last_seen?: string; provider?: string };
      this.lastSeen.push(detail.last_seen ?? '');
      this.fields.push(Object.keys(detail).length);
      this.providers.push(detail.provider);
    }
    return id;
  }
  /** rank[id]: 0 for the detail that wins ties (newest last_seen, then most fields, then greatest text). */
  ranks(): number[] {
    const order = this.texts.map((_, i) => i).slice(1);
    order.sort((a, b) => {
      const la = this.lastSeen[a];
      const lb = this.lastSeen[b];
      if (la !== lb) return la > lb ? -1 : 1;
      if (this.fields[a] !== this.fields[b]) return this.fields[b] - this.fields[a];
      return this.texts[a] > this.texts[b] ? -1 : this.texts[a] < this.texts[b] ? 1 : 0;
    });
    const rank = new Array<number>(this.texts.length).fill(0);
    for (const [r, id] of order.entries()) rank[id] = r;
    return rank;
  }
}

/** The provider names of every detail that the registry does not know, sorted. */
function unknownProviders(details: readonly DetailTable[]): string[] {
  const unknown = new Set<string>();
  for (const table of details) for (const provider of table.providers) if (provider !== undefined && !providerNamed(provider)) unknown.add(provider);
  return [...unknown].sort();
}

/**
 * Addresses each category answers for, after overlaps are resolved, as decimal text. IPv4
 * sums stay exact in a double (at most 2^32), so only IPv6 needs BigInt arithmetic.
 */
function addressCounts(segs: Segments[]): Partial<Record<Category, string>> {
  const out: Partial<Record<Category, string>> = {};
  CATEGORIES.forEach((cat, k) => {
    const { start, end } = segs[k];
    let n: bigint;
    if (typeof start[0] === 'number') {
      let sum = 0;
      for (let i = 0; i < start.length; i++) sum += (end[i] as number) - (start[i] as number) + 1;
      n = BigInt(sum);
    } else {
      n = 0n;
      for (let i = 0; i < start.length; i++) n += (end[i] as bigint) - (start[i] as bigint) + 1n;
    }
    if (n !== 0n) out[cat] = n.toString();
  });
  return out;
}

/**
 * The exports' intervals and records: the category sets without the ranges at the given index
 * spans ([from, to) pairs per set), resolved and combined as the index's are.
 */
function resolveWithout(
  v4: readonly RangeSet[],
  v6: readonly RangeSet[],
  spans: ReadonlyMap<RangeSet, readonly number[]>,
): { records: RecordTable; iv4: ReturnType<typeof combineCategories>; iv6: ReturnType<typeof combineCategories> } {
  const without = (set: RangeSet): RangeSet => {
    const cut = spans.get(set);
    if (!cut) return set;
    const keep = (_: unknown, i: number): boolean => {
      for (let j = 0; j < cut.length; j += 2) if (i >= cut[j] && i < cut[j + 1]) return false;
      return true;
    };
    return {
      start: set.start.filter(keep),
      end: set.end.filter(keep),
      priority: set.priority.filter(keep),
      rank: set.rank.filter(keep),
      detail: set.detail.filter(keep),
    };
  };
  const records = new RecordTable();
  const iv4 = combineCategories(
    v4.map((set) => resolveOverlaps(without(set), 1)),
    V4_LAST,
    0,
    1,
    records,
  );
  const iv6 = combineCategories(
    v6.map((set) => resolveOverlaps(without(set), 1n)),
    V6_LAST,
    0n,
    1n,
    records,
  );
  return { records, iv4, iv6 };
}

/**
 * Removes the staging directories of builds whose process is gone (killed mid-build, or a
 * restart's earlier life of the same pid): named `<id>.<pid>-<start>.staging`, or
 * `<id>.<pid>.staging` by an older ipsift. Returns the names removed.
 */
export function removeStaleStaging(dataDir: string): string[] {
  const dir = buildsDir(dataDir);
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = /\.([0-9]+(?:-(?:[0-9]+|x))?)\.staging$/.exec(name);
    if (!m) continue;
    const holder = m[1].includes('-') ? identityOfTag(m[1]) : { pid: Number(m[1]) };
    if (holder && isRunning(holder)) continue;
    fs.rmSync(path.join(dir, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}

function emptyRangeSet(): RangeSet {
  return { start: [], end: [], priority: [], rank: [], detail: [] };
}

function sha256File(file: string): string {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/**
 * A full collection now, where the runtime allows one (V8's gc, exposed for the call; Bun's
 * own): a thread about to sleep through the exports gives back what it let go.
 */
export function collectGarbage(): void {
  const bun = (globalThis as { Bun?: { gc(full: boolean): void } }).Bun;
  if (bun) return bun.gc(true);
  try {
    v8.setFlagsFromString('--expose-gc');
    (vm.runInNewContext('gc') as () => void)();
  } catch {
    // no way to ask: the memory is collected when the runtime chooses
  }
}

/** Empties every array of a range set, segments or intervals in place: what the caller still holds of it is let go. */
function letGo(set: object): void {
  for (const value of Object.values(set)) if (Array.isArray(value)) value.length = 0;
}

/** Encodes the index into `file`; the bytes are let go on return (the export threads need none of them). */
function writeIndexFile(file: string, input: Parameters<typeof encodeIndex>[0], lap: (stage: string) => void): { stats: IndexStats; sha256: string } {
  const { bytes, stats } = encodeIndex(input);
  lap('encode_index');
  fs.writeFileSync(file, bytes);
  lap('write_index');
  return { stats, sha256: crypto.createHash('sha256').update(bytes).digest('hex') };
}

/** `threadedExports`: whether this build wrote its exports on other threads. */
export function runBuild(options: BuildOptions): {
  id: string;
  dir: string;
  manifest: BuildManifest;
  threadedExports: boolean;
  /** What it changed against the build before it on disk (null: the first, or the comparison failed). */
  changes: BuildRunChanges | null;
} {
  const timings: Record<string, number> = {};
  let t = performance.now();
  const lap = (name: string): void => {
    const now = performance.now();
    timings[name] = Math.round(now - t);
    t = now;
  };

  const feeds = listFeeds(options.dataDir);
  if (feeds.length === 0) throw new BuildError(`no feeds imported in ${options.dataDir}: run 'ipsift feed import' first`);
  const now = options.now ?? new Date();
  const details = CATEGORIES.map(() => new DetailTable());
  const v4 = CATEGORIES.map(emptyRangeSet);
  const v6 = CATEGORIES.map(emptyRangeSet);
  // A source whose content went unchanged past its max_age counts a band lower; past twice
  // that, not at all (feeds/freshness.ts).
  const states = readSourceStates(options.dataDir);
  const setAside: BuildManifest['set_aside'] = [];
  // What the exports are built from, with each source's terms; and which ranges (by index in
  // their set) came from a source whose terms keep it out of exports.
  const notices: SourceNotice[] = [];
  const leftOut: SourceNotice[] = [];
  const restricted = new Map<RangeSet, number[]>();
  const disabledSources = readDisabledSources(options.dataDir);
  const disabled: string[] = [];
  for (const feed of feeds) {
    if (feed.name in disabledSources) {
      disabled.push(feed.name);
      continue;
    }
    const standing = feedStanding(feed, states, now.getTime());
    if (standing.freshness !== 'fresh') setAside.push({ name: feed.name, freshness: standing.freshness, changed_at: states[feed.name]?.changed_at ?? null });
    if (standing.freshness === 'expired') continue;
    const notice = { name: feed.name, licence: feed.licence ?? 'not stated', origin: feed.origin };
    const exported = feed.redistribute || (options.exportsRestricted ?? []).includes(feed.name);
    (exported ? notices : leftOut).push(notice);
    const marks = exported ? null : [...v4, ...v6].map((set) => set.start.length);
    for (const e of readFeed(feed.file)) {
      const k = CATEGORIES.indexOf(e.category);
      const set = e.family === 4 ? v4[k] : v6[k];
      set.start.push(e.start);
      set.end.push(e.end);
      set.priority.push(standing.order);
      set.detail.push(e.detail === NOT_IN_CATEGORY ? NOT_IN : details[k].intern(standing.detail(e.detail, e.category)));
    }
    if (marks) {
      const sets = [...v4, ...v6];
      for (let i = 0; i < sets.length; i++) {
        if (sets[i].start.length > marks[i]) restricted.set(sets[i], [...(restricted.get(sets[i]) ?? []), marks[i], sets[i].start.length]);
      }
    }
  }
  lap('read_feeds');
  CATEGORIES.forEach((_, k) => {
    const rank = details[k].ranks();
    // A source's "not in this category" wins ties with claims.
    for (const set of [v4[k], v6[k]]) set.rank = set.detail.map((d) => (d === NOT_IN ? -1 : rank[d]));
  });

  const seg4: Segments[] = v4.map((set) => resolveOverlaps(set, 1));
  const seg6: Segments[] = v6.map((set) => resolveOverlaps(set, 1n));
  lap('resolve_overlaps');
  const records = new RecordTable();
  const iv4 = combineCategories(seg4, V4_LAST, 0, 1, records);
  const iv6 = combineCategories(seg6, V6_LAST, 0n, 1n, records);
  lap('combine_categories');
  // Exports leave out what may not be passed on: resolved again without it, only when there is any.
  const exportsFrom = restricted.size === 0 ? { records, iv4, iv6 } : resolveWithout(v4, v6, restricted);
  if (restricted.size !== 0) lap('resolve_exports');
  // What the manifest says of the feeds' ranges and addresses, taken now: the range sets and
  // segments are let go before the record texts and the index are made, the build's peak.
  const countRanges = (sets: RangeSet[]): Partial<Record<Category, number>> =>
    Object.fromEntries(CATEGORIES.map((cat, k) => [cat, sets[k].detail.filter((d) => d !== NOT_IN).length]).filter(([, n]) => n !== 0));
  const rangeCounts = { v4: countRanges(v4), v6: countRanges(v6) };
  const addressTotals = { v4: addressCounts(seg4), v6: addressCounts(seg6) };
  for (const set of [...v4, ...v6]) letGo(set);
  for (const segs of [seg4, seg6]) for (const set of segs) letGo(set);

  makeDirectory(buildsDir(options.dataDir));
  const id = nextBuildId(options.dataDir, now);
  const dir = buildDir(options.dataDir, id);
  removeStaleStaging(options.dataDir);
  const staging = `${dir}.${identityTag(ownIdentity())}.staging`;
  makeDirectory(staging);
  // A failed build removes its staging directory (a full disk stays as full as it was), after
  // any export threads writing into it have stopped.
  let waitForExports: (() => ExportsManifest) | null = null;
  const serve = options.serve ?? true;
  let manifest: BuildManifest | null = null;
  try {
    // IPv6 starts as 32-bit words, once, for the index and the exports alike; in shared memory,
    // which the export threads read without a copy.
    const v6Words = v6WordsOf(iv6.start as bigint[], new Uint32Array(new SharedArrayBuffer(iv6.start.length * 16)));
    const exportV6Words =
      exportsFrom.iv6 === iv6
        ? v6Words
        : v6WordsOf(exportsFrom.iv6.start as bigint[], new Uint32Array(new SharedArrayBuffer(exportsFrom.iv6.start.length * 16)));
    // Large builds export on other threads once the index is written. Their input is copied
    // to shared memory now; the build's own arrays are let go before the threads start, so the
    // threads' trees never share the process with them (a 1 M-range build held 0.6 GB of them).
    const exportsWanted = options.exports ?? true;
    const threaded = exportsWanted && (options.threadedExports ?? records.count >= PARALLEL_EXPORT_RECORDS);
    const sharedInput = threaded
      ? shareExportInput(
          exportsFrom.iv4.start as number[],
          exportsFrom.iv4.record,
          exportV6Words,
          exportsFrom.iv6.record,
          exportsFrom.records.count,
          exportsFrom.records.details,
          details.map((t) => t.texts),
          notices,
        )
      : null;

    const c = CATEGORIES.length;
    const masks: number[] = new Array(records.count);
    const json: (string | undefined)[] = new Array(c);
    /** Record r's detail texts, one per category, into json. */
    const jsonOf = (r: number): (string | undefined)[] => {
      for (let k = 0; k < c; k++) {
        const id = records.details[r * c + k];
        json[k] = id === 0 ? undefined : details[k].texts[id];
      }
      return json;
    };
    for (let r = 0; r < records.count; r++) masks[r] = flagMask(jsonOf(r));
    lap('record_texts');
    // Each record's text is made when the encoder writes it (its size first), never all kept at once.
    const index = writeIndexFile(
      path.join(staging, INDEX_FILE),
      {
        v4Starts: iv4.start,
        v4Records: iv4.record,
        v6Words,
        v6Records: iv6.record,
        masks,
        detailsBytes: (r) => detailsBytes(jsonOf(r)),
        details: (r) => detailsText(jsonOf(r)),
      },
      lap,
    );
    const facts = {
      feeds: feeds.filter((f) => !(f.name in disabledSources)).map((f) => ({ name: f.name, bytes: f.bytes, sha256: sha256File(f.file) })),
      ranges: rangeCounts,
      addresses: addressTotals,
      set_aside: setAside,
      disabled,
      unknown_providers: unknownProviders(details),
      index: { ...index.stats, file: INDEX_FILE, sha256: index.sha256 },
    };
    lap('manifest_facts');
    if (sharedInput) {
      masks.length = 0;
      for (const set of [...(exportsFrom.iv4 === iv4 ? [] : [exportsFrom.iv4, exportsFrom.iv6]), iv4, iv6]) letGo(set);
      records.details.length = 0;
      exportsFrom.records.details.length = 0;
      // This thread only sleeps while the threads work: nothing would collect what it let go.
      collectGarbage();
      waitForExports = startExportsParallel(staging, sharedInput, now, options.exportThreads ?? undefined);
    }
    const exportsSummary: BuildManifest['exports'] = {};
    if (exportsWanted) {
      let ex: ExportsManifest;
      if (waitForExports) ex = waitForExports();
      else {
        const parsed = details.map((table) => table.texts.map((t, id) => (id === 0 ? undefined : (JSON.parse(t) as Record<string, string | number>))));
        ex = writeExports(
          staging,
          {
            v4Starts: exportsFrom.iv4.start as number[],
            v4Records: exportsFrom.iv4.record,
            v6Words: exportV6Words,
            v6Records: exportsFrom.iv6.record,
            recordCount: exportsFrom.records.count,
            recordDetailIds: exportsFrom.records.details,
            detail: (k, id) => parsed[k][id]!,
            notices,
          },
          now,
        );
      }
      // Each source's licence travels with the files: in their manifest and a notice beside them.
      ex.sources = notices;
      ex.left_out = leftOut;
      writeExportsManifest(path.join(staging, EXPORTS_DIR), ex);
      fs.writeFileSync(path.join(staging, EXPORTS_DIR, NOTICE_FILE), noticeText(notices, leftOut, now));
      for (const [id, d] of Object.entries(ex.databases)) {
        exportsSummary[id] = { entries: d.entries, bytes: Object.fromEntries(Object.entries(d.artifacts).map(([f, a]) => [f, a!.full.bytes])) };
      }
      lap('exports'); // for threaded exports: the wait after the index was written
    }
    manifest = {
      id,
      created: now.toISOString(),
      made_serving: serve,
      ...facts,
      exports: exportsSummary,
      timings_ms: timings,
    };
    lap('write_manifest');
    manifest.timings_ms = { ...timings };
    fs.writeFileSync(path.join(staging, MANIFEST_FILE), JSON.stringify(manifest, null, 2) + '\n');
    fs.renameSync(staging, dir);
  } catch (e) {
    try {
      waitForExports?.();
    } catch {
      // the threads failed too; either way they have stopped
    }
    fs.rmSync(staging, { recursive: true, force: true });
    throw e;
  }
  // What it changed against the build before it, kept beside it before it serves, so a
  // serving build's comparison is always there to read. A comparison that fails leaves the
  // build as it is.
  let changes: BuildRunChanges | null = null;
  try {
    const c = recordBuildChanges(options.dataDir, id);
    changes = c && { from: c.from, ranges: c.ranges };
  } catch {
    changes = null;
  }
  if (serve) makeServing(options.dataDir, id, now);
  return { id, dir, manifest: manifest!, threadedExports: waitForExports !== null, changes };
}

/** What a build changed against the one before it, in short (index/build-changes.ts has the whole). */
export interface BuildRunChanges {
  from: string;
  ranges: number;
}
