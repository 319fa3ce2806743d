// `ipsift feed import`: the canonical CSV (DESIGN.md §3) and the public formats of
// formats.ts (plain lists among them). The whole file is
// validated before anything is written; the first bad line fails the import with
// file, line and reason.

import fs from 'node:fs';
import { CATEGORIES, isCategory, type Category, type DetailField } from '../model/categories.js';
import { parseNetwork } from '../net/network.js';
import { CsvSyntaxError, readCsv } from './csv.js';
import { ALL_DETAIL_FIELDS, buildDetail } from './details.js';
import { MAX_PRIORITY, NOT_IN_CATEGORY, checkFeedName, feedNameFromFile, writeFeed, type FeedEntry, type FeedInfo } from './store.js';
import { FEED_FORMATS, FormatError, detectFormat, formatByName, type FeedFormatDef, type FormatRow } from './formats.js';
import { IpsiftError } from '../errors.js';

/** csv, auto, or a name in FEED_FORMATS (list, tor-exit-addresses, misp, cloud-json, aws). */
export type FeedFormat = string;

export interface ImportOptions {
  dataDir: string;
  file: string;
  /** Default: `csv` for *.csv, else `list`; `auto` detects by content. */
  format?: FeedFormat;
  /** Skip malformed lines (counted in the result) instead of failing the import. */
  skipInvalid?: boolean;
  /** Stored feed name; default: from the file name. Re-importing a name replaces it. */
  name?: string;
  /** Required for lists; for CSV it fills rows whose category cell is empty or absent. */
  category?: string;
  /** For formats: the category of rows for which neither the file nor the format gives one. */
  fallbackCategory?: string;
  /** Detail values applied to every row that does not give its own (e.g. provider). */
  details?: Partial<Record<DetailField, string>>;
  /** Inside a category, this feed's ranges win over those of lower-priority feeds (default 0). */
  priority?: number;
  /**
   * Categories this source's networks are known not to be in (Apple's relay egress: not vpn);
   * overrides lower-priority feeds' claims on those networks.
   */
  not?: readonly string[];
}

export interface ImportResult extends FeedInfo {
  rows: number;
  byCategory: Partial<Record<Category, number>>;
  format: string;
  /** Lines skipped with --skip-invalid, and the first few reasons. */
  skipped: number;
  skippedExamples: string[];
}

export class FeedImportError extends IpsiftError {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly reason: string,
  ) {
    super('FEED_IMPORT', line > 0 ? `${file}:${line}: ${reason}` : `${file}: ${reason}`);
  }
}

const CSV_COLUMNS = new Set<string>(['network', 'category', ...ALL_DETAIL_FIELDS]);

function makeEntry(
  file: string,
  line: number,
  networkText: string,
  category: string | undefined,
  raw: Partial<Record<DetailField, string>>,
): FeedEntry {
  if (!category) throw new FeedImportError(file, line, 'no category: give a category column or --category');
  if (!isCategory(category)) {
    throw new FeedImportError(file, line, `unknown category ${JSON.stringify(category)}: one of ${CATEGORIES.join(', ')}`);
  }
  const net = parseNetwork(networkText);
  if (!net.ok) throw new FeedImportError(file, line, net.reason);
  const built = buildDetail(category, raw);
  if ('reason' in built) throw new FeedImportError(file, line, built.reason);
  const { family, start, end } = net.network;
  return { family, start, end, category, detail: JSON.stringify(built.detail) };
}

function checkDefaults(file: string, options: ImportOptions): void {
  if (options.category !== undefined && !isCategory(options.category)) {
    throw new FeedImportError(file, 0, `unknown category ${JSON.stringify(options.category)}: one of ${CATEGORIES.join(', ')}`);
  }
  for (const key of Object.keys(options.details ?? {})) {
    if (!(ALL_DETAIL_FIELDS as readonly string[]).includes(key)) throw new FeedImportError(file, 0, `unknown detail field ${key}`);
  }
  const priority = options.priority ?? 0;
  if (!Number.isInteger(priority) || Math.abs(priority) > MAX_PRIORITY) {
    throw new FeedImportError(file, 0, `priority must be an integer from -${MAX_PRIORITY} to ${MAX_PRIORITY}`);
  }
  for (const c of options.not ?? []) {
    if (!isCategory(c)) throw new FeedImportError(file, 0, `unknown category ${JSON.stringify(c)} in not: one of ${CATEGORIES.join(', ')}`);
  }
}

/** For each network, one NOT_IN_CATEGORY range per category the source rules out. */
function withExclusions(file: string, entries: FeedEntry[], not: readonly string[]): FeedEntry[] {
  if (not.length === 0) return entries;
  const claimed = entries.find((e) => not.includes(e.category));
  if (claimed) throw new FeedImportError(file, 0, `the file lists ${claimed.category} networks and also says its networks are not ${claimed.category}`);
  const seen = new Set<string>();
  const out = entries.slice();
  for (const e of entries) {
    const key = `${e.family} ${e.start} ${e.end}`;
    if (seen.has(key)) continue;
    seen.add(key);
    for (const category of not as Category[]) out.push({ family: e.family, start: e.start, end: e.end, category, detail: NOT_IN_CATEGORY });
  }
  return out;
}

