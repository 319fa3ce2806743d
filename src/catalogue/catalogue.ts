// The catalogue as configured (config/catalogue.json, or CATALOGUE_FILE): which bases and
// schema versions are offered, with names, summaries, formats and update frequency. Each
// version must be one the exporter knows (src/exports/databases.ts defines its columns).

import fs from 'node:fs';
import { DATABASES, FORMATS, type DatabaseDef, type Format } from '../exports/databases.js';
import { IpsiftError } from '../errors.js';
import { DEFAULT_CATALOGUE_FILE } from '../config.js';

export interface CatalogueVersion {
  id: string;
  version: number;
  summary: string;
  formats: Format[];
  def: DatabaseDef;
}

export interface CatalogueBase {
  base: string;
  name: string;
  summary: string;
  updateFreq: string;
  versions: CatalogueVersion[];
}

export interface Catalogue {
  bases: CatalogueBase[];
  byId: ReadonlyMap<string, { base: CatalogueBase; version: CatalogueVersion }>;
}

export class CatalogueError extends IpsiftError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CATALOGUE', message, options);
  }
}

export function parseCatalogue(text: string, file: string): Catalogue {
  const fail = (why: string): never => {
    throw new CatalogueError(`${file}: ${why}`);
  };
  let doc: { databases?: unknown };
  try {
    doc = JSON.parse(text) as typeof doc;
  } catch (e) {
    return fail(`not JSON (${(e as Error).message})`);
  }
  if (!Array.isArray(doc.databases)) return fail('databases must be an array');
  const bases: CatalogueBase[] = [];
  const byId = new Map<string, { base: CatalogueBase; version: CatalogueVersion }>();
  for (const raw of doc.databases as Record<string, unknown>[]) {
    const base = String(raw.base ?? '');
    if (!/^[a-z][a-z0-9_]*$/.test(base)) fail(`bad base ${JSON.stringify(raw.base)}`);
    if (!Array.isArray(raw.versions) || raw.versions.length === 0) fail(`${base}: versions must be a non-empty array`);
    const b: CatalogueBase = {
      base,
      name: String(raw.name ?? base),
      summary: String(raw.summary ?? ''),
      updateFreq: String(raw.update_freq ?? 'daily'),
      versions: [],
    };
    for (const v of raw.versions as Record<string, unknown>[]) {
      const id = `${base}_v${String(v.version)}`;
      const def = DATABASES.find((d) => d.id === id);
      if (!def) fail(`${id}: no such schema version is known to this ipsift`);
      const formats = (Array.isArray(v.formats) ? v.formats : []) as Format[];
      for (const f of formats) if (!FORMATS.includes(f) || !def!.formats.includes(f)) fail(`${id}: format ${JSON.stringify(f)} is not built for it`);
      if (formats.length === 0) fail(`${id}: formats must name csvgz and/or mmdb`);
      const version: CatalogueVersion = { id, version: Number(v.version), summary: String(v.summary ?? def!.versionSummary), formats, def: def! };
      b.versions.push(version);
      if (byId.has(id)) fail(`${id} is listed twice`);
      byId.set(id, { base: b, version });
    }
    bases.push(b);
  }
  return { bases, byId };
}

export function loadCatalogue(file = DEFAULT_CATALOGUE_FILE): Catalogue {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new CatalogueError(`cannot read catalogue file ${file}: ${(e as Error).message}`);
  }
  return parseCatalogue(text, file);
}
