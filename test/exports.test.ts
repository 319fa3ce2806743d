// Build-time exports against the serving index: every database's MMDB (read with the
// maxmind package) and CSV.gz agree with what a max-plan lookup answers; checksums match.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { before, describe, test } from 'node:test';
import { spawnSync } from 'node:child_process';
import maxmind from 'maxmind';
import { AddressNotFoundError, Reader } from '@maxmind/geoip2-node';
import { runBuild } from '../src/build/build.js';
import { DATABASES } from '../src/exports/databases.js';
import type { ExportsManifest } from '../src/exports/exporter.js';
import { importFeed } from '../src/feeds/import.js';
import { loadIndexFile } from '../src/index/loader.js';
import type { RangeIndex } from '../src/index/range-index.js';
import { CATEGORIES } from '../src/model/categories.js';
import { ParsedAddress, parseAddress } from '../src/net/address.js';
import { isBogonV4, isBogonV6 } from '../src/net/bogons.js';
import { prng, writeFeedCsv } from '../scripts/gen-feeds.js';
import { TODAY, answerOf, openTestControlDb, tempDir } from './helpers.js';
import { publishExports } from '../src/pipeline/publish.js';
import { gzippedPath, LocalStore } from '../src/objects/local-store.js';
import { gzipMmdbs } from '../src/exports/mmdb-gzip.js';
import { EXPORTS_DIR, EXPORTS_MANIFEST, INDEX_FILE } from '../src/data-dir.js';

type Answer = Record<string, unknown>;

/** What each database should hold for an address, derived from the answer (null: absent). */
function expected(db: string, a: Answer): unknown {
  const present = CATEGORIES.filter((c) => a[`is_${c}`] === true);
  const pick = (cats: readonly string[], listName: string): unknown => {
    const here = cats.filter((c) => present.includes(c as never));
    if (here.length === 0) return null;
    return { [listName]: here, ...Object.fromEntries(here.map((c) => [c, a[c]])) };
  };
  switch (db) {
    case 'ipsift_v1':
      return present.length ? Object.fromEntries(CATEGORIES.map((c) => [`is_${c}`, a[`is_${c}`]])) : null;
    case 'ipsift_extended_v1':
      return present.length
        ? { ...Object.fromEntries(CATEGORIES.map((c) => [`is_${c}`, a[`is_${c}`]])), ...Object.fromEntries(present.map((c) => [c, a[c]])) }
        : null;
    case 'vpn_v1':
      return present.includes('vpn') ? a.vpn : null;
    case 'proxy_v1':
      return pick(['resproxy', 'dcproxy', 'mobproxy'], 'kinds');
    case 'hosting_v1':
      return pick(['hosting', 'relay', 'tor', 'cdn'], 'categories');
    case 'geoip2_anonymous_v1':
    case 'geoip2_anonymous_plus_v1':
      return geoip2Expected(a, present);
  }
  throw new Error(db);
}

/** The README's GeoIP2 mapping, as a GeoIP2 MMDB record (only true flags, no empty field). */
function geoip2Expected(a: Answer, present: readonly string[]): Record<string, unknown> | null {
  const source = ['vpn', 'resproxy', 'dcproxy', 'mobproxy', 'tor', 'relay', 'hosting'].find((c) => present.includes(c));
  if (source === undefined) return null;
  const out: Record<string, unknown> = { is_anonymous: true };
  if (present.includes('vpn')) out.is_anonymous_vpn = true;
  if (present.includes('hosting')) out.is_hosting_provider = true;
  if (present.includes('dcproxy')) out.is_public_proxy = true;
  if (present.includes('resproxy') || present.includes('mobproxy')) out.is_residential_proxy = true;
  if (present.includes('tor')) out.is_tor_exit_node = true;
  const d = a[source] as Record<string, unknown>;
  const confidence = ({ low: 30, medium: 60, high: 90 } as Record<string, number>)[String(d.confidence)];
  if (confidence !== undefined) out.anonymizer_confidence = confidence;
  if (d.last_seen !== undefined) out.network_last_seen = d.last_seen;
  if (d.provider !== undefined) out.provider_name = d.provider;
  return out;
}

