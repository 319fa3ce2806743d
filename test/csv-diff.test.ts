// Diffs of the CSV databases: each publication after the first publishes, beside each CSV, the
// diff from the file downloads served before; old CSV + diff = new CSV by SHA-256, over the
// API and with `ipsift diff apply`, which gzips it back to the published file's bytes.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { runBuild } from '../src/build/build.js';
import { createKey, createOrganisation } from '../src/control/accounts.js';
import { grantLicence } from '../src/control/licences.js';
import { latestPublication } from '../src/control/publications.js';
import { exportsDir } from '../src/data-dir.js';
import { CsvDiffError, applyCsvDiff, diffCsv, readCsvText } from '../src/exports/csv-diff.js';
import { importFeed } from '../src/feeds/import.js';
import { loadPlans } from '../src/model/plans.js';
import { LocalStore } from '../src/objects/local-store.js';
import { publishExports, readCsvDiffs } from '../src/pipeline/publish.js';
import { pruneBuilds } from '../src/pipeline/prune.js';
import type { Service } from '../src/service.js';
import { TestClock } from './test-clock.js';
import { PROJECT_ROOT, fetchBytes, get, openTestControlDb, plansFile, startTestService, tempDir, writeFile } from './helpers.js';

const CLI = path.join(PROJECT_ROOT, 'dist/src/cli.js');
const sha256 = (b: Uint8Array): string => crypto.createHash('sha256').update(b).digest('hex');

/** 360 networks of three categories; `version` 2 drops 12, changes 12 and adds 20 (IPv6 among them). */
function feed(version: 1 | 2): string {
  const rows: string[] = [];
  for (let i = 0; i < 120; i++) {
    if (version === 2 && i % 10 === 3) continue; // dropped
    const provider = version === 2 && i % 10 === 7 ? 'OtherVPN' : 'ExampleVPN';
    // Every other network, so that none merge with a neighbour.
    rows.push(
      `82.${2 * i}.0.0/16,vpn,${provider},2026-11-01`,
      `83.${i}.128.0/24,resproxy,ResiNet,2026-11-01`,
      `2a01:4f8:${(2 * i).toString(16)}::/48,hosting,Hoster,2026-11-01`,
    );
  }
  if (version === 2) for (let i = 0; i < 20; i++) rows.push(`91.${2 * i}.0.0/16,vpn,NewVPN,2026-11-02`);
  return `network,category,provider,last_seen\n${rows.join('\n')}\n`;
}

/** Day `d`'s feed: 300 networks drifting, a few dropped, moved to another provider or added each day. */
function driftingFeed(d: number): string {
  const rows: string[] = [];
  for (let i = 0; i < 300; i++) {
    if ((i * 7 + d) % 23 === 0) continue;
    const provider = (i + d) % 17 === 0 ? `Moved${d % 3}` : 'ExampleVPN';
    rows.push(`82.${i % 128}.${2 * Math.floor(i / 128)}.0/24,vpn,${provider},2026-11-01`);
    if (i % 3 === 0) rows.push(`2a01:4f8:${(2 * i).toString(16)}::/48,hosting,Hoster,2026-11-01`);
  }
  for (let i = 0; i < d % 5; i++) rows.push(`91.${d}.${2 * i}.0/24,vpn,Day${d},2026-11-02`);
  return `network,category,provider,last_seen\n${rows.join('\n')}\n`;
}

describe('CSV diffs over 30 daily publications', () => {
  test("applying each day's diff to the file before gives every day's file, by SHA-256 of the CSV and of the .csv.gz", async () => {
    const dataDir = tempDir();
    const db = openTestControlDb(dataDir);
    const store = new LocalStore(dataDir);
    const start = Date.parse('2026-10-01T00:05:00Z');
    const published: { build: string; csv: Buffer; gz: string }[] = [];
    try {
      for (let d = 0; d < 30; d++) {
        const now = new Date(start + d * 86_400_000);
        importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', driftingFeed(d)), name: 'feed', replace: true });
        const build = runBuild({ dataDir, now });
        await publishExports(db, store, dataDir, build.id, now);
        // Pruned as the pipeline prunes: the build downloads served before stays until the next is published.
        const file = path.join(exportsDir(dataDir, build.id), 'vpn_v1.csv.gz');
        published.push({ build: build.id, csv: readCsvText(file), gz: sha256(fs.readFileSync(file)) });
        if (d === 0) continue;
        const diffFile = path.join(exportsDir(dataDir, build.id), 'vpn_v1.csv.diff.gz');
        const made = applyCsvDiff(published[d - 1].csv, zlib.gunzipSync(fs.readFileSync(diffFile)));
        assert.ok(made.equals(published[d].csv), `day ${d}: old + diff = new`);
        assert.equal(readCsvDiffs(dataDir, build.id).vpn_v1.from_build, published[d - 1].build, `day ${d}: from the day before`);
        await pruneBuilds(db, store, dataDir, 2, null);
      }
    } finally {
      db.close();
    }
    // The CSVs did change from day to day, and each diff named the published file it makes.
    assert.ok(new Set(published.map((p) => p.gz)).size >= 25, 'the files differ from day to day');
  });
});

