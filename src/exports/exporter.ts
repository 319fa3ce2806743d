// Build-time exports: for every catalogue database and format, the full artifact and a
// sample, their checksums, and the metadata document (interface.md §2.5). Written into the
// build's staging directory, so a build is made with its exports or not at all.

import fs from 'node:fs';
import path from 'node:path';
import { CATEGORIES, DETAIL_FIELDS } from '../model/categories.js';
import { formatIPv4, formatIPv6Words } from '../net/address.js';
import { DATABASES, providerId, type Cell, type Column, type DatabaseDef, type Format, type RecordDetails, type RecordView } from './databases.js';
import type { Checksums } from './checksums.js';
import { forEachUnaliased, forEachV4Cidr, forEachV6Cidr, wordsOf } from './cidr.js';
import { CsvGzWriter, csvField } from './csv-writer.js';
import { readCsv } from '../feeds/csv.js';
import { MmdbWriter } from './mmdb-writer.js';
import type { MmdbValue } from './mmdb-data.js';
import { makeDirectory } from '../files.js';
import { EXPORTS_DIR, EXPORTS_MANIFEST } from '../data-dir.js';
import { noticeLine, type SourceNotice } from './notices.js';

/** About this many networks go into a sample, spread evenly over the database. */
const SAMPLE_TARGET = 200;
/**
 * A sample is a strict subset (DESIGN.md §6): at most SAMPLE_MAX entries and a tenth of the
 * database's; a database of fewer than SAMPLE_MIN_ENTRIES entries offers none. Sampling takes
 * at most every SAMPLE_MIN_STRIDE-th range, and a sample over the bounds is not published.
 */
const SAMPLE_MAX = 1000;
const SAMPLE_MIN_ENTRIES = 10;
const SAMPLE_MIN_STRIDE = 10;

/** Whether a sample of `sampleEntries` may be offered for a database of `entries`. */
export function sampleAllowed(sampleEntries: number, entries: number): boolean {
  return entries >= SAMPLE_MIN_ENTRIES && sampleEntries > 0 && sampleEntries <= SAMPLE_MAX && sampleEntries * 10 <= entries;
}
/** Rows of each format shown in the metadata document's `sample`. */
const SAMPLE_ROWS_SHOWN = 5;

export interface ExportInput {
  v4Starts: readonly number[];
  v4Records: readonly number[];
  /** IPv6 interval starts, four big-endian 32-bit words each (v6WordsOf): no bigint in the export loop. */
  v6Words: Uint32Array<ArrayBufferLike>;
  v6Records: readonly number[];
  recordCount: number;
  /** Flat: record r's detail id in category k at r * CATEGORIES.length + k (0: not in it). */
  recordDetailIds: readonly number[];
  /** The parsed detail object of category k's detail id. */
  detail(k: number, id: number): Readonly<Record<string, string | number>>;
  /** The sources the input was built from, named with their licences in each MMDB's description. */
  notices?: readonly SourceNotice[];
}

/** IPv6 starts as ExportInput's words, in `into` (a shared buffer's view) or a new array. */
export function v6WordsOf(starts: readonly bigint[], into: Uint32Array<ArrayBufferLike> = new Uint32Array(starts.length * 4)): Uint32Array<ArrayBufferLike> {
  const w = new Uint32Array(4);
  for (let i = 0; i < starts.length; i++) into.set(wordsOf(starts[i], w), i * 4);
  return into;
}

function detailsOf(input: ExportInput, r: number): RecordDetails {
  const c = CATEGORIES.length;
  return CATEGORIES.map((_, k) => {
    const id = input.recordDetailIds[r * c + k];
    return id === 0 ? undefined : input.detail(k, id);
  });
}

/**
 * Per record: a number equal for records with equal views in `db`, or -1 when the record is
 * not in it. Records are distinct combinations of all categories' details, so a database
 * of every category's details is keyed by the record itself.
 */
