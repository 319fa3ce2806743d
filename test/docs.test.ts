// The docs a reader can trust: the parts the code knows are generated from it and current, the
// configuration reference's defaults are the ones applied, the README stays an overview, and
// no page points outside the repository or at a file that is not there.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { CONFIG_REFERENCE, type SettingHelp } from '../src/config-reference.js';
import { loadConfig, type ConfigVariable } from '../src/config.js';
import { OPENAPI_FILE, ROOT, SECTIONS, openApiText, pages, regenerate } from '../scripts/docs.js';

const rel = (p: string): string => path.relative(ROOT, p);

/** The settings a variable's default only matters under (its feature switched on). */
const CONTEXT: Partial<Record<ConfigVariable, Record<string, string>>> = {
  REDIS_URL: { ACCOUNTING: 'redis' },
  REDIS_PREFIX: { ACCOUNTING: 'redis' },
  REDIS_TIMEOUT_MS: { ACCOUNTING: 'redis' },
  CONTROL_TIMEOUT_MS: { CONTROL_DB: 'postgres://ipsift@127.0.0.1/ipsift' },
  S3_REGION: { STORE: 's3', S3_BUCKET: 'b' },
};

describe('docs', () => {
  test('every generated part is current (npm run docs rewrites them)', () => {
    const stale: string[] = [];
    const used = new Set<string>();
    for (const page of pages()) {
      const text = fs.readFileSync(page, 'utf8');
      for (const m of text.matchAll(/<!-- generated: ([a-z-]+) \(npm run docs\) -->/g)) used.add(m[1]);
      if (regenerate(text, rel(page)) !== text) stale.push(rel(page));
    }
    if (fs.readFileSync(OPENAPI_FILE, 'utf8') !== openApiText()) stale.push(rel(OPENAPI_FILE));
    assert.deepEqual(stale, [], 'run npm run docs');
    assert.deepEqual([...used].sort(), Object.keys(SECTIONS).sort(), 'every generated part appears in a page');
  });

  test('a marker with no generator is refused, and a stale part is rewritten', () => {
    assert.throws(() => regenerate('<!-- generated: nope (npm run docs) -->\n<!-- end: nope -->', 'x.md'), /no generated part named nope/);
    const stale = '<!-- generated: data-dir (npm run docs) -->\nold\n<!-- end: data-dir -->';
    assert.match(regenerate(stale, 'x.md'), /\| `builds\/CURRENT` \|/);
  });

  test('each default the configuration reference shows is the one applied', () => {
    // What was applied, without the record of what was given (which rightly differs).
    const applied = (env: Record<string, string>) => ({ ...loadConfig(env), given: null });
    for (const [name, s] of Object.entries(CONFIG_REFERENCE) as [ConfigVariable, SettingHelp][]) {
      if (s.default === undefined) continue;
      assert.deepEqual(applied({ ...CONTEXT[name], [name]: s.default }), applied({ ...CONTEXT[name] }), `${name}=${s.default} is not its default`);
      assert.ok(s.shown === undefined, `${name} has both a default and a shown text`);
    }
  });

  test('the README is an overview: at most 200 lines, with the two quick-start commands', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    assert.ok(readme.split('\n').length <= 200, `README.md has ${readme.split('\n').length} lines`);
    assert.match(readme, /npm ci && npm start/);
    assert.match(readme, /npm ci && npm test/);
  });

  test('no page points outside the repository, cites an issue, or links a file that is not there', () => {
    const problems: string[] = [];
    for (const page of pages()) {
      const text = fs.readFileSync(page, 'utf8');
      const prose = text.replace(/```[\s\S]*?```/g, '');
      for (const [what, re] of [
        ['a path outside the repository', /\.\.\/shared|interface\.md|DESIGN\.md|STYLE\.md/],
        ['an issue number', /(^|[\s(])#\d+\b/m],
      ] as const) {
        const m = re.exec(prose);
        if (m) problems.push(`${rel(page)}: ${what} (${JSON.stringify(m[0].trim())})`);
      }
      for (const m of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1];
        if (/^[a-z]+:/.test(target) || target.startsWith('#')) continue;
        const file = path.resolve(path.dirname(page), target.split('#')[0]);
        if (!file.startsWith(ROOT + path.sep)) problems.push(`${rel(page)}: links outside the repository (${target})`);
        else if (!fs.existsSync(file)) problems.push(`${rel(page)}: links a missing file (${target})`);
      }
    }
    if (/\.\.\/shared|interface\.md|DESIGN\.md/.test(fs.readFileSync(OPENAPI_FILE, 'utf8')))
      problems.push(`${rel(OPENAPI_FILE)}: a path outside the repository`);
    assert.deepEqual(problems, []);
  });
});
