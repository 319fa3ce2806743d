// Evidence kinds (src/feeds/evidence.ts) and the sanity of claims (src/feeds/claims.ts): what
// each kind of source may make an address, and networks no provider holds.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, test } from 'node:test';
import { explainAddress } from '../src/build/explain.js';
import { FeedImportError, importFeed } from '../src/feeds/import.js';
import { listFeeds } from '../src/feeds/feed-store.js';
import { PROJECT_ROOT, TODAY, answerOf, buildIndex, get, openTestControlDb, raw, startTestService, tempDir, writeFile } from './helpers.js';
import { createAdminToken } from '../src/control/admin-tokens.js';
import { runBuild } from '../src/build/build.js';

/** Imports text as a feed of the given options into dataDir. */
function feed(dataDir: string, name: string, text: string, o: Partial<Parameters<typeof importFeed>[0]> = {}) {
  return importFeed({ dataDir, file: writeFile(tempDir(), `${name}.txt`, text), name, format: 'list', ...o });
}

describe('evidence kinds', () => {
  test('a mixed aggregate makes no VPN inside space its owner publishes; outside it, vpn asn/low and hosting', async () => {
    const d = tempDir();
    // The aggregate claims a /16 as VPN; the owner publishes a /24 inside it as its cloud.
    feed(d, 'aggregate', '45.10.0.0/16\n', { category: 'vpn', evidence: 'aggregate' });
    feed(d, 'owner', '45.10.7.0/24\n', { category: 'hosting', evidence: 'owner', details: { provider: 'ExampleCloud' } });
    const index = await buildIndex(d);
    const inOwner = answerOf(index, '45.10.7.9');
    assert.equal(inOwner.is_vpn, false);
    assert.deepEqual(inOwner.hosting, { provider: 'ExampleCloud', confidence: 'high', last_seen: TODAY });
    const outside = answerOf(index, '45.10.9.9');
    assert.equal(outside.is_vpn, true);
    assert.deepEqual(outside.vpn, { confidence: 'low', method: 'asn', last_seen: TODAY });
    // What an aggregate claims is hosting too, without a provider (it does not say whose).
    assert.equal(outside.is_hosting, true);
    assert.deepEqual(outside.hosting, { confidence: 'low', last_seen: TODAY });
  });

  test("a provider's server list inside owner space and inside an aggregate stands, with method server_list", async () => {
    const d = tempDir();
    feed(d, 'aggregate', '45.10.0.0/16\n', { category: 'vpn', evidence: 'aggregate', details: { provider: 'Mixed' } });
    feed(d, 'asn', '45.10.0.0/17\n', { category: 'vpn', evidence: 'asn', details: { provider: 'ProtonVPN' }, priority: 100 });
    feed(d, 'owner', '45.10.7.0/24\n', { category: 'hosting', evidence: 'owner', details: { provider: 'ExampleCloud' } });
    feed(d, 'servers', '45.10.7.20\n45.10.1.1\n', { category: 'vpn', evidence: 'server_list', details: { provider: 'Private Internet Access' } });
    const index = await buildIndex(d);
    for (const ip of ['45.10.7.20', '45.10.1.1']) {
      const a = answerOf(index, ip);
      assert.equal(a.is_vpn, true, ip);
      // The server list wins over a higher-priority ASN derivation: bands come before priority.
      assert.deepEqual(a.vpn, { provider: 'Private Internet Access', confidence: 'high', method: 'server_list', last_seen: TODAY }, ip);
    }
    assert.equal(answerOf(index, '45.10.7.21').is_vpn, false);
    assert.deepEqual(answerOf(index, '45.10.1.2').vpn, { provider: 'ProtonVPN', confidence: 'medium', method: 'asn', last_seen: TODAY });
    assert.deepEqual(answerOf(index, '45.10.200.1').vpn, { provider: 'Mixed', confidence: 'low', method: 'asn', last_seen: TODAY });
  });

  test("an owner's file outranks a third party's relabel of the same space, whatever the names", async () => {
    const d = tempDir();
    // Equal networks, equal dates: before bands, the greater detail text ("Vercel Aws") won.
    feed(d, 'relabel', '8.8.8.0/24\n', { category: 'hosting', details: { provider: 'Vercel Aws' } });
    feed(d, 'goog', '8.8.8.0/24\n', { category: 'hosting', evidence: 'owner', details: { provider: 'Google' } });
    const index = await buildIndex(d);
    assert.deepEqual(answerOf(index, '8.8.8.8').hosting, { provider: 'Google', confidence: 'high', last_seen: TODAY });
  });

  test('a row that states its method and confidence keeps them; the kind is kept with the feed', async () => {
    const d = tempDir();
    const file = writeFile(tempDir(), 'probe.csv', 'network,category,provider,method,confidence\n45.11.0.1,vpn,Seen,traffic,low\n45.11.0.2,vpn,Seen,,\n');
    importFeed({ dataDir: d, file, evidence: 'exit_probe' });
    assert.deepEqual(
      listFeeds(d).map((f) => [f.name, f.evidence, f.priority]),
      [['probe', 'exit_probe', 0]],
    );
    const index = await buildIndex(d);
    assert.deepEqual(answerOf(index, '45.11.0.1').vpn, { provider: 'Seen', confidence: 'low', method: 'traffic', last_seen: TODAY });
    assert.deepEqual(answerOf(index, '45.11.0.2').vpn, { provider: 'Seen', confidence: 'high', method: 'exit_probe', last_seen: TODAY });
  });

  test('an unknown kind is refused with the kinds', () => {
    assert.throws(
      () => feed(tempDir(), 'x', '45.10.0.1\n', { category: 'vpn', evidence: 'rumour' }),
      /unknown evidence "rumour": one of server_list, exit_probe, traffic, owner, list, asn, aggregate/,
    );
  });
});

