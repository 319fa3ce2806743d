// Imported feeds, normalised: one file per feed under $DATA_DIR/feeds, one range per line:
//   <family>\t<first, hex>\t<last, hex>\t<category>\t<detail JSON, canonical field order>
// The detail NOT_IN_CATEGORY marks a range the source says is not in the category (see the
// build's overlap rules). The header carries the feed's priority and evidence kind.
// Written whole to a temporary file and renamed, so a feed is there completely or not at all.

import fs from 'node:fs';
import path from 'node:path';
import { isCategory, type Category } from '../model/categories.js';
import type { Family } from '../net/network.js';
import { DEFAULT_EVIDENCE, isEvidenceKind, type EvidenceKind } from './evidence.js';
import { makeDirectory } from '../files.js';
import { feedsDir } from '../data-dir.js';

export interface FeedEntry {
  family: Family;
  start: bigint;
  end: bigint;
  category: Category;
  /** Canonical JSON of the detail object. */
  detail: string;
}

/** A stored range as the build reads it: IPv4 bounds as numbers, IPv6 as bigints. */
export interface StoredRange {
  family: Family;
  start: number | bigint;
  end: number | bigint;
  category: Category;
  detail: string;
}

export interface FeedInfo {
  name: string;
  file: string;
  bytes: number;
  /** Inside a category and evidence band, ranges of a higher-priority feed win (default 0). */
  priority: number;
  /** What kind of evidence the feed is (evidence.ts): its band comes before priority. */
  evidence: EvidenceKind;
  /** The absolute path it was imported from (null: a feed written before paths were kept). */
  source: string | null;
  /** When it was imported (its file's modification time). */
  importedMs: number;
  /** The publisher's terms, as its source states them (null: none given). */
  licence: string | null;
  /** Whether the terms let the data travel in exports (false: left out unless the operator opts in). */
  redistribute: boolean;
  /** Where it was fetched from, credentials masked (null: a file imported by hand). */
  origin: string | null;
}

/** The terms a feed's source states, carried in its header to the build's exports. */
export interface FeedTerms {
  licence?: string;
  redistribute?: boolean;
  origin?: string;
}

/** The detail of a range the feed says is not in its category. */
export const NOT_IN_CATEGORY = '-';

export const MAX_PRIORITY = 100;

const HEADER = '# ipsift feed 1';
const PRIORITY_LINE = /^# priority: (-?\d+)$/m;
const EVIDENCE_LINE = /^# evidence: ([a-z_]+)$/m;
const SOURCE_PATH_LINE = /^# source-path: (.*)$/m;
const LICENCE_LINE = /^# licence: (.*)$/m;
const ORIGIN_LINE = /^# origin: (.*)$/m;
const NO_REDISTRIBUTION_LINE = /^# redistribute: no$/m;
const FEED_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

export function checkFeedName(name: string): string | null {
  return FEED_NAME.test(name) ? null : `feed name must match ${FEED_NAME.source}: ${JSON.stringify(name)}`;
}

export function feedNameFromFile(file: string): string {
  return path
    .basename(file)
    .replace(/\.[^.]*$/, '')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 64);
}

function hex(v: bigint, family: Family): string {
  return v.toString(16).padStart(family === 4 ? 8 : 32, '0');
}

export function writeFeed(
  dataDir: string,
  name: string,
  source: string,
  entries: readonly FeedEntry[],
  priority = 0,
  evidence: EvidenceKind = DEFAULT_EVIDENCE,
  terms: FeedTerms = {},
): FeedInfo {
  const dir = feedsDir(dataDir);
  makeDirectory(dir);
  const file = path.join(dir, `${name}.feed`);
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, 'w', 0o644);
  try {
    const safe = (t: string): string => t.replace(/[\x00-\x1f\x7f]/g, '?');
    let chunk = `${HEADER}\n# priority: ${priority}\n# evidence: ${evidence}\n# source: ${safe(path.basename(source))}\n# source-path: ${safe(path.resolve(source))}\n`;
    if (terms.licence !== undefined) chunk += `# licence: ${safe(terms.licence)}\n`;
    if (terms.origin !== undefined) chunk += `# origin: ${safe(terms.origin)}\n`;
    if (terms.redistribute === false) chunk += '# redistribute: no\n';
    for (const e of entries) {
      chunk += `${e.family}\t${hex(e.start, e.family)}\t${hex(e.end, e.family)}\t${e.category}\t${e.detail}\n`;
      if (chunk.length > 1 << 20) {
        fs.writeSync(fd, chunk);
        chunk = '';
      }
    }
    fs.writeSync(fd, chunk);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  const stat = fs.statSync(file);
  return {
    name,
    file,
    bytes: stat.size,
    importedMs: stat.mtimeMs,
    priority,
    evidence,
    source: path.resolve(source),
    licence: terms.licence ?? null,
    redistribute: terms.redistribute !== false,
    origin: terms.origin ?? null,
  };
}

