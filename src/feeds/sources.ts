// The sources a deployment imports, configured in JSON: the registry shipped with ipsift
// (config/sources/public.json, SOURCES=public) and a user's own file (SOURCES_FILE), in one
// shape: [{name, path | url, find, format, category, fallback_category, provider, details,
// skip_invalid, priority, not, evidence, allow_large_blocks, interval, max_age, kind,
// max_bytes, licence, redistribute, note, copy, format_doc, frozen}]. Paths are relative to the file. refresh.ts fetches and imports them.

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
  /** False where the terms do not let the data be passed on: the build leaves it out of exports unless EXPORTS_RESTRICTED names it. */
  redistribute?: boolean;
  note?: string;
  /** A public verbatim copy (owner/repo/path on GitHub) the format was checked against; null: none. */
  copy?: string | null;
  /** Where the format is documented, for a source with no copy to check against. */
  formatDoc?: string;
  /** Whose publication it is (registry entries say; a user's own file may). */
  kind?: SourceKind;
  /** How long its content may go unchanged before it is stale (then its claims fall a band; past twice this, they stop counting). */
  maxAgeMs?: number;
  /** The URL is a page; the file to fetch is the first match of this pattern in it (a link that changes every week). */
  find?: RegExp;
  /** From the registry shipped with ipsift (its hosts are public: none may resolve to an internal address). */
  registry?: boolean;
  /** Why the registry holds the source as frozen (its publisher stopped): `public` leaves it out; naming it still takes it. */
  frozen?: string;
}

/**
 * Whose publication a source is: the operator's own at its own host, a third party's copy or
 * derivation of one operator's, or a mix of many operators'. Inside an evidence band a
 * first-party source's claims win over a mirror's.
 */
export const SOURCE_KINDS = ['first_party', 'mirror', 'aggregate'] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];
const KIND_PRIORITY: Record<SourceKind, number> = { first_party: 10, mirror: 0, aggregate: 0 };

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

const FIELDS = new Set([
  'name',
  'path',
  'url',
  'find',
  'format',
  'category',
  'fallback_category',
  'provider',
  'details',
  'skip_invalid',
  'priority',
  'not',
  'evidence',
  'allow_large_blocks',
  'interval',
  'max_age',
  'kind',
  'max_bytes',
  'licence',
  'note',
  'copy',
  'format_doc',
  'frozen',
  'redistribute',
]);

/** An http(s) URL whose host is a host name or address (`https://../x` is not). */
function validUrl(text: string): boolean {
  if (!/^https?:\/\/[^/\s]+/.test(text)) return false;
  try {
    return isHostName(new URL(text).hostname);
  } catch {
    return false;
  }
}

/** A DNS name of labels (letters, digits, hyphens), an IPv4 address or a bracketed IPv6 one. */
export function isHostName(host: string): boolean {
  return /^\[[0-9a-f:.]+\]$/i.test(host) || /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i.test(host);
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
    // A misspelt field would otherwise be a setting silently not applied.
    const unknown = Object.keys(raw).find((k) => !FIELDS.has(k));
    if (unknown !== undefined) throw new SourcesError(`${where}: unknown field ${JSON.stringify(unknown)}: a source takes ${[...FIELDS].join(', ')}`);
    const name = String(raw.name ?? '');
    if (!/^[a-z0-9][a-z0-9._-]{0,63}$/.test(name)) throw new SourcesError(`${where}: name must match [a-z0-9][a-z0-9._-]* (64 characters at most)`);
    if (names.has(name)) throw new SourcesError(`${where}: name ${name} is used twice`);
    names.add(name);
    const hasPath = typeof raw.path === 'string';
    const hasUrl = typeof raw.url === 'string';
    if (hasPath === hasUrl) throw new SourcesError(`${where}: give exactly one of path and url`);
    if (hasUrl && !validUrl(raw.url as string)) throw new SourcesError(`${where}: url must be http(s)://host/… with a host name or address as its host`);
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
    if (raw.redistribute !== undefined && typeof raw.redistribute !== 'boolean') throw new SourcesError(`${where}: redistribute must be true or false`);
    if (raw.kind !== undefined && !(SOURCE_KINDS as readonly unknown[]).includes(raw.kind))
      throw new SourcesError(`${where}: kind must be one of ${SOURCE_KINDS.join(', ')}`);
    const kind = raw.kind as SourceKind | undefined;
    let maxAgeMs: number | undefined;
    if (raw.max_age !== undefined) {
      maxAgeMs = parseInterval(String(raw.max_age)) ?? undefined;
      if (maxAgeMs === undefined) throw new SourcesError(`${where}: max_age must be minutes, hours or days of at least a minute (6h, 7d, 30d)`);
    }
    let find: RegExp | undefined;
    if (raw.find !== undefined) {
      if (!hasUrl) throw new SourcesError(`${where}: find needs a url (the page the link is found on)`);
      try {
        find = new RegExp(String(raw.find));
      } catch (e) {
        throw new SourcesError(`${where}: find is not a regular expression: ${(e as Error).message}`);
      }
    }
    const priority =
      raw.priority === undefined && kind === undefined ? undefined : ((raw.priority as number | undefined) ?? 0) + (kind ? KIND_PRIORITY[kind] : 0);
    return {
      name,
      path: hasPath ? path.resolve(path.dirname(file), raw.path as string) : undefined,
      url: hasUrl ? (raw.url as string) : undefined,
      format: typeof raw.format === 'string' ? raw.format : 'auto',
      category: optionalString(raw.category),
      fallbackCategory: optionalString(raw.fallback_category),
      details,
      skipInvalid: raw.skip_invalid === true,
      priority,
      not: raw.not as string[] | undefined,
      evidence: optionalString(raw.evidence),
      allowLargeBlocks: raw.allow_large_blocks === true,
      intervalMs,
      maxBytes: raw.max_bytes as number | undefined,
      licence: optionalString(raw.licence),
      redistribute: raw.redistribute === false ? false : undefined,
      note: optionalString(raw.note),
      copy: raw.copy === null ? null : optionalString(raw.copy),
      formatDoc: optionalString(raw.format_doc),
      frozen: optionalString(raw.frozen),
      kind,
      maxAgeMs,
      find,
    };
  });
}