describe('claims no provider can make', () => {
  const refused = (text: string): string => {
    try {
      feed(tempDir(), 'big', text, { category: 'hosting' });
    } catch (e) {
      assert.ok(e instanceof FeedImportError);
      return e.message;
    }
    assert.fail(`${text} was imported`);
  };

  test('a /8 or more of IPv4, a /16 or more of IPv6, 6to4 and NAT64 are refused, naming the line and the way through', () => {
    // Bogon space needs no refusal: it is never looked up.
    assert.match(
      refused('45.0.0.0/8\n'),
      /big\.txt:1: 45\.0\.0\.0\/8: a \/8 or larger, almost never one provider's \(--allow-large-blocks imports it anyway\)$/,
    );
    assert.match(refused('1.2.3.4\n44.0.0.0-46.0.0.0\n'), /big\.txt:2: .*a \/8 or larger/);
    assert.match(refused('2a00::/16\n'), /a \/16 or larger, almost never one provider's/);
    assert.match(refused('2002::/16\n'), /a \/16 or larger/);
    assert.match(refused('2002:c000:204::/48\n'), /in 2002::\/16 \(6to4\), which no provider holds/);
    assert.match(refused('64:ff9b::/96\n'), /in 64:ff9b::\/96 \(NAT64\)/);
    // A /9 is a provider's to hold; so is a /17 of IPv6.
    const d = tempDir();
    assert.equal(feed(d, 'ok', '45.0.0.0/9\n2a00::/17\n', { category: 'hosting' }).rows, 2);
  });

  test('with skip-invalid they are skipped and counted with their reason; with the option, imported', () => {
    const r = feed(tempDir(), 'vultr', '2002::/16\n2001:19f0::/32\n', { category: 'hosting', skipInvalid: true });
    assert.deepEqual([r.rows, r.skipped], [1, 1]);
    assert.match(r.skippedExamples[0], /2002::\/16: a \/16 or larger/);
    assert.equal(feed(tempDir(), 'all', '2002::/16\n', { category: 'hosting', allowLargeBlocks: true }).rows, 1);
  });
});

describe('ipsift explain', () => {
  test("every covering claim in the build's order, the rule that decided, and the same verdict as the index", async () => {
    const d = tempDir();
    feed(d, 'misp-vpn', '45.10.0.0/16\n', { category: 'vpn', evidence: 'aggregate' });
    feed(d, 'proton-asn', '45.10.0.0/20\n', { category: 'vpn', evidence: 'asn', details: { provider: 'ProtonVPN' } });
    feed(d, 'pia', '45.10.7.20\n', { category: 'vpn', evidence: 'server_list', details: { provider: 'PIA' } });
    feed(d, 'cloud', '45.10.7.0/24\n', { category: 'hosting', evidence: 'owner', details: { provider: 'ExampleCloud' } });
    feed(d, 'relabel', '45.10.7.0/24\n', { category: 'hosting', details: { provider: 'Someone Else' } });
    const index = await buildIndex(d);
    const e = explainAddress(d, '45.10.7.20')!;
    assert.deepEqual(
      e.categories.vpn!.claims.map((c) => [c.feed, c.evidence, c.network, c.detail]),
      [
        ['pia', 'server_list', '45.10.7.20/32', { provider: 'Private Internet Access', confidence: 'high', method: 'server_list', last_seen: TODAY }],
        ['cloud', 'owner', '45.10.7.0/24', null],
        ['proton-asn', 'asn', '45.10.0.0/20', { provider: 'ProtonVPN', confidence: 'medium', method: 'asn', last_seen: TODAY }],
        ['misp-vpn', 'aggregate', '45.10.0.0/16', { confidence: 'low', method: 'asn', last_seen: TODAY }],
      ],
    );
    assert.equal(e.categories.vpn!.rule, 'pia (server_list) claims 45.10.7.20/32: server_list evidence outranks owner over cloud (owner, 45.10.7.0/24)');
    assert.deepEqual(e.categories.vpn!.answer, answerOf(index, '45.10.7.20').vpn);
    // Next door, the owner's "not vpn" decides; hosting is the owner's name over the relabel.
    const next = explainAddress(d, '45.10.7.21')!;
    assert.equal(next.categories.vpn!.answer, null);
    assert.equal(next.categories.vpn!.rule, 'cloud (owner) says 45.10.7.0/24 is not vpn: owner evidence outranks asn over proton-asn (asn, 45.10.0.0/20)');
    assert.equal(answerOf(index, '45.10.7.21').is_vpn, false);
    assert.equal(next.categories.hosting!.rule, 'cloud (owner) claims 45.10.7.0/24: owner evidence outranks list over relabel (list, 45.10.7.0/24)');
    // Outside the owner's space the ASN derivation outranks the aggregate.
    assert.match(explainAddress(d, '45.10.1.1')!.categories.vpn!.rule, /^proton-asn \(asn\) claims 45\.10\.0\.0\/20: asn evidence outranks aggregate/);
    // Mapped IPv6 is explained as its IPv4 address; a bogon says so; text that is no address is null.
    assert.equal(explainAddress(d, '::ffff:45.10.7.20')!.categories.vpn!.claims[0].feed, 'pia');
    assert.equal(explainAddress(d, '10.0.0.1')!.bogon, true);
    assert.equal(explainAddress(d, 'nope'), null);
  });

  test('the command prints the claims and the rule', async () => {
    const d = tempDir();
    feed(d, 'a', '45.10.0.0/16\n', { category: 'vpn', evidence: 'aggregate' });
    feed(d, 'b', '45.10.7.0/24\n', { category: 'hosting', evidence: 'owner', details: { provider: 'AWS' } });
    const r = spawnSync(process.execPath, [path.join(PROJECT_ROOT, 'dist/src/cli.js'), 'explain', '45.10.7.1'], {
      env: { ...process.env, DATA_DIR: d },
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(
      r.stdout,
      [
        '45.10.7.1',
        '  vpn: not vpn — b (owner) says 45.10.7.0/24 is not vpn: owner evidence outranks aggregate over a (aggregate, 45.10.0.0/16)',
        '      b\towner\tpriority 0\t45.10.7.0/24\tnot vpn',
        `      a\taggregate\tpriority 0\t45.10.0.0/16\t{"last_seen":"${TODAY}","confidence":"low","method":"asn"}`,
        `  hosting: is_hosting {"provider":"Amazon Web Services","confidence":"high","last_seen":"${TODAY}"} — b (owner) claims 45.10.7.0/24: owner evidence outranks aggregate over a (aggregate, 45.10.0.0/16)`,
        `      b\towner\tpriority 0\t45.10.7.0/24\t{"provider":"Amazon Web Services","confidence":"high","last_seen":"${TODAY}"}`,
        `      a\taggregate\tpriority 0\t45.10.0.0/16\t{"confidence":"low","last_seen":"${TODAY}"}`,
        '',
      ].join('\n'),
    );
    const bad = spawnSync(process.execPath, [path.join(PROJECT_ROOT, 'dist/src/cli.js'), 'explain', 'nope'], {
      env: { ...process.env, DATA_DIR: d },
      encoding: 'utf8',
    });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /^ipsift: not an IP address: "nope"/);
  });

  test("the admin port explains too, off its event loop, with the serving build's answer beside it", async () => {
    const d = tempDir();
    feed(d, 'a', '45.10.0.0/16\n', { category: 'vpn', evidence: 'aggregate' });
    feed(d, 'b', '45.10.7.0/24\n', { category: 'hosting', evidence: 'owner', details: { provider: 'AWS' } });
    runBuild({ dataDir: d, exports: false });
    const svc = await startTestService({ dataDir: d });
    const db = openTestControlDb(d);
    const read = { Authorization: `Bearer ${createAdminToken(db, 'support', ['admin.read']).secret}` };
    db.close();
    try {
      // Like the rest of the admin API: an operator token, one Authorization header.
      const none = await get(svc.adminPort, '/explain/45.10.7.1');
      assert.deepEqual([none.status, none.json.rc], [401, 'UNAUTHORIZED']);
      const two = await raw(
        svc.adminPort,
        `GET /explain/45.10.7.1 HTTP/1.1\r\nHost: t\r\n${read.Authorization.replace(/^/, 'Authorization: ')}\r\nAuthorization: Bearer iat_other\r\nConnection: close\r\n\r\n`,
      );
      assert.match(two, /^HTTP\/1\.1 401 /);
      const r = await get(svc.adminPort, '/explain/45.10.7.1', read);
      assert.equal(r.status, 200);
      assert.equal(r.json.categories.vpn.answer, null);
      assert.equal(r.json.categories.vpn.claims.length, 2);
      const served = r.json.serving.answer;
      assert.deepEqual(
        [served.ip, served.is_vpn, served.is_hosting, served.hosting],
        ['45.10.7.1', false, true, { provider: 'Amazon Web Services', confidence: 'high', last_seen: TODAY }],
      );
      assert.equal((await get(svc.adminPort, '/explain/2001:db8::1', read)).json.bogon, true);
      assert.deepEqual((await get(svc.adminPort, '/explain/nope', read)).json, { error: 'not a valid IP address' });
      // Lookups are not on the public port.
      assert.equal((await get(svc.port, '/explain/45.10.7.1')).status, 404);
    } finally {
      await svc.close();
    }
  });
});