describe('database exports', () => {
  let dir: string;
  let index: RangeIndex;
  let manifest: ExportsManifest;
  const probes: string[] = [];

  before(async () => {
    const dataDir = tempDir();
    const feed = path.join(dataDir, 'synthetic.csv');
    writeFeedCsv(feed, { ranges: 4000, seed: 31 });
    importFeed({ dataDir, file: feed, name: 'synthetic' });
    const build = runBuild({ dataDir });
    dir = path.join(build.dir, EXPORTS_DIR);
    index = (await loadIndexFile(path.join(build.dir, INDEX_FILE))).index;
    manifest = JSON.parse(fs.readFileSync(path.join(dir, EXPORTS_MANIFEST), 'utf8')) as ExportsManifest;
    // Addresses in and around the feed's networks, IPv4 and IPv6.
    const rnd = prng(4);
    const lines = fs.readFileSync(feed, 'utf8').trim().split('\n').slice(1);
    for (let i = 0; i < 3000; i++) {
      const net = lines[(rnd() * lines.length) | 0].split(',')[0].split('/')[0].split('-')[0];
      probes.push(net);
    }
    for (let i = 0; i < 2000; i++) probes.push(`${1 + ((rnd() * 222) | 0)}.${(rnd() * 256) | 0}.${(rnd() * 256) | 0}.${(rnd() * 256) | 0}`);
  });

  test('every catalogue database and format is exported with a sample', () => {
    const sizes = (): string =>
      fs
        .readdirSync(dir)
        .map((f) => `${f} ${fs.statSync(path.join(dir, f)).size}`)
        .join(', ');
    for (const db of DATABASES) {
      const ex = manifest.databases[db.id];
      assert.ok(ex, db.id);
      assert.deepEqual(Object.keys(ex.artifacts).sort(), [...db.formats].sort(), db.id);
      // A strict subset: at most 1000 entries and a tenth of the database (DESIGN.md §6).
      assert.ok(
        ex.entries >= 10 && ex.sample_entries > 0 && ex.sample_entries <= Math.min(1000, ex.entries / 10),
        `${db.id}: ${ex.sample_entries} of ${ex.entries}`,
      );
      for (const a of Object.values(ex.artifacts)) {
        for (const art of [a!.full, a!.sample!]) assert.equal(fs.statSync(path.join(dir, art.file)).size, art.bytes, `${art.file}; on disk: ${sizes()}`);
        assert.ok(a!.sample!.bytes < a!.full.bytes);
      }
    }
  });

  test('checksums are those of the files', () => {
    for (const ex of Object.values(manifest.databases)) {
      for (const a of Object.values(ex.artifacts)) {
        for (const art of [a!.full, a!.sample!]) {
          const bytes = fs.readFileSync(path.join(dir, art.file));
          for (const alg of ['md5', 'sha1', 'sha256', 'sha512'] as const) {
            assert.equal(art.checksums[alg], crypto.createHash(alg).update(bytes).digest('hex'), `${art.file} ${alg}`);
          }
        }
      }
    }
  });

  test('each MMDB answers what a max-plan lookup answers, projected to the database', async () => {
    for (const db of DATABASES.filter((d) => d.formats.includes('mmdb'))) {
      const reader = await maxmind.open<Record<string, unknown>>(path.join(dir, manifest.databases[db.id].artifacts.mmdb!.full.file));
      let found = 0;
      for (const ip of probes) {
        const p = new ParsedAddress();
        parseAddress(ip, 0, ip.length, p);
        if (p.kind === 4 ? isBogonV4(p.v4) : isBogonV6(p.w)) continue; // bogons are answered without data
        const want = expected(db.id, answerOf(index, ip));
        assert.deepEqual(reader.get(ip), want, `${db.id} ${ip}`);
        if (want !== null) found++;
      }
      assert.ok(found > 100, `${db.id}: only ${found} probes found data`);
    }
  });

  test('each CSV.gz has its schema header and one line per network; rows agree with lookups', () => {
    for (const db of DATABASES.filter((d) => d.keyedBy === 'ranges' && d.formats.includes('csvgz'))) {
      const ex = manifest.databases[db.id];
      const text = zlib.gunzipSync(fs.readFileSync(path.join(dir, ex.artifacts.csvgz!.full.file))).toString('utf8');
      const lines = text.trimEnd().split('\n');
      assert.equal(lines[0], db.schema.csvgz!.map((c) => c.name).join(','));
      const rows = lines.slice(1).map((l) => l.split(','));
      const networks = new Set(rows.map((r) => r[0]));
      assert.equal(networks.size, ex.entries, db.id);
      const rnd = prng(8);
      for (let i = 0; i < 300; i++) {
        const row = rows[(rnd() * rows.length) | 0];
        const first = row[0].split('/')[0];
        const a = answerOf(index, first);
        if (db.id === 'ipsift_v1')
          assert.deepEqual(
            row.slice(1),
            CATEGORIES.map((c) => String(a[`is_${c}`])),
            `${db.id} ${row[0]}`,
          );
        if (db.id === 'vpn_v1') assert.equal(row[1], String((a.vpn as Record<string, unknown>).provider ?? ''), `${db.id} ${row[0]}`);
        if (db.id === 'proxy_v1' || db.id === 'hosting_v1') assert.equal(a[`is_${row[1]}`], true, `${db.id} ${row[0]} ${row[1]}`);
        if (db.id === 'ipsift_extended_v1')
          assert.deepEqual(
            row.slice(1, 9),
            CATEGORIES.map((c) => String(a[`is_${c}`])),
          );
        if (db.id === 'geoip2_anonymous_v1') {
          const want = geoip2Expected(
            a,
            CATEGORIES.filter((c) => a[`is_${c}`] === true),
          )!;
          const flags = ['is_anonymous', 'is_anonymous_vpn', 'is_hosting_provider', 'is_public_proxy', 'is_residential_proxy', 'is_tor_exit_node'];
          assert.deepEqual(
            row.slice(1, 7),
            flags.map((f) => (want[f] ? '1' : '0')),
            `${db.id} ${row[0]}`,
          );
        }
      }
    }
  });

  test('the metadata of every database describes its formats', () => {
    for (const db of DATABASES) {
      const ex = manifest.databases[db.id];
      assert.match(ex.updated, /^\d{4}-\d{2}-\d{2}$/);
      for (const f of db.formats) {
        assert.ok(ex.schema[f]!.length > 0 && ex.schema[f]!.every((c) => c.name && c.type && c.description));
        assert.ok(Array.isArray(ex.sample[f]) && ex.sample[f]!.length > 0, `${db.id} ${f} sample`);
      }
    }
  });

  test('IPv6 data covering 2002::/16 or ::ffff:0:0/96 builds; the MMDB answers those with IPv4 data', async () => {
    const dataDir = tempDir();
    const feed = path.join(dataDir, 'wide.csv');
    fs.writeFileSync(feed, 'network,category,provider\n2000::/3,hosting,Wide\n::/64,hosting,Zero\n81.7.3.0/24,vpn,ExampleVPN\n');
    importFeed({ dataDir, file: feed, name: 'wide', allowLargeBlocks: true });
    const build = runBuild({ dataDir });
    const reader = await maxmind.open<Record<string, unknown>>(path.join(build.dir, EXPORTS_DIR, 'ipsift_extended_v1.mmdb'));
    assert.equal(reader.get('2a01:4f8::1')?.is_hosting, true);
    assert.deepEqual(reader.get('2002:5107:0314::1')?.vpn, { provider: 'ExampleVPN', confidence: 'medium', last_seen: TODAY }); // 6to4 of 81.7.3.20
    assert.equal(reader.get('2002:0101:0101::1'), null); // 6to4 of 1.1.1.1: no IPv4 data
    assert.deepEqual(reader.get('::ffff:81.7.3.20')?.vpn, { provider: 'ExampleVPN', confidence: 'medium', last_seen: TODAY });
    const csv = zlib.gunzipSync(fs.readFileSync(path.join(build.dir, EXPORTS_DIR, 'ipsift_extended_v1.csv.gz'))).toString();
    assert.match(csv, /^2000::\/3,/m); // the CSV keeps the network whole
  });

  test("each source's licence travels with the files; a source whose terms forbid passing it on is left out unless named", async () => {
    const dataDir = tempDir();
    const open = path.join(dataDir, 'open.csv');
    const closed = path.join(dataDir, 'closed.csv');
    fs.writeFileSync(open, 'network,category,provider\n81.7.3.0/24,vpn,ExampleVPN\n');
    fs.writeFileSync(closed, 'network,category,provider\n81.7.3.0/24,hosting,Example Hosting\n198.51.99.0/24,hosting,Example Hosting\n');
    importFeed({ dataDir, file: open, name: 'open-list', terms: { licence: 'CC0-1.0', origin: 'https://example.org/open.csv' } });
    importFeed({
      dataDir,
      file: closed,
      name: 'closed-list',
      terms: { licence: 'all rights reserved', redistribute: false, origin: 'https://example.org/closed.csv' },
    });
    const csvOf = (dir: string): string => zlib.gunzipSync(fs.readFileSync(path.join(dir, EXPORTS_DIR, 'ipsift_extended_v1.csv.gz'))).toString();
    const exportsOf = (dir: string): ExportsManifest => JSON.parse(fs.readFileSync(path.join(dir, EXPORTS_DIR, EXPORTS_MANIFEST), 'utf8')) as ExportsManifest;

    const by = runBuild({ dataDir });
    // Lookups use every source; the files hold only what may be passed on.
    const { index } = await loadIndexFile(path.join(by.dir, INDEX_FILE));
    assert.equal(answerOf(index, '81.7.3.20').is_hosting, true);
    assert.doesNotMatch(csvOf(by.dir), /Example Hosting|198\.51\.99\./);
    assert.match(csvOf(by.dir), /^81\.7\.3\.0\/24,.*ExampleVPN/m);
    const ex = exportsOf(by.dir);
    assert.deepEqual(ex.sources, [{ name: 'open-list', licence: 'CC0-1.0', origin: 'https://example.org/open.csv' }]);
    assert.deepEqual(ex.left_out, [{ name: 'closed-list', licence: 'all rights reserved', origin: 'https://example.org/closed.csv' }]);
    const notice = fs.readFileSync(path.join(by.dir, EXPORTS_DIR, 'NOTICE.txt'), 'utf8');
    assert.match(notice, /^open-list \(CC0-1\.0, https:\/\/example\.org\/open\.csv\)$/m);
    assert.match(notice, /Left out of these files because their terms do not allow passing them on:\n\nclosed-list \(all rights reserved/);
    // The MMDB says it in its own metadata, which every reader shows.
    const reader = await maxmind.open<Record<string, unknown>>(path.join(by.dir, EXPORTS_DIR, 'ipsift_extended_v1.mmdb'));
    assert.match(
      Object.values(reader.metadata.description as unknown as Record<string, string>).join(),
      /Built from open-list \(CC0-1\.0\); see NOTICE\.txt\.$/,
    );
    assert.equal(reader.get('198.51.99.1'), null);

    // Named by the operator (who holds the right): in the files, and in the notice.
    const named = runBuild({ dataDir, exportsRestricted: ['closed-list'] });
    assert.match(csvOf(named.dir), /^198\.51\.99\.0\/24,.*Example Hosting/m);
    assert.deepEqual(
      exportsOf(named.dir).sources?.map((n) => n.name),
      ['closed-list', 'open-list'],
    );
    assert.deepEqual(exportsOf(named.dir).left_out, []);
    // Published beside each dataset's files.
    const db = openTestControlDb(dataDir);
    try {
      await publishExports(db, new LocalStore(dataDir), dataDir, named.id);
    } finally {
      db.close();
    }
    const beside = path.join(new LocalStore(dataDir).root, 'ipsift_extended_v1', named.id, 'NOTICE.txt');
    assert.match(fs.readFileSync(beside, 'utf8'), /^closed-list \(all rights reserved/m);
  });

  test('a provider name a spreadsheet would evaluate opens as text: quoted, after a single quote (OWASP)', () => {
    const dataDir = tempDir();
    const feed = path.join(dataDir, 'names.csv');
    const rows = ['"=HYPERLINK(""http://evil.example"",""x"")"', '@SUM(1+1)', '+1', '-1', '\uFF1Dfull', 'Plain VPN'];
    fs.writeFileSync(feed, 'network,category,provider\n' + rows.map((p, i) => `81.7.${i}.0/24,vpn,${p}`).join('\n') + '\n');
    importFeed({ dataDir, file: feed, name: 'names' });
    const build = runBuild({ dataDir });
    const csv = zlib.gunzipSync(fs.readFileSync(path.join(build.dir, EXPORTS_DIR, 'vpn_v1.csv.gz'))).toString();
    const line = (i: number): string => csv.split('\n').find((l) => l.startsWith(`81.7.${i}.0/24,`))!;
    assert.equal(line(0).split(',').slice(1, 2)[0], `"'=HYPERLINK(""http://evil.example""`, line(0));
    assert.ok(line(0).includes(`"'=HYPERLINK(""http://evil.example"",""x"")"`), line(0));
    assert.ok(line(1).includes(`,"'@SUM(1+1)"`), line(1));
    assert.ok(line(2).includes(`,"'+1"`), line(2));
    assert.ok(line(3).includes(`,"'-1"`), line(3));
    assert.ok(line(4).includes(`,"'\uFF1Dfull"`), line(4));
    assert.ok(line(5).includes(',Plain VPN,') || line(5).endsWith(',Plain VPN'), line(5));
    // No cell of any CSV export begins with a formula character outside quotes.
    for (const f of fs.readdirSync(path.join(build.dir, EXPORTS_DIR)).filter((n) => n.endsWith('.csv.gz'))) {
      const text = zlib.gunzipSync(fs.readFileSync(path.join(build.dir, EXPORTS_DIR, f))).toString();
      assert.doesNotMatch(text, /(^|,)[=+@\t\uFF1D\uFF0B\uFF20]/m, f);
    }
    // The MMDB keeps the name as the upstream wrote it: readers are programs, not spreadsheets.
  });
});

test('exports written on threads are byte for byte those written on the build’s own thread, with each MMDB’s gzip form beside it', () => {
  const dataDir = tempDir();
  const feed = path.join(dataDir, 'synthetic.csv');
  writeFeedCsv(feed, { ranges: 3000, seed: 32 });
  importFeed({ dataDir, file: feed, name: 'synthetic' });
  const now = new Date('2026-11-26T00:00:00Z');
  const files = (threadedExports: boolean): Map<string, string> => {
    const build = runBuild({ dataDir, now, threadedExports });
    assert.equal(build.threadedExports, threadedExports, 'the build took the other path');
    const dir = path.join(build.dir, EXPORTS_DIR);
    const names = fs.readdirSync(dir).sort();
    const bytes = (f: string): Buffer | string => {
      if (f !== EXPORTS_MANIFEST) return fs.readFileSync(path.join(dir, f));
      const m = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as Partial<ExportsManifest>;
      delete m.timings_ms; // how long each took: the one thing that may differ
      return JSON.stringify(m);
    };
    return new Map(names.map((f) => [f, crypto.createHash('sha256').update(bytes(f)).digest('hex')]));
  };
  const inline = files(false);
  const threaded = files(true);
  assert.ok(inline.size >= 2 * DATABASES.length, [...inline.keys()].join(' '));
  // Threads also leave each MMDB's gzip form beside it (publishing links it, not compressing
  // it again): exactly the MMDB's bytes once inflated.
  const sidecars = [...threaded.keys()].filter((f) => f.endsWith('.mmdb.gz'));
  assert.deepEqual(
    sidecars,
    [...inline.keys()].filter((f) => f.endsWith('.mmdb')).map((f) => `${f}.gz`),
  );
  const dir = path.join(runBuild({ dataDir, now, threadedExports: true }).dir, EXPORTS_DIR);
  for (const gz of sidecars) assert.ok(zlib.gunzipSync(fs.readFileSync(path.join(dir, gz))).equals(fs.readFileSync(path.join(dir, gz.slice(0, -3)))), gz);
  for (const gz of sidecars) threaded.delete(gz);
  assert.deepEqual(threaded, inline);
});

test('an MMDB and its edition share the compression of their tree and data; files that are not twins are compressed apart', async () => {
  const dataDir = tempDir();
  const feed = path.join(dataDir, 'synthetic.csv');
  writeFeedCsv(feed, { ranges: 500, seed: 34 });
  importFeed({ dataDir, file: feed, name: 'synthetic' });
  const dir = path.join(runBuild({ dataDir, exports: true, threadedExports: false }).dir, EXPORTS_DIR);
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, EXPORTS_MANIFEST), 'utf8')) as ExportsManifest;
  const pair = {
    databases: { geoip2_anonymous_v1: manifest.databases.geoip2_anonymous_v1, geoip2_anonymous_plus_v1: manifest.databases.geoip2_anonymous_plus_v1 },
  };
  const files = ['geoip2_anonymous_v1.mmdb', 'geoip2_anonymous_plus_v1.mmdb'].map((f) => path.join(dir, f));
  const inflated = (f: string): Buffer => zlib.gunzipSync(fs.readFileSync(gzippedPath(f)));
  // The shared stream ends in a full flush, an empty stored block (00 00 ff ff), just before
  // each file's own end: a form compressed apart has none there.
  const flushedNearEnd = (f: string): boolean =>
    fs
      .readFileSync(gzippedPath(f))
      .subarray(-512)
      .includes(Buffer.from([0, 0, 0xff, 0xff]));
  assert.equal(await gzipMmdbs(dir, pair), 4, 'full and sample, each with its edition');
  for (const f of files) {
    assert.ok(inflated(f).equals(fs.readFileSync(f)), f);
    assert.ok(flushedNearEnd(f), `${f}: its tree and data compressed once for both`);
  }
  // One byte of the edition's tree changed: no longer twins, each compressed on its own.
  const changed = fs.readFileSync(files[1]);
  changed[100] ^= 1;
  fs.writeFileSync(files[1], changed);
  await gzipMmdbs(dir, pair);
  for (const f of files) {
    assert.ok(inflated(f).equals(fs.readFileSync(f)), f);
    assert.ok(!flushedNearEnd(f), `${f}: compressed on its own`);
  }
});

