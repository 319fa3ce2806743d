// `ipsift feed import`: the canonical CSV (DESIGN.md §3) and the public formats of
// formats.ts (plain lists among them). The whole file is
// validated before anything is written; the first bad line fails the import with
// file, line and reason.

import fs from 'node:fs';
import path from 'node:path';
import { CATEGORIES, DETAIL_FIELDS, isCategory, type Category, type DetailField } from '../model/categories.js';
import { parseNetwork } from '../net/network.js';
import { CsvSyntaxError, readCsv } from './csv.js';
import { ALL_DETAIL_FIELDS, buildDetail } from './details.js';
import {
  MAX_PRIORITY,
  NOT_IN_CATEGORY,
  checkFeedName,
  feedNameFromFile,
  findFeed,
  writeFeed,
  type FeedEntry,
  type FeedInfo,
  type FeedTerms,
} from './feed-store.js';
import { FEED_FORMATS, FormatError, detectFormat, formatByName, listToken, type FeedFormatDef, type FormatRow } from './formats.js';
import { IpsiftError } from '../errors.js';
import { DEFAULT_EVIDENCE, EVIDENCE, EVIDENCE_KINDS, isEvidenceKind, type EvidenceKind } from './evidence.js';
import { claimProblem } from './claims.js';
import { providerNamed, unknownProvidersLine } from '../model/providers.js';

/** csv, auto, or a name in FEED_FORMATS (list, tor-exit-addresses, misp, cloud-json, aws). */
export type FeedFormat = string;

export interface ImportOptions {
  dataDir: string;
  file: string;
  /** Default `auto`: detected by content (describeFile says what was seen when it cannot be read). */
  format?: FeedFormat;
  /** Skip malformed lines (counted in the result) instead of failing the import. */
  skipInvalid?: boolean;
  /**
   * Stored feed name; default: from the file name. Re-importing the same file replaces its
   * feed; a feed of that name from another file is replaced only with `replace`.
   */
  name?: string;
  /** Replace a feed of the same name imported from another file (else FeedImportError). */
  replace?: boolean;
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
  /** What kind of evidence the file is (evidence.ts); default `list`. */
  evidence?: string;
  /**
   * Accept networks larger than a /8 (IPv4) or /16 (IPv6), or in special-purpose blocks
   * (claims.ts): without it they are refused (skipped and counted with skipInvalid).
   */
  allowLargeBlocks?: boolean;
  /** Recorded as where the feed came from, when the file read is a download beside it. */
  sourcePath?: string;
  /** The source's licence and whether it may be redistributed, carried to the build's exports. */
  terms?: FeedTerms;
  /**
   * The most entries the file may hold, and the setting to name when it holds more: refused
   * before parsing where the format has a line an entry (a list, a CSV), else as the entries
   * are made. A list of millions of /32s would otherwise cost gigabytes before any check.
   */
  maxEntries?: { limit: number; setting: string };
  /** A last check of the whole file before it replaces the feed: a reason to refuse it, or null. */
  accept?: (rows: number, skipped: number) => string | null;
}