function identities(db: DatabaseDef, input: ExportInput): Int32Array {
  const c = CATEGORIES.length;
  const ks = db.dependsOn!.categories.map((cat) => CATEGORIES.indexOf(cat));
  const presence = db.dependsOn!.presenceOnly;
  const ids = input.recordDetailIds;
  const out = new Int32Array(input.recordCount);
  // Several categories: equal combinations of detail ids are found in an open-addressing
  // table of records (no key object or string a record); the identity is the first record
  // with the combination.
  const slots = 2 ** Math.ceil(Math.log2(2 * input.recordCount + 2)) - 1;
  const first = ks.length > 1 && ks.length < c && !presence ? new Int32Array(slots + 1).fill(-1) : null;
  const same = (a: number, b: number): boolean => {
    for (const k of ks) if (ids[a * c + k] !== ids[b * c + k]) return false;
    return true;
  };
  for (let r = 0; r < input.recordCount; r++) {
    let any = false;
    for (const k of ks) if (ids[r * c + k] !== 0) any = true;
    if (!any) out[r] = -1;
    else if (presence) {
      let mask = 0;
      for (const k of ks) if (ids[r * c + k] !== 0) mask |= 1 << k;
      out[r] = mask;
    } else if (ks.length === c) out[r] = r;
    else if (ks.length === 1) out[r] = ids[r * c + ks[0]];
    else {
      let h = 0x811c9dc5;
      for (const k of ks) h = Math.imul(h ^ ids[r * c + k], 0x01000193);
      for (let i = h & slots; ; i = (i + 1) & slots) {
        const f = first![i];
        if (f === -1) {
          first![i] = r;
          out[r] = r;
          break;
        }
        if (same(f, r)) {
          out[r] = f;
          break;
        }
      }
    }
  }
  return out;
}

export interface Artifact {
  file: string;
  bytes: number;
  checksums: Checksums;
}

export interface DatabaseExport {
  id: string;
  updated: string;
  entries: number;
  sample_entries: number;
  schema: Partial<Record<Format, Column[]>>;
  sample: Partial<Record<Format, Record<string, unknown>[]>>;
  /** sample: null when the database is too small for one (see sampleAllowed). */
  artifacts: Partial<Record<Format, { full: Artifact; sample: Artifact | null }>>;
}

export interface ExportsManifest {
  built: string;
  databases: Record<string, DatabaseExport>;
  timings_ms: Record<string, number>;
  /** The sources the files hold, with their terms (NOTICE.txt says the same in prose). */
  sources?: SourceNotice[];
  /** Sources left out because their terms do not allow passing them on. */
  left_out?: SourceNotice[];
}

const fileName = (id: string, format: Format, sample: boolean): string => `${id}${sample ? '.sample' : ''}.${format === 'csvgz' ? 'csv.gz' : 'mmdb'}`;

/**
 * A database's merged network ranges, in address order, IPv4 first: consecutive intervals
 * whose views are equal become one. Typed arrays rather than an object a range: a large
 * database has millions, which all outlived the young generation and were copied by every
 * scavenge until promoted.
 */
interface Spans {
  count: number;
  /** Spans [0, v4) are IPv4, [v4, count) IPv6. */
  v4: number;
  /** The record giving each span's view. */
  record: Int32Array;
  /** IPv4 span n: first and last address at 2n, 2n + 1. */
  v4Bounds: Uint32Array;
  /** IPv6 span n: the first address's four words at 8(n - v4), the last's after them. */
  v6Bounds: Uint32Array;
}