test('publishing to the local store links an MMDB’s gzip form where the build wrote one, and compresses one where it did not', async () => {
  const dataDir = tempDir();
  const feed = path.join(dataDir, 'synthetic.csv');
  writeFeedCsv(feed, { ranges: 500, seed: 33 });
  importFeed({ dataDir, file: feed, name: 'synthetic' });
  const dir = path.join(runBuild({ dataDir, threadedExports: true }).dir, EXPORTS_DIR);
  const store = new LocalStore(dataDir);
  const mmdb = path.join(dir, 'vpn_v1.mmdb');
  await store.put('vpn_v1/b1/vpn_v1.mmdb', mmdb);
  const stored = gzippedPath(store.pathOf('vpn_v1/b1/vpn_v1.mmdb'));
  assert.equal(fs.statSync(stored).ino, fs.statSync(gzippedPath(mmdb)).ino, 'the same file, linked');
  fs.rmSync(gzippedPath(mmdb));
  await store.put('vpn_v1/b2/vpn_v1.mmdb', mmdb);
  assert.ok(zlib.gunzipSync(fs.readFileSync(gzippedPath(store.pathOf('vpn_v1/b2/vpn_v1.mmdb')))).equals(fs.readFileSync(mmdb)));
});

describe('the GeoIP2-compatible databases in MaxMind’s own readers', () => {
  let file: string;
  let plusFile: string;
  let exportsDir: string;
  let index: RangeIndex;
  const probes: string[] = [];

  before(async () => {
    const dataDir = tempDir();
    const feed = path.join(dataDir, 'synthetic.csv');
    writeFeedCsv(feed, { ranges: 3000, seed: 47 });
    importFeed({ dataDir, file: feed, name: 'synthetic' });
    const build = runBuild({ dataDir });
    const manifest = JSON.parse(fs.readFileSync(path.join(build.dir, EXPORTS_DIR, EXPORTS_MANIFEST), 'utf8')) as ExportsManifest;
    exportsDir = path.join(build.dir, EXPORTS_DIR);
    file = path.join(exportsDir, manifest.databases.geoip2_anonymous_v1.artifacts.mmdb!.full.file);
    plusFile = path.join(exportsDir, manifest.databases.geoip2_anonymous_plus_v1.artifacts.mmdb!.full.file);
    index = (await loadIndexFile(path.join(build.dir, INDEX_FILE))).index;
    const rnd = prng(5);
    const lines = fs.readFileSync(feed, 'utf8').trim().split('\n').slice(1);
    for (let i = 0; i < 1500; i++) probes.push(lines[(rnd() * lines.length) | 0].split(',')[0].split('/')[0].split('-')[0]);
    for (let i = 0; i < 500; i++) probes.push(`${1 + ((rnd() * 222) | 0)}.${(rnd() * 256) | 0}.${(rnd() * 256) | 0}.${(rnd() * 256) | 0}`);
  });

  const want = (ip: string): Record<string, unknown> | null => {
    const p = new ParsedAddress();
    parseAddress(ip, 0, ip.length, p);
    if (p.kind === 4 ? isBogonV4(p.v4) : isBogonV6(p.w)) return null;
    const a = answerOf(index, ip);
    return geoip2Expected(
      a,
      CATEGORIES.filter((c) => a[`is_${c}`] === true),
    );
  };

  test('each file carries exactly one of MaxMind’s database types; the two differ in their metadata alone', async () => {
    // maxmind.open, not new Reader: Bun's default import of the package has no Reader.
    const types = await Promise.all([file, plusFile].map(async (f) => (await maxmind.open(f)).metadata.databaseType));
    assert.deepEqual(types, ['GeoIP2-Anonymous-IP', 'GeoIP-Anonymous-Plus']);
    const [a, b] = [file, plusFile].map((f) => fs.readFileSync(f));
    const marker = Buffer.from([0xab, 0xcd, 0xef, ...Buffer.from('MaxMind.com')]);
    assert.ok(a.subarray(0, a.lastIndexOf(marker)).equals(b.subarray(0, b.lastIndexOf(marker))), 'one tree and data section, written once');
    assert.throws(() => Reader.openBuffer(a).anonymousPlus('81.7.3.20'), /cannot be used with the GeoIP2-Anonymous-IP database/);
    assert.throws(() => Reader.openBuffer(b).anonymousIP('81.7.3.20'), /cannot be used with the GeoIP-Anonymous-Plus database/);
  });

  test('@maxmind/geoip2-node: anonymousIP() and anonymousPlus() read every field of the mapping', () => {
    const reader = Reader.openBuffer(fs.readFileSync(file));
    const plusReader = Reader.openBuffer(fs.readFileSync(plusFile));
    let found = 0;
    for (const ip of probes) {
      const w = want(ip);
      if (w === null) {
        assert.throws(() => reader.anonymousIP(ip), AddressNotFoundError, ip);
        continue;
      }
      found++;
      const plus = plusReader.anonymousPlus(ip);
      const flags = reader.anonymousIP(ip);
      const got = {
        is_anonymous: flags.isAnonymous,
        is_anonymous_vpn: flags.isAnonymousVpn,
        is_hosting_provider: flags.isHostingProvider,
        is_public_proxy: flags.isPublicProxy,
        is_residential_proxy: flags.isResidentialProxy,
        is_tor_exit_node: flags.isTorExitNode,
        anonymizer_confidence: plus.anonymizerConfidence,
        network_last_seen: plus.networkLastSeen,
        provider_name: plus.providerName,
      };
      // The readers turn an absent flag into false and an absent Plus field into undefined.
      const full = {
        is_anonymous_vpn: false,
        is_hosting_provider: false,
        is_public_proxy: false,
        is_residential_proxy: false,
        is_tor_exit_node: false,
        anonymizer_confidence: undefined,
        network_last_seen: undefined,
        provider_name: undefined,
        ...w,
      };
      assert.deepEqual(got, full, ip);
      assert.equal(plus.isAnonymousVpn, got.is_anonymous_vpn);
    }
    assert.ok(found > 500, `only ${found} probes in the database`);
  });

  const hasGeoip2 = spawnSync('/usr/bin/python3', ['-c', 'import geoip2.database']).status === 0;
  test('Python geoip2 (Debian python3-geoip2): anonymous_ip() reads the flags', {
    skip: !hasGeoip2 && 'python3-geoip2 is not installed (.ci/run installs it)',
  }, () => {
    const script = `
import json, sys, geoip2.database, geoip2.errors
r = geoip2.database.Reader(sys.argv[1])
out = []
for ip in json.load(sys.stdin):
    try:
        a = r.anonymous_ip(ip)
        out.append({k: getattr(a, k) for k in ('is_anonymous', 'is_anonymous_vpn', 'is_hosting_provider', 'is_public_proxy', 'is_residential_proxy', 'is_tor_exit_node') if hasattr(a, k)})
    except geoip2.errors.AddressNotFoundError:
        out.append(None)
print(json.dumps(out))`;
    const r = spawnSync('/usr/bin/python3', ['-c', script, file], { input: JSON.stringify(probes), encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const got = JSON.parse(r.stdout) as (Record<string, boolean> | null)[];
    // Debian 12's geoip2 2.9 has five of the six flags (is_residential_proxy came in 4.x).
    const flags = ['is_anonymous', 'is_anonymous_vpn', 'is_hosting_provider', 'is_public_proxy', 'is_residential_proxy', 'is_tor_exit_node'];
    const known = flags.filter((f) => got.some((g) => g !== null && f in g));
    assert.ok(known.length >= 5, `the reader knows ${known.join(', ')}`);
    probes.forEach((ip, i) => {
      const w = want(ip);
      assert.deepEqual(got[i], w === null ? null : Object.fromEntries(known.map((f) => [f, w[f] === true])), ip);
    });
    assert.ok(got.filter((g) => g !== null).length > 500);
  });
});