export interface ImportResult extends FeedInfo {
  rows: number;
  /** What the import left out or assumed, for the report (a column that does not apply, …). */
  notes: string[];
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
/** Other names of the network column in CSVs found in the wild. */
const NETWORK_ALIASES = new Set(['ip', 'ips', 'ip_address', 'ipaddress', 'address', 'addr', 'cidr', 'prefix', 'subnet', 'range', 'network_range']);

/** A header cell as a column name: case, spaces and hyphens do not matter ("First Seen" is first_seen). */
function columnName(cell: string): string {
  const c = cell
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');
  return NETWORK_ALIASES.has(c) ? 'network' : c;
}

/** The first line that is not empty or a comment. */
function firstLine(text: string): string {
  for (const l of text.split(/\r?\n/, 50)) if (l.trim() !== '' && !/^\s*[#;]/.test(l)) return l.trim();
  return '';
}

/** Whether the first line is a CSV header naming a network column (any spelling). */
function hasNetworkHeader(text: string): boolean {
  const cells = firstLine(text).split(',');
  return cells.length > 1 && cells.some((c) => columnName(c.replace(/^"|"$/g, '')) === 'network');
}

/** What the file looks like, for refusals: its first line and what auto detection makes of it. */
export function describeFile(text: string): string {
  const first = firstLine(text);
  const shown = first.length > 60 ? `${first.slice(0, 60)}…` : first;
  const detected = hasNetworkHeader(text) ? 'csv' : detectFormat(text);
  const reads = detected instanceof FormatError ? 'no format reads it by itself' : `it reads as ${typeof detected === 'string' ? detected : detected.name}`;
  return `the file starts ${JSON.stringify(shown)}; ${reads}`;
}

/** Dates as found in the wild: a timestamp's day (UTC) is the date. */
const dayOf = (text: string): string => (/^\d{4}-\d{2}-\d{2}[T ]\d/.test(text) ? text.slice(0, 10) : text);

/** What every row of one import shares: its options, and what it tells the report. */
interface EntryContext {
  allowLargeBlocks: boolean;
  /** Provider names the registry does not know (kept as written). */
  unknownProviders: Set<string>;
  maxEntries?: { limit: number; setting: string };
}

function makeEntry(
  file: string,
  line: number,
  networkText: string,
  category: string | undefined,
  raw: Partial<Record<DetailField, string>>,
  ctx: EntryContext,
): FeedEntry {
  if (!category) throw new FeedImportError(file, line, 'no category: give a category column or --category');
  if (!isCategory(category)) {
    throw new FeedImportError(file, line, `unknown category ${JSON.stringify(category)}: one of ${CATEGORIES.join(', ')}`);
  }
  const net = parseNetwork(networkText);
  if (!net.ok) throw new FeedImportError(file, line, net.reason);
  const problem = ctx.allowLargeBlocks ? null : claimProblem(net.network);
  if (problem) throw new FeedImportError(file, line, `${networkText}: ${problem} (--allow-large-blocks imports it anyway)`);
  for (const f of ['first_seen', 'last_seen'] as const) if (raw[f] !== undefined) raw[f] = dayOf(raw[f]);
  if (raw.provider) {
    const known = providerNamed(raw.provider);
    if (known) raw.provider = known.name;
    else ctx.unknownProviders.add(raw.provider.trim());
  }
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
  if (options.evidence !== undefined && !isEvidenceKind(options.evidence)) {
    throw new FeedImportError(file, 0, `unknown evidence ${JSON.stringify(options.evidence)}: one of ${EVIDENCE_KINDS.join(', ')}`);
  }
}

/**
 * What the evidence kind says beyond the rows: the vpn method and confidence where a row
 * gives none, and for an aggregate, each vpn network as hosting too (no provider: the list
 * does not say whose datacenter).
 */
function withEvidence(entries: FeedEntry[], kind: EvidenceKind): FeedEntry[] {
  const rule = EVIDENCE[kind];
  if (rule.method === null && rule.vpnAlso.length === 0) return entries;
  const stamp = rule.method === null ? {} : { method: rule.method, confidence: rule.confidence };
  const out: FeedEntry[] = [];
  for (const e of entries) {
    if (e.category !== 'vpn' || e.detail === NOT_IN_CATEGORY) {
      out.push(e);
      continue;
    }
    const detail = JSON.parse(e.detail) as Record<string, unknown>;
    const merged = buildDetail('vpn', Object.fromEntries(Object.entries({ ...stamp, ...detail }).map(([k, v]) => [k, String(v)])));
    out.push({ ...e, detail: 'detail' in merged ? JSON.stringify(merged.detail) : e.detail });
    for (const category of rule.vpnAlso) {
      const also = buildDetail(category, { confidence: rule.confidence, ...(typeof detail.last_seen === 'string' ? { last_seen: detail.last_seen } : {}) });
      if ('detail' in also) out.push({ ...e, category, detail: JSON.stringify(also.detail) });
    }
  }
  return out;
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

export function parseCsvFeed(file: string, text: string, options: ImportOptions, ctx: EntryContext, skipped?: string[], notes?: Set<string>): FeedEntry[] {
  const entries: FeedEntry[] = [];
  let columns: string[] | null = null;
  try {
    for (const record of readCsv(text)) {
      if (!columns) {
        columns = record.fields.map(columnName);
        const unknown = columns.find((c) => !CSV_COLUMNS.has(c));
        if (unknown !== undefined) {
          throw new FeedImportError(
            file,
            record.line,
            `unknown column ${JSON.stringify(unknown)}: columns are network (or ip, address, cidr, prefix), category, ${ALL_DETAIL_FIELDS.join(', ')}`,
          );
        }
        const seen = new Set<string>();
        for (const c of columns) {
          if (seen.has(c)) throw new FeedImportError(file, record.line, `column ${c} appears twice`);
          seen.add(c);
        }
        if (!seen.has('network'))
          throw new FeedImportError(file, record.line, `the header has no network column (or ip, address, cidr, prefix); ${describeFile(text)}`);
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
      // A first-seen date is an observation the categories without one (vpn, hosting …) do
      // not keep: left out and said, not a failure (a NordVPN list's "First Seen").
      if (raw.first_seen !== undefined && category && isCategory(category) && !DETAIL_FIELDS[category].includes('first_seen')) {
        delete raw.first_seen;
        notes?.add(`first_seen left out: ${category} details have no first_seen`);
      }
      roomFor(file, entries, ctx);
      try {
        entries.push(makeEntry(file, record.line, network, category, raw, ctx));
      } catch (e) {
        if (!(e instanceof FeedImportError) || !options.skipInvalid) throw e;
        skipped?.push(e.message);
      }
    }
  } catch (e) {
    if (e instanceof CsvSyntaxError) throw new FeedImportError(file, e.line, e.message);
    throw e;
  }
  if (!columns) throw new FeedImportError(file, 0, 'the file is empty: a header row is required');
  return entries;
}

/** Rows of a public format → entries; with skipInvalid, bad rows are counted instead of failing. */
function entriesOf(file: string, def: FeedFormatDef, rows: FormatRow[], options: ImportOptions, ctx: EntryContext, skipped: string[]): FeedEntry[] {
  const entries: FeedEntry[] = [];
  const fallback = def.defaultCategory ?? options.fallbackCategory;
  if (!options.category && fallback === undefined && rows.some((r) => !r.category)) {
    throw new FeedImportError(
      file,
      0,
      `a ${def.name} needs --category: the file names no category for some rows; give --category (${CATEGORIES.join(', ')}) and, where you know it, --provider`,
    );
  }
  for (const r of rows) {
    roomFor(file, entries, ctx);
    try {
      entries.push(makeEntry(file, r.line, r.network, options.category ?? r.category ?? fallback, { ...r.details, ...options.details }, ctx));
    } catch (e) {
      if (!(e instanceof FeedImportError) || !options.skipInvalid) throw e;
      skipped.push(e.message);
    }
  }
  return entries;
}

/** Lines that hold anything but white space. */
function lineCount(text: string): number {
  let n = 0;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    for (let i = start; i < end; i++) {
      const c = text.charCodeAt(i);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0d) {
        n++;
        break;
      }
    }
    start = end + 1;
  }
  return n;
}

function tooMany(file: string, max: { limit: number; setting: string }, found: string): FeedImportError {
  return new FeedImportError(
    file,
    0,
    `more than ${max.limit} entries (${found}), the most one source may hold (${max.setting}): refused before it is imported; raise ${max.setting} if the list is really this large`,
  );
}

/** Refuses the file once it holds its limit of entries and has another to add (never skipped as a bad line). */
function roomFor(file: string, entries: readonly FeedEntry[], ctx: EntryContext): void {
  if (ctx.maxEntries && entries.length >= ctx.maxEntries.limit) throw tooMany(file, ctx.maxEntries, `${entries.length + 1} or more`);
}

export function importFeed(options: ImportOptions): ImportResult {
  const file = options.file;
  checkDefaults(file, options);
  const name = options.name ?? feedNameFromFile(file);
  const nameProblem = checkFeedName(name);
  if (nameProblem) throw new FeedImportError(file, 0, nameProblem);
  if (!options.replace) {
    const earlier = findFeed(options.dataDir, name);
    if (earlier && earlier.source !== path.resolve(file)) {
      throw new FeedImportError(
        file,
        0,
        `a feed named ${name} is already imported (from ${earlier.source ?? 'a file it does not name'}, ${earlier.bytes} bytes): give --name to import this file beside it, or --replace to replace that feed`,
      );
    }
  }
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new FeedImportError(file, 0, `cannot read: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  let format = options.format ?? 'auto';
  if (format === 'auto') {
    // A named format's layout first; then a headed CSV (a network column in any spelling, or
    // a .csv file whose first line is not an address); else a plain list.
    const detected = detectFormat(text);
    if (detected instanceof FormatError) throw new FeedImportError(file, detected.line, `${detected.message}; ${describeFile(text)}`);
    const csvFile = file.toLowerCase().endsWith('.csv') && !parseNetwork(listToken(firstLine(text))).ok;
    format = detected.name === 'list' && (hasNetworkHeader(text) || csvFile) ? 'csv' : detected.name;
  }
  const skipped: string[] = [];
  const notes = new Set<string>();
  const ctx: EntryContext = { allowLargeBlocks: options.allowLargeBlocks === true, unknownProviders: new Set(), maxEntries: options.maxEntries };
  // A line an entry at most (a CSV has its header too): too many lines is too many entries.
  if (options.maxEntries && (format === 'csv' || format === 'list')) {
    const lines = lineCount(text) - (format === 'csv' ? 1 : 0);
    if (lines > options.maxEntries.limit) throw tooMany(file, options.maxEntries, `${lines} lines`);
  }
  let entries: FeedEntry[];
  if (format === 'csv') entries = parseCsvFeed(file, text, options, ctx, skipped, notes);
  else {
    const def = formatByName(format);
    if (!def) throw new FeedImportError(file, 0, `unknown format ${JSON.stringify(format)}: csv, auto, ${FEED_FORMATS.map((f) => f.name).join(', ')}`);
    // A format asked for by name must match the file: a format states categories and
    // providers (Tor Project, Mullvad …), and must never stamp them on a file of another kind.
    if (def.name !== 'list' && !def.detect(text)) {
      throw new FeedImportError(file, 0, `not a ${def.name} file (${def.summary}): ${describeFile(text)}`);
    }
    let rows: FormatRow[];
    try {
      rows = def.rows({ file, text });
    } catch (e) {
      if (e instanceof FormatError) throw new FeedImportError(file, e.line, e.message);
      throw e;
    }
    entries = entriesOf(file, def, rows, options, ctx, skipped);
  }
  if (entries.length === 0) throw new FeedImportError(file, 0, 'no networks in the file');
  const refusal = options.accept?.(entries.length, skipped.length);
  if (refusal) throw new FeedImportError(file, 0, refusal);
  const byCategory: Partial<Record<Category, number>> = {};
  for (const e of entries) byCategory[e.category] = (byCategory[e.category] ?? 0) + 1;
  const rows = entries.length;
  const unknown = unknownProvidersLine([...ctx.unknownProviders]);
  if (unknown) notes.add(unknown);
  const evidence = (options.evidence ?? DEFAULT_EVIDENCE) as EvidenceKind;
  entries = withEvidence(entries, evidence);
  entries = withExclusions(file, entries, [...new Set([...(options.not ?? []), ...EVIDENCE[evidence].rulesOut])]);
  const info = writeFeed(options.dataDir, name, options.sourcePath ?? file, entries, options.priority ?? 0, evidence, options.terms);
  return { ...info, rows, notes: [...notes], byCategory, format, skipped: skipped.length, skippedExamples: skipped.slice(0, 5) };
}