type Header = Pick<FeedInfo, 'priority' | 'evidence' | 'source' | 'licence' | 'redistribute' | 'origin'>;

/** Priority, evidence, source path and terms from a feed's header (feeds written before them: 0, a list, null, no terms). */
function readHeader(file: string): Header {
  const fd = fs.openSync(file, 'r');
  try {
    const head = Buffer.alloc(8192);
    const text = head.toString('utf8', 0, fs.readSync(fd, head, 0, head.length, 0));
    const p = PRIORITY_LINE.exec(text);
    const e = EVIDENCE_LINE.exec(text);
    const s = SOURCE_PATH_LINE.exec(text);
    const header = text.slice(0, text.search(/^[^#]/m) >>> 0);
    return {
      priority: p ? Number(p[1]) : 0,
      evidence: e && isEvidenceKind(e[1]) ? e[1] : DEFAULT_EVIDENCE,
      source: s ? s[1] : null,
      licence: LICENCE_LINE.exec(header)?.[1] ?? null,
      redistribute: !NO_REDISTRIBUTION_LINE.test(header),
      origin: ORIGIN_LINE.exec(header)?.[1] ?? null,
    };
  } finally {
    fs.closeSync(fd);
  }
}

/** The imported feed of that name, or null. */
export function findFeed(dataDir: string, name: string): FeedInfo | null {
  const file = path.join(feedsDir(dataDir), `${name}.feed`);
  if (!fs.existsSync(file)) return null;
  const stat = fs.statSync(file);
  return { name, file, bytes: stat.size, importedMs: stat.mtimeMs, ...readHeader(file) };
}

/** Imported feeds in name order (the build reads them in this order). */
export function listFeeds(dataDir: string): FeedInfo[] {
  const dir = feedsDir(dataDir);
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.feed'))
    .sort()
    .map((f) => {
      const file = path.join(dir, f);
      const stat = fs.statSync(file);
      return { name: f.slice(0, -'.feed'.length), file, bytes: stat.size, importedMs: stat.mtimeMs, ...readHeader(file) };
    });
}

export function removeFeed(dataDir: string, name: string): boolean {
  const file = path.join(feedsDir(dataDir), `${name}.feed`);
  if (!fs.existsSync(file)) return false;
  fs.unlinkSync(file);
  return true;
}

/** Reads a stored feed; the file was validated at import, so a malformed line is corruption. */
export function* readFeed(file: string): Generator<StoredRange> {
  const text = fs.readFileSync(file, 'latin1');
  let at = 0;
  let lineNo = 0;
  while (at < text.length) {
    let nl = text.indexOf('\n', at);
    if (nl < 0) nl = text.length;
    const line = text.slice(at, nl);
    at = nl + 1;
    lineNo++;
    if (line === '' || line.charCodeAt(0) === 35) continue;
    const t1 = line.indexOf('\t');
    const t2 = line.indexOf('\t', t1 + 1);
    const t3 = line.indexOf('\t', t2 + 1);
    const t4 = line.indexOf('\t', t3 + 1);
    const category = line.slice(t3 + 1, t4);
    const family = line.charCodeAt(0) === 52 ? 4 : 6;
    if (t4 < 0 || !isCategory(category)) throw new Error(`${file}:${lineNo}: corrupt feed line`);
    yield {
      family,
      start: family === 4 ? parseInt(line.slice(t1 + 1, t2), 16) : BigInt('0x' + line.slice(t1 + 1, t2)),
      end: family === 4 ? parseInt(line.slice(t2 + 1, t3), 16) : BigInt('0x' + line.slice(t2 + 1, t3)),
      category,
      // Stored as latin1 above; detail JSON may hold UTF-8 provider names.
      detail: Buffer.from(line.slice(t4 + 1), 'latin1').toString('utf8'),
    };
  }
}
