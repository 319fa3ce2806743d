// The parts of docs/ that the code already knows, written from the code: the settings
// (config-reference.ts), the commands' help (cli/help.ts), the data directory (data-dir.ts),
// the error catalogue (wire/errors.ts), the layers (import-graph.ts), the source registry
// (config/sources/public.json) and the OpenAPI document.
// A page marks each generated part:
//
//   <!-- generated: NAME (npm run docs) -->
//   …
//   <!-- end: NAME -->
//
// `npm run docs` rewrites them; test/docs.test.ts fails while one is stale.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONFIG_REFERENCE, type SettingHelp } from '../src/config-reference.js';
import { HELP } from '../src/cli/help.js';
import { LAYOUT } from '../src/data-dir.js';
import { ERRORS, ERROR_HELP, RC, RC_HELP } from '../src/wire/errors.js';
import { DATABASE_REFUSAL_EXAMPLES } from '../src/api/public/database-refusals.js';
import { openApiDocument } from '../src/api/public/openapi.js';
import { LAYERS, drawGraph, graphOf } from './import-graph.js';
import { loadRegistry } from '../src/feeds/registry.js';
import { formatByName } from '../src/feeds/formats.js';
import { DEFAULT_INTERVAL_MS, intervalText } from '../src/feeds/sources.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const DOCS = path.join(ROOT, 'docs');
export const OPENAPI_FILE = path.join(DOCS, 'api', 'openapi.json');

/** A table cell: pipes escaped, one line. */
const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function configTables(): string {
  const groups = new Map<SettingHelp['group'], string[]>();
  for (const [name, s] of Object.entries(CONFIG_REFERENCE) as [string, SettingHelp][]) {
    const shown = s.default !== undefined ? `\`${s.default}\`` : (s.shown ?? 'none');
    const rows = groups.get(s.group) ?? [];
    rows.push(`| \`${name}\` | ${cell(shown)} | ${cell(s.meaning)} |`);
    groups.set(s.group, rows);
  }
  return [...groups].map(([group, rows]) => `### ${group}\n\n| variable | default | meaning |\n|---|---|---|\n${rows.join('\n')}`).join('\n\n');
}

function cliReference(): string {
  const names = Object.keys(HELP).sort((a, b) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b)));
  return names.map((n) => `### \`ipsift${n ? ` ${n}` : ''}\`\n\n\`\`\`text\n${HELP[n].trimEnd()}\n\`\`\``).join('\n\n');
}

function dataDirTable(): string {
  return `| path | what it holds |\n|---|---|\n${LAYOUT.map((e) => `| \`${e.path}\` | ${cell(e.what)} |`).join('\n')}`;
}

function errorTables(): string {
  const lookup = (Object.keys(ERRORS) as (keyof typeof ERRORS)[])
    .sort((a, b) => ERRORS[a].status - ERRORS[b].status)
    .map((k) => `| ${ERRORS[k].status} | \`${cell(ERRORS[k].body.toString())}\` | ${cell(ERROR_HELP[k])} |`);
  const rc = (Object.keys(RC) as (keyof typeof RC)[])
    .sort((a, b) => RC[a].status - RC[b].status)
    .map((k) => `| ${RC[k].status} | \`${RC[k].code}\` | ${cell(RC_HELP[k])} |`);
  return [
    '### Lookups, batches and the account: `{"error": message}`',
    '',
    '| status | body | when, and what to do |',
    '|---|---|---|',
    ...lookup,
    '',
    '### Databases and keys: `{"rc": code}`',
    '',
    "Answers past the contract's bare code carry a `message` beside `rc` saying what was wrong.",
    '',
    '| status | rc | when, and what to do |',
    '|---|---|---|',
    ...rc,
    '',
    '### What the database routes say',
    '',
    'Each refusal of `/api/v1/database/download`, `metadata` and `checksum` names what would fix it:',
    '',
    '| status | rc | message (an example) |',
    '|---|---|---|',
    ...DATABASE_REFUSAL_EXAMPLES.map((r) => `| ${r.status} | \`${r.rc}\` | ${cell(r.message)} |`),
  ].join('\n');
}

/** The shipped registry (config/sources/public.json) as the sources page's table. */
function sourcesTable(): string {
  const rows = loadRegistry().map((s) => {
    const category = s.category ?? formatByName(s.format)?.defaultCategory ?? '?';
    const shown = s.format === 'aws' ? 'hosting, cdn' : category;
    const kind = (s.kind ?? 'mirror').replace('_', '-');
    const age = s.maxAgeMs ? intervalText(s.maxAgeMs) : '—';
    const terms = `${s.licence ?? 'not stated'}${s.redistribute === false ? '; not in exports unless named in `EXPORTS_RESTRICTED`' : ''}`;
    const name = s.frozen ? `\`${s.name}\` (frozen: only by name)` : `\`${s.name}\``;
    return `| ${name} | ${shown} | ${kind} | ${s.evidence ?? 'list'} | ${intervalText(s.intervalMs ?? DEFAULT_INTERVAL_MS)} | ${age} | ${cell(terms)} |`;
  });
  return `| source | category | kind | evidence | fetched every | allowed age | licence (as the upstream states it), the notice the exports carry |\n|---|---|---|---|---|---|---|\n${rows.join('\n')}`;
}

function layerGraph(): string {
  const table = LAYERS.map((units, i) => `| ${i} | ${units.map((u) => `\`${u}\``).join(', ')} |`).join('\n');
  return `| layer | folders and root modules |\n|---|---|\n${table}\n\nWhat each imports, drawn from the code:\n\n\`\`\`text\n${drawGraph(graphOf(path.join(ROOT, 'src')))}\n\`\`\``;
}

/** Every generated part, by the name its markers carry. */
export const SECTIONS: Readonly<Record<string, () => string>> = {
  config: configTables,
  cli: cliReference,
  'data-dir': dataDirTable,
  errors: errorTables,
  layers: layerGraph,
  sources: sourcesTable,
};

export const openApiText = (): string => JSON.stringify(openApiDocument(), null, 2) + '\n';

const MARKED = /(<!-- generated: ([a-z-]+) \(npm run docs\) -->\n)([\s\S]*?)(<!-- end: \2 -->)/g;

/** A page with its generated parts rewritten; names a marker that has no generator. */
export function regenerate(text: string, page: string): string {
  return text.replace(MARKED, (_m, open: string, name: string, _old: string, close: string) => {
    const make = SECTIONS[name];
    if (!make) throw new Error(`${page}: no generated part named ${name}`);
    return `${open}\n${make()}\n\n${close}`;
  });
}

/** Every Markdown page under docs/, and the README. */
export function pages(): string[] {
  const out = [path.join(ROOT, 'README.md')];
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.md')) out.push(p);
    }
  };
  walk(DOCS);
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  let changed = 0;
  for (const page of pages()) {
    const text = fs.readFileSync(page, 'utf8');
    const next = regenerate(text, path.relative(ROOT, page));
    if (next !== text) {
      fs.writeFileSync(page, next);
      changed++;
      console.log(`rewrote ${path.relative(ROOT, page)}`);
    }
  }
  if (!fs.existsSync(OPENAPI_FILE) || fs.readFileSync(OPENAPI_FILE, 'utf8') !== openApiText()) {
    fs.writeFileSync(OPENAPI_FILE, openApiText());
    changed++;
    console.log(`rewrote ${path.relative(ROOT, OPENAPI_FILE)}`);
  }
  if (changed === 0) console.log('docs are current');
}
