// ipsift's MMDB files in MaxMind's own Go readers (Debian: golang-go,
// golang-github-oschwald-maxminddb-golang-dev, golang-github-oschwald-geoip2-golang-dev, run in
// GOPATH mode without a network; .ci/run installs them): Reader.Verify() on every export of a
// synthetic build and of the real-data build (a data section holding only what the search
// tree reaches), and geoip2-golang's AnonymousIP(), which accepts a file of exactly the type
// GeoIP2-Anonymous-IP and nothing else.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { runBuild } from '../src/build/build.js';
import { EXPORTS_DIR, INDEX_FILE } from '../src/data-dir.js';
import { importFeed } from '../src/feeds/import.js';
import { loadIndexFile } from '../src/index/loader.js';
import { writeFeedCsv } from '../scripts/gen-feeds.js';
import { REAL, importRealData } from '../scripts/real-data.js';
import { PROJECT_ROOT, answerOf, tempDir, writeFile } from './helpers.js';

const GOPATH = '/usr/share/gocode';
const missing =
  spawnSync('go', ['version']).status !== 0
    ? 'go is not installed (.ci/run installs golang-go)'
    : !['maxminddb-golang', 'geoip2-golang'].every((p) => fs.existsSync(path.join(GOPATH, 'src/github.com/oschwald', p)))
      ? "MaxMind's Go readers are not installed (.ci/run installs their Debian packages)"
      : null;

interface Report {
  file: string;
  database_type: string;
  verify: string;
  anonymous_ip?: Record<string, unknown>;
}

/** scripts/mmdb-verify.go, built once into a temporary binary. */
let verifier = '';
function verify(files: string[], anonymousIps: string[] = []): Report[] {
  const args = anonymousIps.length ? ['--anonymous-ip', anonymousIps.join(','), ...files] : files;
  const r = spawnSync(verifier, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.ok(r.status === 0 || r.status === 1, r.stderr);
  return r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Report);
}

const ALIASED_FEED = `network,category,provider,last_seen
2002:5107:300::/40,vpn,AliasVPN,2026-11-01
2002:c633:6400::/48,hosting,AliasHost,2026-11-01
::ffff:5107:900/120,vpn,MappedVPN,2026-11-01
`;

const mmdbFiles = (dir: string): string[] =>
  fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.mmdb'))
    .sort()
    .map((f) => path.join(dir, f));

describe("MaxMind's Go readers", { skip: missing ?? false }, () => {
  before(() => {
    verifier = path.join(tempDir(), 'mmdb-verify');
    const env = { ...process.env, GO111MODULE: 'off', GOPATH, GOFLAGS: '', GOCACHE: process.env.GOCACHE ?? path.join(os.tmpdir(), 'ipsift-go-cache') }; // kept: the readers compile once
    const built = spawnSync('go', ['build', '-o', verifier, path.join(PROJECT_ROOT, 'scripts/mmdb-verify.go')], { env, encoding: 'utf8' });
    assert.equal(built.status, 0, built.stderr);
  });

  test('Verify() passes on every MMDB of a 20 000-range synthetic build, samples included', () => {
    const dataDir = tempDir();
    const feed = path.join(dataDir, 'synthetic.csv');
    // Past the sample's cap (a sample of SAMPLE_MAX entries from 2 000 candidates).
    writeFeedCsv(feed, { ranges: 20_000, seed: 7 });
    importFeed({ dataDir, file: feed, name: 'synthetic', allowLargeBlocks: true });
    // IPv6 data inside the IPv4 aliases (2002::/16, ::ffff:0:0/96): records no MMDB's tree reaches.
    importFeed({ dataDir, file: writeFile(dataDir, 'aliases.csv', ALIASED_FEED), name: 'aliases', allowLargeBlocks: true });
    const build = runBuild({ dataDir });
    const files = mmdbFiles(path.join(build.dir, EXPORTS_DIR));
    assert.ok(files.length >= 12, files.join(' '));
    for (const r of verify(files)) assert.equal(r.verify, 'ok', `${path.basename(r.file)} (${r.database_type})`);
  });

  test('Verify() passes on every MMDB of the real-data build; AnonymousIP() reads the GeoIP2 file and refuses the Plus one', {
    skip: !fs.existsSync(REAL) && `${REAL} is not present`,
  }, async () => {
    const dataDir = tempDir();
    await importRealData(dataDir);
    const build = runBuild({ dataDir });
    const dir = path.join(build.dir, EXPORTS_DIR);
    const index = (await loadIndexFile(path.join(build.dir, INDEX_FILE))).index;
    // A Tor exit, a Cloudflare address, an AWS address, a public resolver.
    const probes = ['185.220.101.1', '104.16.0.1', '3.5.140.2', '9.9.9.9'];
    const reports = verify(mmdbFiles(dir), probes);
    for (const r of reports) assert.equal(r.verify, 'ok', `${path.basename(r.file)} (${r.database_type})`);
    const geoip2 = reports.find((r) => path.basename(r.file) === 'geoip2_anonymous_v1.mmdb')!;
    assert.equal(geoip2.database_type, 'GeoIP2-Anonymous-IP');
    let listed = 0;
    for (const ip of probes) {
      const a = answerOf(index, ip);
      const got = geoip2.anonymous_ip![ip] as Record<string, boolean>;
      assert.equal(typeof got, 'object', `${ip}: ${JSON.stringify(got)}`);
      assert.equal(got.IsTorExitNode, a.is_tor === true, `${ip} tor`);
      assert.equal(got.IsHostingProvider, a.is_hosting === true, `${ip} hosting`);
      assert.equal(got.IsAnonymousVPN, a.is_vpn === true, `${ip} vpn`);
      if (got.IsAnonymous) listed++;
    }
    assert.ok(listed >= 2, `${listed} of the probes in the database`);
    const plus = reports.find((r) => path.basename(r.file) === 'geoip2_anonymous_plus_v1.mmdb')!;
    assert.equal(plus.database_type, 'GeoIP-Anonymous-Plus');
    assert.match(String(plus.anonymous_ip?.error ?? ''), /does not support the "GeoIP-Anonymous-Plus" database type/);
  });
});
