// `ipsift feed import|list|remove`: the feeds of the data directory.

import path from 'node:path';
import type { ParseArgsConfig } from 'node:util';
import { loadConfig } from '../config.js';
import { listFeeds, removeFeed } from '../feeds/feed-store.js';
import { FEED_FORMATS } from '../feeds/formats.js';
import { importFeed, type FeedFormat } from '../feeds/import.js';
import type { DetailField } from '../model/categories.js';
import { UsageError, parse, print } from './common.js';
import { HELP } from './help.js';

const DETAIL_OPTIONS: Record<string, DetailField> = {
  provider: 'provider',
  confidence: 'confidence',
  method: 'method',
  'first-seen': 'first_seen',
  'last-seen': 'last_seen',
  hits: 'hits',
  'hits-days-pct': 'hits_days_pct',
  'providers-num': 'providers_num',
};

function feedImport(args: string[]): void {
  const options: ParseArgsConfig['options'] = {
    format: { type: 'string' },
    name: { type: 'string' },
    category: { type: 'string' },
    'skip-invalid': { type: 'boolean' },
    priority: { type: 'string' },
    not: { type: 'string' },
    evidence: { type: 'string' },
    'allow-large-blocks': { type: 'boolean' },
    replace: { type: 'boolean' },
  };
  for (const o of Object.keys(DETAIL_OPTIONS)) options[o] = { type: 'string' };
  const { values, positionals } = parse(args, options);
  if (values.help) return print(false, null, () => HELP['feed import']);
  if (positionals.length !== 1) throw new UsageError('feed import takes exactly one file');
  const format = values.format as string | undefined;
  const known = ['csv', 'auto', ...FEED_FORMATS.map((f) => f.name)];
  if (format !== undefined && !known.includes(format)) throw new UsageError(`--format must be one of ${known.join(', ')}`);
  const details: Partial<Record<DetailField, string>> = {};
  for (const [o, field] of Object.entries(DETAIL_OPTIONS)) {
    const v = values[o];
    if (typeof v === 'string') details[field] = v;
  }
  const priorityText = values.priority as string | undefined;
  if (priorityText !== undefined && !/^-?\d+$/.test(priorityText)) throw new UsageError('--priority must be an integer');
  const config = loadConfig(process.env);
  const r = importFeed({
    dataDir: config.dataDir,
    file: path.resolve(positionals[0]),
    format: format as FeedFormat | undefined,
    name: values.name as string | undefined,
    category: values.category as string | undefined,
    details,
    skipInvalid: values['skip-invalid'] === true,
    priority: priorityText === undefined ? undefined : Number(priorityText),
    not: typeof values.not === 'string' ? values.not.split(',').map((c) => c.trim()) : undefined,
    evidence: values.evidence as string | undefined,
    allowLargeBlocks: values['allow-large-blocks'] === true,
    replace: values.replace === true,
  });
  print(values.json as boolean, r, () => {
    const cats = Object.entries(r.byCategory)
      .map(([c, n]) => `${c} ${n}`)
      .join(', ');
    const skipped = r.skipped ? `; skipped ${r.skipped} invalid line(s), e.g. ${r.skippedExamples[0]}` : '';
    const notes = r.notes.map((n) => `; ${n}`).join('');
    return `imported feed ${r.name} (${r.format}, evidence ${r.evidence}): ${r.rows} networks (${cats}) → ${r.file}${skipped}${notes}`;
  });
}

function feedList(args: string[]): void {
  const { values } = parse(args);
  if (values.help) return print(false, null, () => HELP['feed list']);
  const feeds = listFeeds(loadConfig(process.env).dataDir);
  print(values.json as boolean, feeds, () =>
    feeds.length ? feeds.map((f) => `${f.name}\t${f.bytes} bytes\tevidence ${f.evidence}\tpriority ${f.priority}`).join('\n') : 'no feeds imported',
  );
}

function feedRemove(args: string[]): void {
  const { values, positionals } = parse(args);
  if (values.help) return print(false, null, () => HELP['feed remove']);
  if (positionals.length !== 1) throw new UsageError('feed remove takes exactly one feed name');
  const removed = removeFeed(loadConfig(process.env).dataDir, positionals[0]);
  if (!removed) throw new UsageError(`no feed named ${positionals[0]}`);
  print(values.json as boolean, { removed: positionals[0] }, () => `removed feed ${positionals[0]}`);
}

export function feedCommand(sub: string | undefined, rest: string[]): void {
  if (sub === 'import') feedImport(rest);
  else if (sub === 'list') feedList(rest);
  else if (sub === 'remove') feedRemove(rest);
  else if (sub === '--help' || sub === '-h' || sub === 'help') print(false, null, () => HELP.feed);
  else throw new UsageError(`unknown feed command ${sub ?? '(none)'}: import, list or remove`);
}
