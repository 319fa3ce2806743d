// The sources a deployment imports before each build, configured once in a JSON file:
// [{name, path | url, format, category, fallback_category, provider, details,
// skip_invalid, priority, not, evidence, allow_large_blocks}]. Paths are
// relative to the file. A URL is fetched (streamed, with a timeout) into
// DATA_DIR/sources/<name>; when a fetch fails the last good copy is used, and the report
// says so.

import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { DetailField } from '../model/categories.js';
import { FeedImportError, importFeed, type ImportResult } from './import.js';
import { IpsiftError } from '../errors.js';
import { makeDirectory } from '../files.js';
import { sourcesDir } from '../data-dir.js';

export interface Source {
  name: string;
  path?: string;
  url?: string;
  format: string;
  category?: string;
  /** Category for rows the file and its format leave without one. */
  fallbackCategory?: string;
  details: Partial<Record<DetailField, string>>;
  skipInvalid: boolean;
  /** See ImportOptions. */
  priority?: number;
  not?: string[];
  evidence?: string;
  allowLargeBlocks?: boolean;
}

export interface SourceReport {
  name: string;
  ok: boolean;
  rows: number;
  skipped: number;
  /** The first few reasons for skipped lines. */
  skippedExamples: string[];
  /** For URLs: 'fetched', or 'stale' when the last good copy was used. */
  fetch?: 'fetched' | 'stale';
  error?: string;
  byCategory?: ImportResult['byCategory'];
}

export class SourcesError extends IpsiftError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('SOURCES', message, options);
  }
}

export const FETCH_TIMEOUT_MS = 60_000;

export function loadSources(file: string): Source[] {
  let doc: unknown;
  try {
    doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new SourcesError(`${file}: ${(e as Error).message}`);
  }
  const list = Array.isArray(doc) ? doc : (doc as { sources?: unknown }).sources;
  if (!Array.isArray(list)) throw new SourcesError(`${file}: expected an array of sources (or {sources: [...]})`);
  const names = new Set<string>();
  return list.map((raw: Record<string, unknown>, i) => {
    const where = `${file}: sources[${i}]`;
    const name = String(raw.name ?? '');
    if (!/^[a-z0-9][a-z0-9._-]{0,99}$/.test(name)) throw new SourcesError(`${where}: name must match [a-z0-9][a-z0-9._-]*`);
    if (names.has(name)) throw new SourcesError(`${where}: name ${name} is used twice`);
    names.add(name);
    const hasPath = typeof raw.path === 'string';
    const hasUrl = typeof raw.url === 'string';
    if (hasPath === hasUrl) throw new SourcesError(`${where}: give exactly one of path and url`);
    if (hasUrl && !/^https?:\/\//.test(raw.url as string)) throw new SourcesError(`${where}: url must be http(s)`);
    const details = { ...((raw.details ?? {}) as Partial<Record<DetailField, string>>) };
    if (raw.priority !== undefined && !Number.isInteger(raw.priority)) throw new SourcesError(`${where}: priority must be an integer`);
    if (raw.not !== undefined && !(Array.isArray(raw.not) && raw.not.every((c) => typeof c === 'string'))) {
      throw new SourcesError(`${where}: not must be an array of categories`);
    }
    if (typeof raw.provider === 'string') details.provider = raw.provider;
    return {
      name,
      path: hasPath ? path.resolve(path.dirname(file), raw.path as string) : undefined,
      url: hasUrl ? (raw.url as string) : undefined,
      format: typeof raw.format === 'string' ? raw.format : 'auto',
      category: typeof raw.category === 'string' ? raw.category : undefined,
      fallbackCategory: typeof raw.fallback_category === 'string' ? raw.fallback_category : undefined,
      details,
      skipInvalid: raw.skip_invalid === true,
      priority: raw.priority as number | undefined,
      not: raw.not as string[] | undefined,
      evidence: typeof raw.evidence === 'string' ? raw.evidence : undefined,
      allowLargeBlocks: raw.allow_large_blocks === true,
    };
  });
}

/** Fetches a URL into `target`, streamed, within the timeout; the old copy survives a failure. */
async function fetchTo(url: string, target: string): Promise<void> {
  const res = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
  const tmp = `${target}.${process.pid}.part`;
  try {
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), fs.createWriteStream(tmp));
    fs.renameSync(tmp, target);
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

/** Imports every source as a feed named after it; a failing source is reported, not fatal. */
export async function importSources(dataDir: string, sources: readonly Source[]): Promise<SourceReport[]> {
  const reports: SourceReport[] = [];
  for (const s of sources) {
    const report: SourceReport = { name: s.name, ok: false, rows: 0, skipped: 0, skippedExamples: [] };
    let file = s.path;
    if (s.url) {
      const dir = sourcesDir(dataDir);
      makeDirectory(dir);
      file = path.join(dir, s.name);
      try {
        await fetchTo(s.url, file);
        report.fetch = 'fetched';
      } catch (e) {
        if (!fs.existsSync(file)) {
          reports.push({ ...report, error: `fetch failed and no earlier copy: ${(e as Error).message}` });
          continue;
        }
        report.fetch = 'stale';
        report.error = `fetch failed (${(e as Error).message}); the last good copy was used`;
      }
    }
    try {
      const r = importFeed({
        dataDir,
        file: file!,
        name: s.name,
        // A source owns its name: each run replaces what the last one imported.
        replace: true,
        format: s.format,
        category: s.category,
        fallbackCategory: s.fallbackCategory,
        details: s.details,
        skipInvalid: s.skipInvalid,
        priority: s.priority,
        not: s.not,
        evidence: s.evidence,
        allowLargeBlocks: s.allowLargeBlocks,
      });
      reports.push({ ...report, ok: true, rows: r.rows, skipped: r.skipped, skippedExamples: r.skippedExamples, byCategory: r.byCategory });
    } catch (e) {
      if (!(e instanceof FeedImportError)) throw e;
      reports.push({ ...report, error: e.message });
    }
  }
  return reports;
}