function spansOf(input: ExportInput, identity: Int32Array): Spans {
  const v4n = input.v4Starts.length;
  const v6n = input.v6Records.length;
  const record = new Int32Array(v4n + v6n);
  const v4Bounds = new Uint32Array(2 * v4n);
  const v6Bounds = new Uint32Array(8 * v6n);
  let count = 0;
  let open = -2; // the identity of the span still open, -2 for none
  for (let i = 0; i < v4n; i++) {
    const r = input.v4Records[i];
    const id = identity[r];
    const end = i + 1 < v4n ? input.v4Starts[i + 1] - 1 : 2 ** 32 - 1;
    if (id === -1) open = -2;
    else if (id === open) v4Bounds[2 * count - 1] = end;
    else {
      record[count] = r;
      v4Bounds[2 * count] = input.v4Starts[i];
      v4Bounds[2 * count + 1] = end;
      count++;
      open = id;
    }
  }
  const v4 = count;
  const w = input.v6Words;
  /** The span's last address at `at`: the next interval's start less one, or the top of the space. */
  const setEnd = (at: number, i: number): void => {
    if (i + 1 === v6n) {
      v6Bounds.fill(0xffffffff, at, at + 4);
      return;
    }
    let borrow = true;
    for (let k = 3; k >= 0; k--) {
      const x = w[4 * (i + 1) + k];
      v6Bounds[at + k] = borrow ? (x - 1) >>> 0 : x;
      if (x !== 0) borrow = false;
    }
  };
  open = -2;
  for (let i = 0; i < v6n; i++) {
    const r = input.v6Records[i];
    const id = identity[r];
    if (id === -1) open = -2;
    else if (id === open) setEnd(8 * (count - v4) - 4, i);
    else {
      record[count] = r;
      const at = 8 * (count - v4);
      for (let k = 0; k < 4; k++) v6Bounds[at + k] = w[4 * i + k];
      setEnd(at + 4, i);
      count++;
      open = id;
    }
  }
  return { count, v4, record, v4Bounds, v6Bounds };
}

/** What a distinct view writes: its CSV line tails and its data offset in each MMDB. */
interface Prepared {
  /** The record's identity (equal identities share one copy in each MMDB). */
  id: number;
  view: RecordView;
  tails: string[];
  /** Its data-section offset in the full MMDB, and in the sample's; -1 until a network of it is in the tree. */
  offset: number;
  sampleOffset: number;
}

function csvTail(cells: readonly Cell[]): string {
  let t = '';
  for (const v of cells) t += ',' + csvField(v);
  return t + '\n';
}