describe('CSV diffs', () => {
  let dataDir: string;
  let svc: Service;
  let key: string;
  const builds: string[] = [];

  /** The service's clock, set to a day of its own: builds, publications and licences are dated by it. */
  const clock = new TestClock();
  clock.advance(Date.parse('2026-11-02T12:00:00Z') - clock.now());

  before(async () => {
    dataDir = tempDir();
    const db = openTestControlDb(dataDir);
    const plans = loadPlans(plansFile(dataDir));
    const org = createOrganisation(db, plans, 'diffs', 'max');
    key = createKey(db, { orgId: org.id, name: 'diffs', scopes: ['db.download'] }).secret;
    const day = 86_400_000;
    grantLicence(
      db,
      {
        orgId: org.id,
        base: 'vpn',
        licenceType: 'subscription',
        starts: new Date(clock.now() - day).toISOString(),
        expires: new Date(clock.now() + day).toISOString(),
      },
      ['vpn', 'vpn_provider'],
    );
    const store = new LocalStore(dataDir);
    for (const version of [1, 2] as const) {
      importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', feed(version)), name: 'feed', replace: true });
      const now = new Date(clock.now() + version * 1000);
      const build = runBuild({ dataDir, now });
      builds.push(build.id);
      await publishExports(db, store, dataDir, build.id, now);
    }
    db.close();
    svc = await startTestService({ dataDir, plansFile: plansFile(dataDir) }, undefined, { clock });
  });
  after(() => svc?.close());

  const csvOf = (build: string, id: string): Buffer => readCsvText(path.join(exportsDir(dataDir, build), `${id}.csv.gz`));

  test('each CSV database of the second publication has a diff from the first: old + diff = new, by SHA-256', () => {
    const diffs = readCsvDiffs(dataDir, builds[1]);
    assert.ok(Object.keys(diffs).includes('vpn_v1') && Object.keys(diffs).includes('vpn_provider_v1'), Object.keys(diffs).join());
    assert.deepEqual(readCsvDiffs(dataDir, builds[0]), {}, 'the first publication has nothing to diff from');
    for (const [id, d] of Object.entries(diffs)) {
      const older = csvOf(builds[0], id);
      const newer = csvOf(builds[1], id);
      const diff = zlib.gunzipSync(fs.readFileSync(path.join(exportsDir(dataDir, builds[1]), `${id}.csv.diff.gz`)));
      const made = applyCsvDiff(older, diff);
      assert.ok(made.equals(newer), `${id}: old + diff = new`);
      assert.deepEqual([d.from_build, d.from_csv_sha256, d.to_csv_sha256], [builds[0], sha256(older), sha256(newer)], id);
      if (id === 'vpn_v1') {
        // Only what changed: 12 rows dropped, 12 with another provider, 20 new.
        const ops = { '+': 0, '-': 0, '=': 0 };
        const lines = diff.toString('utf8').split('\n').slice(4);
        for (let k = 0; k < lines.length; k++) {
          const m = /^([=+-])(\d+)$/.exec(lines[k]);
          if (!m) continue;
          ops[m[1] as '+' | '-' | '='] += Number(m[2]);
          if (m[1] === '+') k += Number(m[2]);
        }
        assert.deepEqual(ops, { '-': 24, '+': 32, '=': older.toString('utf8').split('\n').length - 1 - 24 }, 'the least diff');
      }
    }
  });

  test('a diff refuses a file it was not made from, and a damaged diff', () => {
    const older = csvOf(builds[0], 'vpn_v1');
    const newer = csvOf(builds[1], 'vpn_v1');
    const diff = diffCsv(older, newer, '0'.repeat(64));
    assert.throws(
      () => applyCsvDiff(newer, diff),
      (e) => e instanceof CsvDiffError && /^this diff applies to the CSV whose SHA-256 is [0-9a-f]{64}; this one's is/.test(e.message),
    );
    const cut = diff.subarray(0, diff.length - 40);
    assert.throws(() => applyCsvDiff(older, cut), CsvDiffError);
    assert.throws(() => applyCsvDiff(older, Buffer.from('not a diff\n')), /not an ipsift CSV diff/);
    // Rows out of order, a last line without a newline, a quoted newline: still exact.
    const a = Buffer.from('network,x\n9.0.0.0/8,"a\nb"\n1.0.0.0/8,a\n::/0,c\nprovider,z');
    const b = Buffer.from('network,x\n1.0.0.0/8,a\n9.0.0.0/8,"a\nc"\n2.0.0.0/8,d\nprovider,z\n');
    assert.ok(applyCsvDiff(a, diffCsv(a, b, '0'.repeat(64))).equals(b));
    assert.ok(applyCsvDiff(b, diffCsv(b, a, '0'.repeat(64))).equals(a));
  });

  test('the catalogue lists each diff beside the files; download with diff=true; ipsift diff apply makes the published file', async () => {
    const auth = { Authorization: `Bearer ${key}` };
    const list = await get(svc.port, '/api/v1/database/list', auth);
    const vpn = list.json.databases.find((d: { base: string }) => d.base === 'vpn').versions[0];
    const db = openTestControlDb(dataDir);
    const [oldCsv, newCsv] = builds.map(
      (b) =>
        db.prepare("SELECT checksums FROM publications WHERE dataset_id = 'vpn_v1' AND format = 'csvgz' AND sample = 0 AND build_id = ?").get(b) as {
          checksums: string;
        },
    );
    const diffPub = latestPublication(db, 'vpn_v1', 'csvdiff', false);
    const rangesPub = latestPublication(db, 'vpn_v1', 'rangediff', false);
    db.close();
    const versions = { from_sha256: JSON.parse(oldCsv.checksums).sha256, to_sha256: JSON.parse(newCsv.checksums).sha256 };
    assert.deepEqual(vpn.diffs, [
      { format: 'csvgz', bytes: diffPub!.bytes, ...versions },
      { format: 'ranges', bytes: rangesPub!.bytes, ...versions },
    ]);
    // The range diff: every vpn range whose answer changed, one JSON object a line.
    const rangesLink = String((await get(svc.port, '/api/v1/database/download?id=vpn_v1&format=csvgz&diff=ranges', auth)).headers.location);
    const rangesFile = await fetchBytes(rangesLink.startsWith('/') ? `http://127.0.0.1:${svc.port}${rangesLink}` : rangesLink);
    const lines = zlib
      .gunzipSync(rangesFile.body)
      .toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.ok(
      lines.every((l) => l.category === 'vpn'),
      "the database's categories only",
    );
    const kinds = { gained: 0, lost: 0, changed: 0 };
    for (const l of lines) kinds[l.before === null ? 'gained' : l.after === null ? 'lost' : 'changed']++;
    assert.deepEqual(kinds, { gained: 20, lost: 12, changed: 12 }, JSON.stringify(lines.slice(0, 3)));
    const moved = lines.find((l) => l.before !== null && l.after !== null);
    assert.deepEqual(
      [moved.before.provider, moved.after.provider, moved.first.endsWith('.0.0'), moved.last.endsWith('.255.255')],
      ['ExampleVPN', 'OtherVPN', true, true],
    );
    // The mmdb stays whole: no diff listed for it, and asking for one says why.
    const r = await get(svc.port, '/api/v1/database/download?id=vpn_v1&format=csvgz&diff=true', auth);
    assert.equal(r.status, 302, r.text);
    const location = r.headers.location as string;
    const file = await fetchBytes(location.startsWith('/') ? `http://127.0.0.1:${svc.port}${location}` : location);
    assert.equal(file.status, 200);
    const work = tempDir();
    const diffFile = path.join(work, 'vpn_v1.csv.diff.gz');
    fs.writeFileSync(diffFile, file.body);
    const oldFile = path.join(exportsDir(dataDir, builds[0]), 'vpn_v1.csv.gz');
    const out = path.join(work, 'vpn_v1.csv.gz');
    const applied = JSON.parse(execFileSync(process.execPath, [CLI, 'diff', 'apply', oldFile, diffFile, out, '--json'], { encoding: 'utf8' }));
    assert.equal(applied.same_as_published, true, JSON.stringify(applied));
    assert.equal(sha256(fs.readFileSync(out)), JSON.parse(newCsv.checksums).sha256, 'gzipped back byte for byte as published');
    // Applied to the wrong file: refused with why, exit 2.
    const wrong = (() => {
      try {
        execFileSync(process.execPath, [CLI, 'diff', 'apply', out, diffFile, path.join(work, 'again.csv')], { encoding: 'utf8', stdio: 'pipe' });
        return null;
      } catch (e) {
        return e as { status: number; stderr: string };
      }
    })();
    assert.ok(wrong && wrong.status !== 0 && /this diff applies to the CSV whose SHA-256 is/.test(wrong.stderr), wrong?.stderr);
    const refused = async (query: string, status: number, message: RegExp): Promise<void> => {
      const x = await get(svc.port, `/api/v1/database/download?${query}`, auth);
      assert.deepEqual([x.status, message.test(x.json.message ?? x.json.error ?? '')], [status, true], `${query}: ${x.text}`);
    };
    await refused('id=vpn_v1&format=mmdb&diff=true', 400, /^diffs are published for format=csvgz only/);
    await refused('id=vpn_v1&format=csvgz&diff=yes', 400, /^diff must be true \(the CSV's diff\), ranges \(the range diff\) or false/);
    await refused('id=vpn_v1&format=csvgz&sample=true&diff=true', 400, /^diffs are published of the full CSV only/);
    const history = await get(svc.port, '/api/v1/database/downloads', auth);
    assert.equal(history.json.downloads.find((d: { http_status: number }) => d.http_status === 302).format, 'csvdiff');
  });
});