export function parseCsvFeed(file: string, text: string, options: ImportOptions): FeedEntry[] {
  const entries: FeedEntry[] = [];
  let columns: string[] | null = null;
  try {
    for (const record of readCsv(text)) {
      if (!columns) {
        columns = record.fields.map((f) => f.trim().toLowerCase());
        const unknown = columns.find((c) => !CSV_COLUMNS.has(c));
        if (unknown !== undefined) throw new FeedImportError(file, record.line, `unknown column ${JSON.stringify(unknown)}`);
        const seen = new Set<string>();
        for (const c of columns) {
          if (seen.has(c)) throw new FeedImportError(file, record.line, `column ${c} appears twice`);
          seen.add(c);
        }
        if (!seen.has('network')) throw new FeedImportError(file, record.line, 'the header has no network column');
        continue;
      }
      if (record.fields.length !== columns.length) {
        throw new FeedImportError(file, record.line, `expected ${columns.length} fields, found ${record.fields.length}`);
      }
      const raw: Partial<Record<DetailField, string>> = { ...options.details };
      let network = '';
      let category = options.category;
      for (let i = 0; i < columns.length; i++) {
        const value = record.fields[i].trim();
        const col = columns[i];
        if (col === 'network') network = value;
        else if (col === 'category') {
          if (value !== '') category = value;
        } else if (value !== '') raw[col as DetailField] = value;
      }
      entries.push(makeEntry(file, record.line, network, category, raw));
    }
  } catch (e) {
    if (e instanceof CsvSyntaxError) throw new FeedImportError(file, e.line, e.message);
    throw e;
  }
  if (!columns) throw new FeedImportError(file, 0, 'the file is empty: a header row is required');
  return entries;
}

/** Rows of a public format → entries; with skipInvalid, bad rows are counted instead of failing. */
function entriesOf(file: string, def: FeedFormatDef, rows: FormatRow[], options: ImportOptions, skipped: string[]): FeedEntry[] {
  const entries: FeedEntry[] = [];
  const fallback = def.defaultCategory ?? options.fallbackCategory;
  if (!options.category && fallback === undefined && rows.some((r) => !r.category)) {
    throw new FeedImportError(file, 0, `a ${def.name} needs --category: the file names no category for some rows (give --category)`);
  }
  for (const r of rows) {
    try {
      entries.push(makeEntry(file, r.line, r.network, options.category ?? r.category ?? fallback, { ...r.details, ...options.details }));
    } catch (e) {
      if (!(e instanceof FeedImportError) || !options.skipInvalid) throw e;
      skipped.push(e.message);
    }
  }
  return entries;
}

export function importFeed(options: ImportOptions): ImportResult {
  const file = options.file;
  checkDefaults(file, options);
  const name = options.name ?? feedNameFromFile(file);
  const nameProblem = checkFeedName(name);
  if (nameProblem) throw new FeedImportError(file, 0, nameProblem);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new FeedImportError(file, 0, `cannot read: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  let format = options.format ?? (file.toLowerCase().endsWith('.csv') ? 'csv' : 'list');
  if (format === 'auto') {
    const firstLine = text.slice(0, text.indexOf('\n') >>> 0).toLowerCase();
    const detected = /(^|,)\s*network\s*(,|$)/.test(firstLine) ? 'csv' : detectFormat(text);
    if (detected instanceof FormatError) throw new FeedImportError(file, detected.line, detected.message);
    format = typeof detected === 'string' ? detected : detected.name;
  }
  const skipped: string[] = [];
  let entries: FeedEntry[];
  if (format === 'csv') entries = parseCsvFeed(file, text, options);
  else {
    const def = formatByName(format);
    if (!def) throw new FeedImportError(file, 0, `unknown format ${JSON.stringify(format)}: csv, auto, ${FEED_FORMATS.map((f) => f.name).join(', ')}`);
    let rows: FormatRow[];
    try {
      rows = def.rows({ file, text });
    } catch (e) {
      if (e instanceof FormatError) throw new FeedImportError(file, e.line, e.message);
      throw e;
    }
    entries = entriesOf(file, def, rows, options, skipped);
  }
  if (entries.length === 0) throw new FeedImportError(file, 0, 'no networks in the file');
  const byCategory: Partial<Record<Category, number>> = {};
  for (const e of entries) byCategory[e.category] = (byCategory[e.category] ?? 0) + 1;
  const rows = entries.length;
  entries = withExclusions(file, entries, options.not ?? []);
  const info = writeFeed(options.dataDir, name, file, entries, options.priority ?? 0);
  return { ...info, rows, byCategory, format, skipped: skipped.length, skippedExamples: skipped.slice(0, 5) };
}