function writeRangesDatabase(dir: string, db: DatabaseDef, input: ExportInput, built: Date, out: ExportsManifest['databases']): void {
  const identity = identities(db, input);
  const spans = spansOf(input, identity);
  const stride = Math.max(SAMPLE_MIN_STRIDE, Math.floor(spans.count / SAMPLE_TARGET));
  const epoch = Math.floor(built.getTime() / 1000);
  const header = db.schema.csvgz!.map((c) => c.name);
  const editions = DATABASES.filter((e) => e.editionOf === db.base);
  const notice = noticeLine(input.notices ?? []);
  const mmdbOptions = (sample: boolean) => ({
    databaseType: db.mmdbType ?? `ipsift-${db.id}`,
    description: `${db.name}: ${db.summary}.${notice}`,
    buildEpoch: epoch,
    editions: editions.map((e) => ({
      file: path.join(dir, fileName(e.id, 'mmdb', sample)),
      databaseType: e.mmdbType ?? `ipsift-${e.id}`,
      description: `${e.name}: ${e.summary}.${notice}`,
    })),
  });
  const csvFull = new CsvGzWriter(path.join(dir, fileName(db.id, 'csvgz', false)), header);
  const csvSample = new CsvGzWriter(path.join(dir, fileName(db.id, 'csvgz', true)), header);
  const withMmdb = db.formats.includes('mmdb');
  const mmdbFull = withMmdb ? new MmdbWriter(path.join(dir, fileName(db.id, 'mmdb', false)), mmdbOptions(false)) : null;
  const mmdbSample = withMmdb ? new MmdbWriter(path.join(dir, fileName(db.id, 'mmdb', true)), mmdbOptions(true)) : null;
  // Views of recent identities; most repeats are neighbours, and keeping every view of a
  // large database would only feed the garbage collector.
  const prepared = new Map<number, Prepared>();
  // CSV text of each category's details, by detail id, for databases with csvTails.
  const pieces = CATEGORIES.map(() => new Map<number, string>());
  const piece = (k: number, id: number): string => {
    let text = pieces[k].get(id);
    if (text === undefined) {
      const d = id === 0 ? undefined : input.detail(k, id);
      text = DETAIL_FIELDS[CATEGORIES[k]].map((f) => ',' + csvField(d?.[f] ?? '')).join('');
      pieces[k].set(id, text);
    }
    return text;
  };
  const startWords = new Uint32Array(4);
  const endWords = new Uint32Array(4);
  let current: Prepared;
  let currentSample = false;
  // A record is written to an MMDB's data section when its first network goes into that
  // MMDB's tree, never before: a record none of whose networks is in the tree (IPv6 data inside
  // the IPv4 aliases, a sample past its cap) would be data the tree does not reach, which
  // MaxMind's Reader.Verify() refuses.
  const fullOffset = (p: Prepared): number => (p.offset >= 0 ? p.offset : (p.offset = mmdbFull!.recordOffset(p.view.mmdb, p.id)));
  const sampleOffset = (p: Prepared): number => (p.sampleOffset >= 0 ? p.sampleOffset : (p.sampleOffset = mmdbSample!.recordOffset(p.view.mmdb, p.id)));
  const addFullV6 = (b: Uint32Array, bp: number): void => mmdbFull!.addV6(b[0], b[1], b[2], b[3], bp, fullOffset(current));
  const addSampleV6 = (b: Uint32Array, bp: number): void => mmdbSample!.addV6(b[0], b[1], b[2], b[3], bp, sampleOffset(current));
  const emit = (network: string | null, v4: number, w: Uint32Array | null, prefix: number): void => {
    const p = current;
    // A range splits into one network or many: the cap holds the sample to a tenth of the
    // ranges, so to at most a tenth of the networks.
    if (currentSample && sampleEntries >= sampleCap) currentSample = false;
    if (currentSample) sampleEntries++;
    if (mmdbFull) {
      if (w === null) mmdbFull.addV4(v4, prefix, fullOffset(p));
      // IPv6 data inside ::/96, ::ffff:0:0/96 or 2002::/16 stays out of the MMDB: its tree
      // answers those networks with the IPv4 data. The CSV keeps it.
      else forEachUnaliased(w, prefix, addFullV6);
    }
    if (currentSample && mmdbSample) {
      if (w === null) mmdbSample.addV4(v4, prefix, sampleOffset(p));
      else forEachUnaliased(w, prefix, addSampleV6);
    }
    for (const tail of p.tails) {
      if (network === null) {
        csvFull.lineV4(v4, prefix, tail);
        if (currentSample) csvSample.lineV4(v4, prefix, tail);
      } else {
        csvFull.line(network, tail);
        if (currentSample) csvSample.line(network, tail);
      }
    }
    entries++;
    if (currentSample && shown.length < SAMPLE_ROWS_SHOWN) show(network ?? `${formatIPv4(v4)}/${prefix}`, p);
  };
  // IPv4 networks go to the CSV as bytes, without a string each (there are millions).
  const emitV4 = (base: number, prefix: number): void => emit(null, base, null, prefix);
  const emitV6 = (w: Uint32Array, prefix: number): void => emit(`${formatIPv6Words(w)}/${prefix}`, 0, w, prefix);
  let entries = 0;
  let sampleEntries = 0;
  const sampleCap = Math.min(SAMPLE_MAX, Math.floor(spans.count / SAMPLE_MIN_STRIDE));
  const shown: Record<string, unknown>[] = [];
  const shownMmdb: Record<string, unknown>[] = [];

  for (let n = 0; n < spans.count; n++) {
    const r = spans.record[n];
    const id = identity[r];
    let p = prepared.get(id);
    if (p === undefined) {
      const view = db.view!(detailsOf(input, r))!;
      const tails = db.csvTails ? db.csvTails(input.recordDetailIds, r * CATEGORIES.length, piece) : view.rows.map(csvTail);
      p = { id, view, tails, offset: -1, sampleOffset: -1 };
      if (prepared.size >= 4096) prepared.clear();
      prepared.set(id, p);
    }
    const inSample = n % stride === stride - 1;
    current = p;
    currentSample = inSample;
    if (n < spans.v4) forEachV4Cidr(spans.v4Bounds[2 * n], spans.v4Bounds[2 * n + 1], emitV4);
    else {
      const at = 8 * (n - spans.v4);
      for (let k = 0; k < 4; k++) {
        startWords[k] = spans.v6Bounds[at + k];
        endWords[k] = spans.v6Bounds[at + 4 + k];
      }
      forEachV6Cidr(startWords, endWords, emitV6);
    }
  }
  const withSample = sampleAllowed(sampleEntries, entries);

  function show(network: string, p: Prepared): void {
    // The rows as the CSV has them (the tails are the CSV text after the network).
    for (const tail of p.tails) {
      const cells = [...readCsv(network + tail)][0].fields;
      shown.push(Object.fromEntries(header.map((h, k) => [h, cells[k]])));
    }
    shownMmdb.push({ network, ...(p.view.mmdb as Record<string, MmdbValue>) });
  }

  const artifacts: DatabaseExport['artifacts'] = {};
  const csv = { full: csvFull.finish(), sample: csvSample.finish() };
  artifacts.csvgz = {
    full: { file: fileName(db.id, 'csvgz', false), bytes: csv.full.bytes, checksums: csv.full.checksums },
    sample: withSample ? { file: fileName(db.id, 'csvgz', true), bytes: csv.sample.bytes, checksums: csv.sample.checksums } : null,
  };
  const editionArtifacts: DatabaseExport['artifacts'][] = editions.map(() => ({}));
  if (mmdbFull && mmdbSample) {
    const full = mmdbFull.finish();
    const sample = mmdbSample.finish();
    const mmdbArtifacts = (
      id: string,
      f: { bytes: number; checksums: Checksums },
      s: { bytes: number; checksums: Checksums },
    ): NonNullable<DatabaseExport['artifacts']['mmdb']> => ({
      full: { file: fileName(id, 'mmdb', false), bytes: f.bytes, checksums: f.checksums },
      sample: withSample ? { file: fileName(id, 'mmdb', true), bytes: s.bytes, checksums: s.checksums } : null,
    });
    artifacts.mmdb = mmdbArtifacts(db.id, full, sample);
    for (const [k, e] of editions.entries()) editionArtifacts[k].mmdb = mmdbArtifacts(e.id, full.editions[k], sample.editions[k]);
  }
  if (!withSample) {
    for (const f of ['csvgz', 'mmdb'] as const) fs.rmSync(path.join(dir, fileName(db.id, f, true)), { force: true });
    for (const e of editions) fs.rmSync(path.join(dir, fileName(e.id, 'mmdb', true)), { force: true });
    sampleEntries = 0;
  }
  const sample: DatabaseExport['sample'] = { csvgz: withSample ? shown.slice(0, SAMPLE_ROWS_SHOWN) : [] };
  if (withMmdb) sample.mmdb = withSample ? shownMmdb.slice(0, SAMPLE_ROWS_SHOWN) : [];
  const updated = built.toISOString().slice(0, 10);
  out[db.id] = { id: db.id, updated, entries, sample_entries: sampleEntries, schema: db.schema, sample, artifacts };
  // An edition: the same networks and records under another database type, MMDB only.
  editions.forEach((e, k) => {
    out[e.id] = {
      id: e.id,
      updated,
      entries,
      sample_entries: sampleEntries,
      schema: e.schema,
      sample: { mmdb: sample.mmdb ?? [] },
      artifacts: editionArtifacts[k],
    };
  });
}

