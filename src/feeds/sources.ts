// The sources a deployment imports, configured in JSON: the registry shipped with ipsift
// (config/sources/public.json, SOURCES=public) and a user's own file (SOURCES_FILE), in one
// shape: [{name, path | url, format, category, fallback_category, provider, details,
// skip_invalid, priority, not, evidence, allow_large_blocks, interval, max_bytes, licence,
// note, copy, format_doc}]. Paths are relative to the file. refresh.ts fetches and imports them.

import fs from 'node:fs';
import path from 'node:path';
import type { DetailField } from '../model/categories.js';
import { IpsiftError } from '../errors.js';

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
  /** How often the source is fetched again (default a day). */
  intervalMs?: number;
  /** The most a fetch may bring (default SOURCES_MAX_BYTES). */
  maxBytes?: number;
  /** Registry facts shown to operators: the licence as the upstream states it, what the list is. */
  licence?: string;
  note?: string;
  /** A public verbatim copy (owner/repo/path on GitHub) the format was checked against; null: none. */
  copy?: string | null;
  /** Where the format is documented, for a source with no copy to check against. */
  formatDoc?: string;
}

export class SourcesError extends IpsiftError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('SOURCES', message, options);
  }
}

export const DEFAULT_INTERVAL_MS = 86_400_000;
const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "90m", "1h", "1d" → ms; at least a minute. */
export function parseInterval(text: string): number | null {
  const m = /^(\d{1,5})([mhd])$/.exec(text);
  const ms = m ? Number(m[1]) * UNIT_MS[m[2]] : NaN;
  return ms >= 60_000 ? ms : null;
}

/** The text of an interval, as a registry writes it. */
export function intervalText(ms: number): string {
  for (const unit of ['d', 'h', 'm']) if (ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  return `${ms}ms`;
}

const optionalString = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

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
    if (!/^[a-z0-9][a-z0-9._-]{0,63}$/.test(name)) throw new SourcesError(`${where}: name must match [a-z0-9][a-z0-9._-]* (64 characters at most)`);
    if (names.has(name)) throw new SourcesError(`${where}: name ${name} is used twice`);
    names.add(name);
    const hasPath = typeof raw.path === 'string';
    const hasUrl = typeof raw.url === 'string';
    if (hasPath === hasUrl) throw new SourcesError(`${where}: give exactly one of path and url`);
    if (hasUrl && !/^https?:\/\/[^/\s]+/.test(raw.url as string)) throw new SourcesError(`${where}: url must be http(s)://host/…`);
    const details = { ...((raw.details ?? {}) as Partial<Record<DetailField, string>>) };
    if (raw.priority !== undefined && !Number.isInteger(raw.priority)) throw new SourcesError(`${where}: priority must be an integer`);
    if (raw.not !== undefined && !(Array.isArray(raw.not) && raw.not.every((c) => typeof c === 'string'))) {
      throw new SourcesError(`${where}: not must be an array of categories`);
    }
    let intervalMs: number | undefined;
    if (raw.interval !== undefined) {
      intervalMs = parseInterval(String(raw.interval)) ?? undefined;
      if (intervalMs === undefined) throw new SourcesError(`${where}: interval must be minutes, hours or days of at least a minute (90m, 1h, 1d)`);
    }
    if (raw.max_bytes !== undefined && !(Number.isInteger(raw.max_bytes) && (raw.max_bytes as number) > 0))
      throw new SourcesError(`${where}: max_bytes must be a positive integer`);
    if (typeof raw.provider === 'string') details.provider = raw.provider;
    return {
      name,
      path: hasPath ? path.resolve(path.dirname(file), raw.path as string) : undefined,
      url: hasUrl ? (raw.url as string) : undefined,
      format: typeof raw.format === 'string' ? raw.format : 'auto',
      category: optionalString(raw.category),
      fallbackCategory: optionalString(raw.fallback_category),
      details,
      skipInvalid: raw.skip_invalid === true,
      priority: raw.priority as number | undefined,
      not: raw.not as string[] | undefined,
      evidence: optionalString(raw.evidence),
      allowLargeBlocks: raw.allow_large_blocks === true,
      intervalMs,
      maxBytes: raw.max_bytes as number | undefined,
      licence: optionalString(raw.licence),
      note: optionalString(raw.note),
      copy: raw.copy === null ? null : optionalString(raw.copy),
      formatDoc: optionalString(raw.format_doc),
    };
  });
}
