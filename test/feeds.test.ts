import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { FeedImportError, importFeed } from '../src/feeds/import.js';
import { listFeeds, readFeed } from '../src/feeds/feed-store.js';
import { tempDir, writeFile } from './helpers.js';

function importError(run: () => unknown): FeedImportError {
  try {
    run();
  } catch (e) {
    assert.ok(e instanceof FeedImportError, String(e));
    return e;
  }
  assert.fail('the import should have failed');
}

describe('feed import', () => {
  test('a canonical CSV in any column order, with quoting, is imported with its details', () => {
    const dir = tempDir();
    const file = writeFile(
      dir,
      'mixed.csv',
      'provider,network,category,confidence,last_seen,method\r\n' +
        '"Example, Inc.",198.51.0.0/16,vpn,high,2026-11-01,server_list\r\n' +
        '"He said ""hi""",203.0.114.1-203.0.114.90,hosting,low,,\r\n' +
        ',2a00:1450::/32,cdn,,,\r\n' +
        'Solo,8.8.8.8,tor,medium,2026-10-10,\r\n',
    );
    const r = importFeed({ dataDir: dir, file });
    assert.equal(r.rows, 4);
    assert.deepEqual(r.byCategory, { vpn: 1, hosting: 1, cdn: 1, tor: 1 });
    const entries = [...readFeed(r.file)];
    assert.deepEqual(
      entries.map((e) => [e.family, e.category, e.detail]),
      [
        [4, 'vpn', '{"provider":"Example, Inc.","last_seen":"2026-11-01","confidence":"high","method":"server_list"}'],
        [4, 'hosting', '{"provider":"He said \\"hi\\"","confidence":"low"}'],
        [6, 'cdn', '{}'],
        [4, 'tor', '{"provider":"Solo","confidence":"medium","last_seen":"2026-10-10"}'],
      ],
    );
    assert.equal(entries[0].start, 198 * 2 ** 24 + 51 * 2 ** 16);
    assert.equal(entries[1].end, 203 * 2 ** 24 + 114 * 256 + 90);
  });

  test('a plain list takes its category and details from options and skips comments', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'exits.txt', '# Tor exits\n1.2.3.4\n\n5.6.7.0/24  # a block\n2a01:4f8::1-2a01:4f8::ff\n');
    const r = importFeed({ dataDir: dir, file, category: 'tor', details: { provider: 'Tor Project', confidence: 'high' } });
    assert.equal(r.name, 'exits');
    assert.equal(r.rows, 3);
    for (const e of readFeed(r.file)) {
      assert.equal(e.category, 'tor');
      assert.equal(e.detail, '{"provider":"Tor Project","confidence":"high"}');
    }
  });

  const bad: [string, string, string, RegExp][] = [
    ['unknown category', 'network,category\n1.2.3.4,vpn\n1.2.3.5,proxy\n', 'csv', /:3: unknown category "proxy"/],
    ['bad network', 'network,category\n1.2.3.4,vpn\n1.2.3.400,vpn\n', 'csv', /:3: not an address, CIDR or range: "1.2.3.400"/],
    ['host bits set', 'network,category\n1.2.3.4/24,vpn\n', 'csv', /:2: host bits are set in 1.2.3.4\/24 \(the network is 1.2.3.0\/24\)/],
    ['reversed range', 'network,category\n1.2.3.9-1.2.3.1,vpn\n', 'csv', /:2: range ends before it starts/],
    ['bad date', 'network,category,last_seen\n1.2.3.4,vpn,2026-02-30\n', 'csv', /:2: last_seen must be a date YYYY-MM-DD/],
    ['bad confidence', 'network,category,confidence\n1.2.3.4,vpn,sure\n', 'csv', /:2: confidence must be one of low, medium, high/],
    ['field of another category', 'network,category,hits\n1.2.3.4,vpn,3\n', 'csv', /:2: hits does not apply to category vpn/],
    ['percent above 100', 'network,category,hits_days_pct\n1.2.3.4,resproxy,101\n', 'csv', /:2: hits_days_pct must be an integer 0..100/],
    ['unknown column', 'network,category,colour\n', 'csv', /:1: unknown column "colour"/],
    ['no network column', 'category\nvpn\n', 'csv', /:1: the header has no network column/],
    ['short row', 'network,category\n1.2.3.4\n', 'csv', /:2: expected 2 fields, found 1/],
    ['unterminated quote', 'network,category\n"1.2.3.4,vpn\n', 'csv', /:2: unterminated quoted field/],
    ['bad list line', '1.2.3.4\n# fine\nnot-an-ip\n', 'list', /:3: not an address, CIDR or range/],
  ];
  for (const [name, text, format, message] of bad) {
    test(`an import with a ${name} fails whole, naming file, line and reason`, () => {
      const dir = tempDir();
      const file = writeFile(dir, format === 'csv' ? 'feed.csv' : 'feed.txt', text);
      const e = importError(() => importFeed({ dataDir: dir, file, category: format === 'list' ? 'vpn' : undefined }));
      assert.match(e.message, message);
      assert.ok(e.message.startsWith(file), e.message);
      assert.deepEqual(listFeeds(dir), [], 'nothing may be half imported');
    });
  }

  test('a failed re-import leaves the earlier version of the feed in place', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'f.csv', 'network,category\n1.2.3.4,vpn\n');
    importFeed({ dataDir: dir, file });
    const before = fs.readFileSync(path.join(dir, 'feeds', 'f.feed'));
    writeFile(dir, 'f.csv', 'network,category\n1.2.3.5,vpn\nbad,vpn\n');
    importError(() => importFeed({ dataDir: dir, file }));
    assert.deepEqual(fs.readFileSync(path.join(dir, 'feeds', 'f.feed')), before);
    assert.deepEqual(fs.readdirSync(path.join(dir, 'feeds')), ['f.feed']);
  });

  test('a list without --category is refused', () => {
    const dir = tempDir();
    const file = writeFile(dir, 'l.txt', '1.2.3.4\n');
    assert.match(importError(() => importFeed({ dataDir: dir, file })).message, /a list needs --category/);
  });
});