function writeProvidersDatabase(dir: string, db: DatabaseDef, input: ExportInput, built: Date, out: ExportsManifest['databases']): void {
  const ks = db.providerCategories!.map((c) => CATEGORIES.indexOf(c));
  type Provider = { name: string; cats: Set<string>; v4: number; v6: number };
  const byId = new Map<string, Provider>();
  // Per category, detail id → its provider (null: none), so each detail is looked at once.
  const providerOf = ks.map(() => new Map<number, Provider | null>());
  const c = CATEGORIES.length;
  const count = (records: readonly number[], family: 4 | 6): void => {
    let previous = -1;
    for (const r of records) {
      if (r === previous) continue;
      previous = r;
      for (let j = 0; j < ks.length; j++) {
        const detail = input.recordDetailIds[r * c + ks[j]];
        if (detail === 0) continue;
        let p = providerOf[j].get(detail);
        if (p === undefined) {
          const name = input.detail(ks[j], detail).provider;
          p = null;
          if (typeof name === 'string' && name !== '') {
            const id = providerId(name);
            p = byId.get(id) ?? null;
            if (!p) byId.set(id, (p = { name, cats: new Set(), v4: 0, v6: 0 }));
            p.cats.add(CATEGORIES[ks[j]]);
          }
          providerOf[j].set(detail, p);
        }
        if (p === null) continue;
        if (family === 4) p.v4++;
        else p.v6++;
      }
    }
  };
  count(input.v4Records, 4);
  count(input.v6Records, 6);
  const header = db.schema.csvgz!.map((c) => c.name);
  const ids = [...byId.keys()].sort();
  const stride = Math.max(SAMPLE_MIN_STRIDE, Math.floor(ids.length / SAMPLE_TARGET));
  const full = new CsvGzWriter(path.join(dir, fileName(db.id, 'csvgz', false)), header);
  const sampleWriter = new CsvGzWriter(path.join(dir, fileName(db.id, 'csvgz', true)), header);
  const shown: Record<string, unknown>[] = [];
  ids.forEach((id, n) => {
    const p = byId.get(id)!;
    const row: Cell[] = [id, p.name, [...p.cats].sort().join(' '), p.v4, p.v6];
    full.row(row);
    if (n % stride === stride - 1) {
      sampleWriter.row(row);
      if (shown.length < SAMPLE_ROWS_SHOWN) shown.push(Object.fromEntries(header.map((h, k) => [h, row[k]])));
    }
  });
  const f = full.finish();
  const s = sampleWriter.finish();
  const withSample = sampleAllowed(s.rows, f.rows);
  if (!withSample) fs.rmSync(path.join(dir, fileName(db.id, 'csvgz', true)), { force: true });
  out[db.id] = {
    id: db.id,
    updated: built.toISOString().slice(0, 10),
    entries: f.rows,
    sample_entries: withSample ? s.rows : 0,
    schema: db.schema,
    sample: { csvgz: withSample ? shown : [] },
    artifacts: {
      csvgz: {
        full: { file: fileName(db.id, 'csvgz', false), bytes: f.bytes, checksums: f.checksums },
        sample: withSample ? { file: fileName(db.id, 'csvgz', true), bytes: s.bytes, checksums: s.checksums } : null,
      },
    },
  };
}

/** Writes the given databases' artifacts into dir (no manifest): a part of writeExports. */
export function writeDatabases(dir: string, input: ExportInput, built: Date, databases: readonly DatabaseDef[]): ExportsManifest {
  makeDirectory(dir);
  const manifest: ExportsManifest = { built: built.toISOString(), databases: {}, timings_ms: {} };
  for (const db of databases) {
    // An edition is written with the database it is an edition of.
    if (db.editionOf !== undefined) continue;
    const t = performance.now();
    if (db.keyedBy === 'ranges') writeRangesDatabase(dir, db, input, built, manifest.databases);
    else writeProvidersDatabase(dir, db, input, built, manifest.databases);
    manifest.timings_ms[db.id] = Math.round(performance.now() - t);
  }
  return manifest;
}

/** Writes every database's artifacts into buildDir/exports, in this thread, with the manifest. */
export function writeExports(buildDir: string, input: ExportInput, built: Date, databases: readonly DatabaseDef[] = DATABASES): ExportsManifest {
  const dir = path.join(buildDir, EXPORTS_DIR);
  const manifest = writeDatabases(dir, input, built, databases);
  writeExportsManifest(dir, manifest);
  return manifest;
}

export function writeExportsManifest(dir: string, manifest: ExportsManifest): void {
  fs.writeFileSync(path.join(dir, EXPORTS_MANIFEST), JSON.stringify(manifest, null, 2) + '\n');
}
