// The public source registry (config/sources/public.json) and its refresh: every entry checked
// against the copy of the same file in the real data, fetched through a loopback mirror laid out
// as SOURCES_MIRROR expects, conditionally, and bad upstream answers refused while the last good
// copy answers. Ends with a service started on an empty data directory with SOURCES=public.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { detectFormat, formatByName } from '../src/feeds/formats.js';
import { importFeed, type ImportResult } from '../src/feeds/import.js';
import { readFeed, findFeed, writeFeed } from '../src/feeds/feed-store.js';
import { loadRegistry, mirroredUrl, selectSources } from '../src/feeds/registry.js';
import { refreshSources } from '../src/feeds/refresh.js';
import { readSourceStates, sourceStatuses } from '../src/feeds/source-state.js';
import { DEFAULT_INTERVAL_MS, loadSources, type Source } from '../src/feeds/sources.js';
import { USER_AGENT } from '../src/feeds/source-fetch.js';
import { providerNamed } from '../src/model/providers.js';
import { TIER_MAX } from '../src/model/projection.js';
import { explainAddress } from '../src/build/explain.js';
import { loadConfig } from '../src/config.js';
import { createAdminToken } from '../src/control/admin-tokens.js';
import { configuredSources } from '../src/pipeline/pipeline.js';
import { copyOf, layoutSampleOf, sampleOf, startRealMirror, type RealMirror } from '../scripts/real-mirror.js';
import { REAL, evidenceOf } from '../scripts/real-data.js';
import { PublishScheduler } from '../src/pipeline/scheduler.js';
import { releaseBuildLock, takeBuildLock } from '../src/pipeline/build-lock.js';
import { PROJECT_ROOT, get, openTestControlDb, startTestService, tempDir, until, writeFile } from './helpers.js';

const CLI = path.join(PROJECT_ROOT, 'dist/src/cli.js');

const registry = loadRegistry();
const byName = (name: string): Source => registry.find((s) => s.name === name) as Source;
/** The category each folder of the real data speaks for. */
const FOLDER_CATEGORY: Record<string, string> = {
  tor: 'tor',
  vpn: 'vpn',
  datacenter: 'hosting',
  cloud: 'hosting',
  cdn: 'cdn',
  relay: 'relay',
  proxy: 'dcproxy',
};
const HOUR = 3_600_000;
/** Lists the registry takes for what they are rather than what their file is named. */
const RELABELLED: Record<string, string> = { 'datacenters-misp-ipv4': 'hosting' };
/** Frozen lists kept as ordinary third-party lists. */
const DEMOTED: Record<string, string> = { 'vpn-expressvpn': 'list' };

describe('the registry', () => {
  test('holds at least 30 sources over every category public data speaks for, each with a licence, interval and note', () => {
    assert.ok(registry.length >= 30, `${registry.length} sources`);
    const categories = new Set(registry.map((s) => s.category ?? formatByName(s.format)?.defaultCategory));
    for (const c of ['tor', 'vpn', 'hosting', 'cdn', 'relay', 'dcproxy']) assert.ok(categories.has(c), `no ${c} source`);
    for (const s of registry) {
      assert.ok(s.url?.startsWith('https://'), `${s.name}: an https URL`);
      assert.ok(s.licence && s.note && s.note.length > 10, `${s.name}: licence and note`);
      const hourly = s.category === 'tor' || s.category === 'dcproxy';
      assert.equal(s.intervalMs, hourly ? HOUR : 24 * HOUR, `${s.name}: Tor and proxy lists hourly, the rest daily`);
    }
    // The kinds of list the registry is for: owners' own ranges, VPN server lists, Apple's relay egress.
    for (const name of [
      'aws',
      'google-cloud',
      'azure',
      'oracle-cloud',
      'digitalocean',
      'linode',
      'cloudflare-ipv4',
      'fastly',
      'icloud-private-relay',
      'vpn-mullvad',
      'vpn-protonvpn',
      'tor-exit-addresses',
    ]) {
      assert.ok(byName(name), name);
    }
  });

  test("every entry's format and evidence kind hold for the copy of its file in the real data, or for a sample of its upstream's layout", () => {
    const dataDir = tempDir();
    const sampled: string[] = [];
    const read = (s: Source, file: string): ImportResult => {
      const text = fs.readFileSync(file, 'utf8');
      const detected = detectFormat(text);
      assert.ok(!(detected instanceof Error), `${s.name}: ${String(detected)}`);
      // A plain list is what no other format claims; any other format is the one the content shows.
      assert.equal(
        (detected as { name: string }).name,
        s.format === 'list' ? 'list' : s.format,
        `${s.name}: ${file} reads as ${(detected as { name: string }).name}`,
      );
      const r = importFeed({
        dataDir,
        file,
        name: s.name,
        replace: true,
        format: s.format,
        category: s.category,
        details: s.details,
        skipInvalid: s.skipInvalid,
        priority: s.priority,
        not: s.not,
        evidence: s.evidence,
      });
      assert.ok(r.rows > 0 && r.skipped <= r.rows * 0.1, `${s.name}: ${r.rows} rows, ${r.skipped} skipped`);
      return r;
    };
    for (const s of registry) {
      assert.ok(s.kind && s.maxAgeMs, `${s.name}: kind and max_age`);
      const copy = copyOf(s);
      if (!copy) {
        // No verbatim copy: the registry says so and where the layout is documented, and a
        // sample in that layout reads (the Microsoft page: the link it names is what is read).
        assert.equal(s.copy, null, `${s.name}: no copy of ${s.url} in the real data, and the registry does not say so`);
        assert.match(s.formatDoc ?? '', /^https:\/\//, `${s.name}: format_doc`);
        const sample = sampleOf(s) ?? layoutSampleOf(s);
        assert.ok(sample, `${s.name}: a sample of its upstream's layout in test/fixtures/upstream`);
        if (s.find) assert.match(fs.readFileSync(sample, 'utf8'), s.find, `${s.name}: the page sample names the file`);
        else read(s, sample);
        sampled.push(s.name);
        continue;
      }
      const r = read(s, copy);
      // The categories answered are the folder's (AWS's CloudFront ranges are cdn beside its hosting),
      // but for lists relabelled for what they are.
      const rel = path.relative(REAL, copy);
      const main = Object.entries(r.byCategory).sort((a, b) => b[1] - a[1])[0][0];
      assert.equal(main, RELABELLED[s.name] ?? FOLDER_CATEGORY[rel.split(path.sep)[0]], `${s.name}: mostly ${main}`);
      // The evidence is what the data's README says the file is; the Tor Project's own lists
      // come from its exit scanner; a frozen list is demoted to an ordinary list.
      const provider = s.details.provider ?? undefined;
      // A mirror of an owner's own file speaks as the owner.
      const ownerCopy = s.kind === 'mirror' && /^(cloud|cdn|datacenter)\//.test(rel) && s.evidence === 'owner';
      const expected =
        DEMOTED[s.name] ??
        (new URL(s.url!).host === 'check.torproject.org' ? 'exit_probe' : s.name in RELABELLED ? 'list' : ownerCopy ? 'owner' : evidenceOf(rel, provider));
      assert.equal(s.evidence, expected, `${s.name}: evidence`);
      if (s.evidence === 'server_list') assert.equal(providerNamed(provider ?? '')?.kind, 'vpn', `${s.name}: a server list names its VPN`);
      if (s.evidence === 'aggregate') assert.equal(provider, undefined, `${s.name}: an aggregate names no provider`);
    }
    assert.ok(sampled.length >= 10, `${sampled.length} sampled`);
    // At least five first-party VPN or Tor sources.
    const firstParty = registry.filter((s) => s.kind === 'first_party' && (s.category === 'vpn' || s.category === 'tor'));
    assert.ok(firstParty.length >= 5, firstParty.map((s) => s.name).join(', '));
  });

  test("every first-party VPN format reads every server address its provider's document holds, and nothing else", () => {
    // Addresses in a sample that are not VPN servers, and why: IVPN's AntiTracker resolvers, API
    // and echo server under config; a Mullvad relay marked inactive.
    const NOT_SERVERS: Record<string, string[]> = {
      'vpn-ivpn-api': ['10.0.254.2', '10.0.254.102', '10.0.254.3', '10.0.254.103', '198.50.177.220', '2607:5300:203:1735::8888', '37.187.112.240'],
      'vpn-mullvad-api': ['146.70.117.2', '2001:ac8:20:1::a99f'],
    };
    const firstPartyVpn = registry.filter((s) => s.kind === 'first_party' && s.category === 'vpn');
    assert.ok(firstPartyVpn.length >= 9, firstPartyVpn.map((s) => s.name).join(', '));
    for (const s of firstPartyVpn) {
      const file = copyOf(s) ?? sampleOf(s);
      assert.ok(file, `${s.name}: a copy or sample`);
      const text = fs.readFileSync(file, 'utf8');
      // Every address the document spells: dotted IPv4 (not a prefix) and quoted IPv6.
      const spelt = new Set([
        ...[...text.matchAll(/(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?![\w./])/g)].map((m) => m[1]),
        ...[...text.matchAll(/"([0-9a-fA-F]{0,4}(?::[0-9a-fA-F]{0,4}){2,7})"/g)].map((m) => m[1]),
      ]);
      const expected = [...spelt].filter((a) => !(NOT_SERVERS[s.name] ?? []).includes(a)).sort();
      const read = formatByName(s.format)!
        .rows({ file, text })
        .map((r) => r.network)
        .sort();
      assert.deepEqual(read, expected, `${s.name} (${s.format}) reads ${path.basename(file)} whole`);
    }
  });

  test('frozen lists are held as frozen (public leaves them out), retired, demoted or relabelled; zscaler reads the document its URL serves', () => {
    for (const name of ['tor-exits-secops', 'tor-exits-ling0x', 'vpn-mullvad-relays', 'stackpath', 'vpn-misp-ipv6', 'vpn-misp-ipv4', 'vpn-protonvpn-api'])
      assert.equal(byName(name), undefined, name);
    // Whose publisher stopped: each says why, and only a name takes it.
    const frozen = registry.filter((s) => s.frozen !== undefined).map((s) => s.name);
    assert.deepEqual(frozen.sort(), [
      'akamai',
      'azure-mirror',
      'google-mirror',
      'tor-exits-doodad',
      'vpn-expressvpn',
      'vpn-nordvpn-az0',
      'vpn-protonvpn-x4bnet',
    ]);
    for (const name of frozen) assert.match(byName(name).frozen!, /\d{4}|never updated/, `${name}: says since when`);
    assert.equal(byName('vpn-expressvpn').evidence, 'list');
    assert.equal(byName('datacenters-misp-ipv4').category, 'hosting');
    assert.match(byName('zscaler').url!, /\/hubs\/cidr\/json\/recommended$/);
    assert.equal(byName('zscaler-cenr').format, 'zscaler-cenr');
    // ProtonVPN's API wants a sign-in: the maintained verbatim copy stands in, labelled a mirror.
    assert.equal(byName('vpn-protonvpn-logicals').kind, 'mirror');
    assert.match(byName('vpn-protonvpn-logicals').note!, /refused anonymous requests \(401\) since April 2025/);
    // The versions maintained clients read.
    assert.match(byName('vpn-nordvpn-api').url!, /\/v2\/servers\b/);
    assert.match(byName('vpn-pia-serverlist').url!, /\/servers\/v7$/);
    // Each cloud and CDN owner the registry reads first-party has a live copy on a second host
    // (Google's one copy froze in 2024).
    for (const [owner, mirror] of [
      ['aws', 'aws-mirror-ipv4'],
      ['azure', 'azure-mirror-lord-alfred-ipv4'],
      ['cloudflare-ipv4', 'cloudflare-mirror-ipv4'],
      ['oracle-cloud', 'oracle-mirror'],
      ['digitalocean', 'digitalocean-mirror-ipv4'],
      ['linode', 'linode-mirror-ipv4'],
    ]) {
      assert.equal(byName(owner).kind, 'first_party', owner);
      assert.equal(byName(mirror).kind, 'mirror', mirror);
      assert.equal(byName(mirror).evidence, 'owner', mirror);
      assert.equal(byName(mirror).frozen, undefined, mirror);
    }
  });

  test('SOURCES picks from it: public, names, -name; unknown names refused with the way out', () => {
    const live = registry.filter((s) => s.frozen === undefined);
    assert.equal(selectSources('public', registry).length, live.length);
    assert.ok(live.length < registry.length);
    assert.ok(
      selectSources('public,akamai', registry).some((s) => s.name === 'akamai'),
      'a frozen source taken by name',
    );
    const without = selectSources('public,-vpn-nordvpn,-aws', registry);
    assert.equal(without.length, live.length - 2);
    assert.ok(!without.some((s) => s.name === 'vpn-nordvpn' || s.name === 'aws'));
    assert.deepEqual(
      selectSources('aws,tor-exit-addresses', registry).map((s) => s.name),
      ['tor-exit-addresses', 'aws'],
      'in registry order',
    );
    assert.throws(() => selectSources('public,-nordvpn', registry), /SOURCES names "nordvpn", which is not in the registry.*sources list/);
    // From the command line, a configuration error: one line, exit 2.
    const serve = spawnSync(process.execPath, [CLI, 'serve'], {
      env: { ...process.env, DATA_DIR: tempDir(), SOURCES: 'public,-nordvpn', PORT: '0', ADMIN_PORT: '0' },
      encoding: 'utf8',
    });
    assert.deepEqual(
      [serve.status, serve.stderr],
      [
        2,
        'ipsift: SOURCES names "nordvpn", which is not in the registry: public, a registry name, or -name to leave one out (`ipsift sources list` shows them)\n',
      ],
    );
    assert.throws(() => loadConfig({ SOURCES: 'public,;rm' }), /SOURCES must list public, registry names and -name/);
    assert.throws(() => loadConfig({ SOURCES_MIRROR: 'ftp://mirror' }), /SOURCES_MIRROR must be an http\(s\) URL/);
    // A user's file beside the registry may not reuse a registry name.
    const dir = tempDir();
    const own = writeFile(dir, 'own.json', JSON.stringify([{ name: 'aws', path: 'x.txt', format: 'list', category: 'hosting', interval: '6h' }]));
    assert.throws(() => configuredSources({ sources: 'public', sourcesFile: own }), /source aws has the name of a registry source/);
    assert.equal(configuredSources({ sources: 'public,-aws', sourcesFile: own }).at(-1)!.intervalMs, 6 * HOUR);
    assert.throws(
      () => loadSources(writeFile(dir, 'bad.json', JSON.stringify([{ name: 'x', path: 'a', interval: '30s' }]))),
      /interval must be minutes, hours or days/,
    );
  });

  test('SOURCES_MIRROR maps https://HOST/PATH?Q to <base>/HOST/PATH?Q', () => {
    assert.equal(
      mirroredUrl('https://check.torproject.org/torbulkexitlist', 'http://mirror.internal/feeds/'),
      'http://mirror.internal/feeds/check.torproject.org/torbulkexitlist',
    );
    assert.equal(
      mirroredUrl('https://raw.githubusercontent.com/X4BNet/lists_vpn/HEAD/output/vpn/ipv4.txt?x=1', 'http://m:8000'),
      'http://m:8000/raw.githubusercontent.com/X4BNet/lists_vpn/HEAD/output/vpn/ipv4.txt?x=1',
    );
  });
});

describe('fetching as a good citizen', () => {
  // Fetching alone: no allowed age, so a day's clock never turns content stale here.
  const sources = ['tor-exit-addresses', 'vpn-mullvad', 'vpn-nordvpn', 'datacenters-misp-ipv4', 'aws', 'cloudflare-ipv4'].map((n) => ({
    ...byName(n),
    maxAgeMs: undefined,
  }));
  const byName_ = (name: string): Source => sources.find((s) => s.name === name) ?? byName(name);
  let mirror: RealMirror;
  before(async () => {
    mirror = await startRealMirror(sources, { delayMs: 20 });
  });
  after(() => mirror.close());
  const t0 = Date.parse('2026-11-26T10:00:00Z');

  test('fetches once, then asks conditionally on each interval; a 304 imports nothing; a change is imported', async () => {
    const dataDir = tempDir();
    // What was asked of the sources' hosts (GitHub's commits API, which dates them, aside).
    const feedRequests = () => mirror.requests.filter((r) => !r.path.startsWith('/api.github.com/'));
    const options = { mirror: mirror.url, concurrency: 2 };
    const first = await refreshSources(dataDir, sources, { ...options, nowMs: t0 });
    assert.deepEqual(
      first.reports.map((r) => [r.name, r.fetch]),
      sources.map((s) => [s.name, 'fetched']),
    );
    assert.equal(first.changed, true);
    assert.equal(mirror.maxInFlight, 2, 'at most SOURCES_CONCURRENCY fetches at once');
    assert.ok(feedRequests().every((r) => r.userAgent === USER_AGENT && /^ipsift\//.test(r.userAgent) && !r.conditional));

    // Nothing is due a minute later.
    const asked = feedRequests().length;
    const feedMtime = fs.statSync(findFeed(dataDir, 'aws')!.file).mtimeMs;
    const early = await refreshSources(dataDir, sources, { ...options, nowMs: t0 + 60_000 });
    assert.deepEqual([early.reports.length, feedRequests().length], [0, asked]);

    // An hour on: the Tor list only (hourly), asked conditionally, answered 304.
    const hourly = await refreshSources(dataDir, sources, { ...options, nowMs: t0 + HOUR });
    assert.deepEqual(
      hourly.reports.map((r) => [r.name, r.fetch, r.changed]),
      [['tor-exit-addresses', 'unchanged', false]],
    );
    assert.deepEqual(
      feedRequests()
        .slice(asked)
        .map((r) => [r.status, r.conditional]),
      [[304, true]],
    );

    // A day on: every source asked, every one 304, no feed rewritten, nothing to build.
    const daily = await refreshSources(dataDir, sources, { ...options, nowMs: t0 + 24 * HOUR });
    assert.equal(daily.changed, false);
    assert.deepEqual(
      feedRequests()
        .slice(asked + 1)
        .map((r) => r.status),
      sources.map(() => 304),
    );
    assert.equal(fs.statSync(findFeed(dataDir, 'aws')!.file).mtimeMs, feedMtime);

    // Cloudflare adds a range: fetched and imported; the others stay 304.
    const cf = byName_('cloudflare-ipv4');
    mirror.override(cf.url!, { body: `${fs.readFileSync(copyOf(cf)!, 'utf8').trimEnd()}\n45.94.31.0/24\n`, modified: new Date(t0 + 47 * HOUR) });
    try {
      const changed = await refreshSources(dataDir, sources, { ...options, nowMs: t0 + 48 * HOUR });
      assert.equal(changed.changed, true);
      assert.deepEqual(
        changed.reports.filter((r) => r.changed).map((r) => [r.name, r.rows]),
        [['cloudflare-ipv4', 16]],
      );
      // The content changed when the upstream says it did (its Last-Modified, after the last
      // change and not ahead of this refresh's clock).
      const st = readSourceStates(dataDir)['cloudflare-ipv4'];
      assert.equal(st.changed_at, new Date(t0 + 47 * HOUR).toISOString());
    } finally {
      mirror.override(cf.url!, null);
    }
  });

  test('a source that fails is tried again after 15 minutes, not at every refresh', async () => {
    const dataDir = tempDir();
    const apple = byName_('icloud-private-relay'); // the mirror holds no copy: 404
    const count = (): number => mirror.requests.filter((r) => r.path.startsWith('/mask-api.icloud.com/')).length;
    const before = count();
    const first = await refreshSources(dataDir, [apple], { mirror: mirror.url, nowMs: t0 });
    // The reason names the URL asked (here the mirror's), so an operator sees what answered 404.
    assert.deepEqual(
      [first.reports[0].ok, first.reports[0].fetch, first.reports[0].error],
      [false, 'failed', `fetch failed: HTTP 404 Not Found (from ${mirror.url}/mask-api.icloud.com/egress-ip-ranges.csv)`],
    );
    // Never a good copy: nothing to call fresh.
    const never = sourceStatuses([apple], readSourceStates(dataDir), t0, DEFAULT_INTERVAL_MS)[0];
    assert.deepEqual([never.state, never.freshness, never.freshness_reason, never.entries], ['failed', null, null, 0]);
    assert.equal((await refreshSources(dataDir, [apple], { mirror: mirror.url, nowMs: t0 + 14 * 60_000 })).reports.length, 0);
    assert.equal((await refreshSources(dataDir, [apple], { mirror: mirror.url, nowMs: t0 + 15 * 60_000 })).reports.length, 1);
    assert.equal(count() - before, 2);
  });

  test('an HTML page, an empty body, a 10× body, half the entries, a cut-short body: each refused, the last good copy answers', async () => {
    const dataDir = tempDir();
    const nord = byName_('vpn-nordvpn');
    const misp = byName_('datacenters-misp-ipv4');
    const mull = byName_('vpn-mullvad');
    const tor = byName_('tor-exit-addresses');
    const aws = byName_('aws');
    const picked = [nord, misp, mull, tor, aws];
    await refreshSources(dataDir, picked, { mirror: mirror.url, nowMs: t0 });
    const good = (s: Source): number => [...readFeed(findFeed(dataDir, s.name)!.file)].length;
    const before = Object.fromEntries(picked.map((s) => [s.name, good(s)]));
    const nordText = fs.readFileSync(copyOf(nord)!, 'utf8');
    const mispText = fs.readFileSync(copyOf(misp)!);
    mirror.override(nord.url!, { body: nordText.split('\n').slice(0, 3000).join('\n') });
    mirror.override(misp.url!, { body: Buffer.concat(Array.from({ length: 10 }, () => mispText)) });
    mirror.override(mull.url!, {
      status: 200,
      headers: { 'content-type': 'text/html; charset=utf-8' },
      body: '<!DOCTYPE html><html><body>Rate limited</body></html>',
    });
    mirror.override(tor.url!, { body: '' });
    mirror.override(aws.url!, { body: '\n<!doctype html>\n<title>Maintenance</title>', headers: { 'content-type': 'text/plain' } });
    try {
      const r = await refreshSources(dataDir, picked, { mirror: mirror.url, nowMs: t0 + 25 * HOUR });
      assert.equal(r.changed, false);
      assert.ok(
        r.reports.every((x) => x.ok && x.fetch === 'refused'),
        JSON.stringify(r.reports),
      );
      const status = Object.fromEntries(sourceStatuses(picked, readSourceStates(dataDir), t0 + 25 * HOUR, DEFAULT_INTERVAL_MS).map((s) => [s.name, s]));
      assert.match(status['vpn-nordvpn'].reason!, /^3000 entries, down from 8468 in the last good copy \(more than 50 % fewer\)$/);
      assert.match(status['datacenters-misp-ipv4'].reason!, /ran past this source's cap of 4803995 bytes|over this source's cap/);
      assert.match(status['vpn-mullvad'].reason!, /HTML page \(content-type text\/html\)/);
      assert.equal(status['tor-exit-addresses'].reason, `the answer is empty (from ${mirror.url}/check.torproject.org/exit-addresses)`);
      assert.equal(status.aws.reason, `the answer is an HTML page, not a list (from ${mirror.url}/ip-ranges.amazonaws.com/ip-ranges.json)`);
      for (const s of picked) {
        assert.deepEqual([status[s.name].state, status[s.name].serving, good(s)], ['refused', true, before[s.name]], s.name);
      }
      // A refused source is tried again within 15 minutes, not a day.
      assert.equal(Date.parse(status.aws.next_at!), t0 + 25 * HOUR + 15 * 60_000);
    } finally {
      for (const s of picked) mirror.override(s.url!, null);
    }

    // A body that stops short of its Content-Length, and a host that never answers.
    const cut = http.createServer((req, res) => {
      if (req.url === '/silent') return; // never answers
      res.writeHead(200, { 'content-length': '100000', 'content-type': 'text/plain' });
      res.write('81.7.3.1\n81.7.3.2\n', () => res.destroy());
    });
    await new Promise<void>((resolve) => cut.listen(0, '127.0.0.1', resolve));
    const port = (cut.address() as { port: number }).port;
    try {
      const local: Source[] = [
        { name: 'cut', url: `http://127.0.0.1:${port}/list.txt`, format: 'list', category: 'vpn', details: {}, skipInvalid: false },
        { name: 'silent', url: `http://127.0.0.1:${port}/silent`, format: 'list', category: 'vpn', details: {}, skipInvalid: false },
        nord,
      ];
      const r = await refreshSources(tempDir(), local, { mirror: undefined, timeoutMs: 300, nowMs: t0 });
      assert.match(r.reports[0].error!, /^refused: cut short/);
      assert.equal(r.reports[1].error, `fetch failed: no answer within 0.3 s from 127.0.0.1:${port} (from http://127.0.0.1:${port}/silent)`);
      assert.deepEqual([r.reports[0].ok, r.reports[1].ok], [false, false]);
    } finally {
      cut.closeAllConnections();
      cut.close();
    }
  });
});

describe('SOURCES=public on an empty data directory', () => {
  test("fetches, imports, builds and serves; keeps refreshing; names each claim's source", async () => {
    const mirror = await startRealMirror(registry);
    const dataDir = tempDir();
    const service = await startTestService({ dataDir, sources: 'public', sourcesMirror: mirror.url, keylessTier: TIER_MAX, demo: true });
    try {
      await until(() => service.holder.current !== null, 120_000, 'a build from the public sources serves');
      assert.ok(service.sources, 'a refresher runs');
      const answer = async (ip: string): Promise<Record<string, unknown>> => JSON.parse((await get(service.port, `/${ip}`)).text) as Record<string, unknown>;
      const provider = (a: Record<string, unknown>, c: string): unknown => (a[c] as { provider?: string }).provider;
      // No demo feeds beside real data.
      assert.ok(!fs.readdirSync(path.join(dataDir, 'feeds')).some((f) => f.startsWith('demo')));
      const tor = await answer('185.220.101.1');
      assert.deepEqual([tor.is_tor, provider(tor, 'tor')], [true, 'Tor Project']);
      const ec2 = await answer('3.5.140.7');
      assert.deepEqual([ec2.is_hosting, provider(ec2, 'hosting'), ec2.is_vpn], [true, 'Amazon Web Services', false]);
      const mullvad = await answer('23.144.160.67');
      assert.deepEqual([mullvad.is_vpn, provider(mullvad, 'vpn')], [true, 'Mullvad']);
      const proton = await answer('2.58.241.67');
      assert.deepEqual([proton.is_vpn, provider(proton, 'vpn')], [true, 'ProtonVPN']);
      const relay = await answer('172.224.226.1');
      assert.deepEqual([relay.is_relay, provider(relay, 'relay'), relay.is_vpn], [true, 'Apple iCloud Private Relay', false]);
      for (const ip of ['8.8.8.8', '1.1.1.1']) assert.equal((await answer(ip)).is_vpn, false, ip);

      // Status on the admin API and as metrics: Apple's own URL is not in the mirror.
      const db = openTestControlDb(dataDir);
      const token = createAdminToken(db, 'ops', ['admin.read']).secret;
      db.close();
      const listed = JSON.parse((await get(service.adminPort, '/admin/v1/sources', { Authorization: `Bearer ${token}` })).text) as {
        sources: { name: string; state: string; reason: string | null; entries: number }[];
      };
      // Every source but the frozen, which public leaves out.
      assert.equal(listed.sources.length, registry.filter((s) => s.frozen === undefined).length);
      // Copies whose own dates are old (the real data's, on today's clock) are stale or
      // expired, each with why; only Apple's, which the mirror lacks, failed.
      const failed = listed.sources.filter((s) => s.state === 'failed' || s.state === 'refused');
      for (const s of listed.sources.filter((x) => x.state === 'stale' || x.state === 'expired')) {
        assert.match(String((s as { freshness_reason?: string }).freshness_reason), /silent|unchanged|dates/, s.name);
      }
      assert.deepEqual(
        failed.map((s) => [s.name, s.state, s.reason]),
        [['icloud-private-relay', 'failed', `HTTP 404 Not Found (from ${mirror.url}/mask-api.icloud.com/egress-ip-ranges.csv)`]],
      );
      assert.equal((await get(service.adminPort, '/admin/v1/sources')).status, 401);
      const metrics = (await get(service.adminPort, '/metrics')).text;
      assert.match(metrics, /^ipsift_source_entries\{source="vpn-nordvpn"\} 8468$/m);
      assert.match(metrics, /^ipsift_source_age_seconds\{source="aws"\} \d+$/m);
      assert.match(metrics, /^ipsift_source_state\{source="icloud-private-relay",state="failed"\} 1$/m);

      // explain names the source, its URL and when it was fetched behind each claim.
      const why = explainAddress(dataDir, '23.144.160.67')!;
      const claim = why.categories.vpn!.claims.find((c) => c.feed === 'vpn-mullvad')!;
      assert.equal(claim.source?.url, byName('vpn-mullvad').url);
      assert.match(claim.source?.fetched_at ?? '', /^\d{4}-\d\d-\d\dT/);
      // The content's own date (here the mirror's Last-Modified, its copy's file time), not the fetch, and what says so.
      assert.equal(claim.source?.dated_by, 'last-modified');
      assert.equal(claim.source?.changed_at, new Date(Math.floor(fs.statSync(copyOf(byName('vpn-mullvad'))!).mtimeMs / 1000) * 1000).toISOString());

      // Again with nothing changed: conditional requests, 304s, no new build.
      const build = service.holder.current!.buildId;
      const asked = mirror.requests.length;
      const again = await service.sources!.runOnce(true);
      assert.equal(again?.build, null);
      const second = mirror.requests.slice(asked);
      assert.equal(
        second.filter((r) => r.status === 304 && r.conditional).length,
        registry.filter((s) => s.frozen === undefined).length - 1,
        'every source the mirror holds answered 304',
      );

      // A Mullvad server added upstream: fetched, built, and serving.
      const mull = byName('vpn-mullvad');
      mirror.override(mull.url!, { body: `${fs.readFileSync(copyOf(mull)!, 'utf8').trimEnd()}\n94.100.18.77\n` });
      // Half of NordVPN's list gone: refused, and its servers still answer.
      const nord = byName('vpn-nordvpn');
      const nordIps = fs.readFileSync(copyOf(nord)!, 'utf8').trim().split('\n');
      mirror.override(nord.url!, { body: nordIps.slice(0, 1000).join('\n') });
      const changed = await service.sources!.runOnce(true);
      assert.ok(changed?.build && changed.build.id !== build, JSON.stringify(changed?.build));
      await until(() => service.holder.current?.buildId === changed!.build!.id, 10_000, 'the new build serves');
      const added = await answer('94.100.18.77');
      assert.deepEqual([added.is_vpn, provider(added, 'vpn')], [true, 'Mullvad']);
      const lastNord = await answer(nordIps.at(-1)!);
      assert.deepEqual([lastNord.is_vpn, provider(lastNord, 'vpn')], [true, 'NordVPN']);
      const status = JSON.parse((await get(service.adminPort, '/admin/v1/sources', { Authorization: `Bearer ${token}` })).text) as {
        sources: { name: string; state: string; reason: string }[];
      };
      assert.deepEqual(
        status.sources.filter((s) => s.name === 'vpn-nordvpn').map((s) => [s.state, s.reason]),
        [['refused', '1000 entries, down from 8468 in the last good copy (more than 50 % fewer)']],
      );
      // The operator's view from the command line says the same.
      const text = execFileSync(process.execPath, [CLI, 'sources', 'status'], {
        env: { ...process.env, DATA_DIR: dataDir, SOURCES: 'public' },
        encoding: 'utf8',
      });
      assert.match(text, /^vpn-nordvpn +refused +8468 .* 1000 entries, down from 8468/m);
      // The copies dated long ago by their own documents (on today's clock) are stale or expired.
      const states = status.sources.map((s) => s.state);
      const n = (state: string): number => states.filter((x) => x === state).length;
      assert.deepEqual([n('refused'), n('failed'), n('never')], [1, 1, 0]);
      assert.match(
        text,
        new RegExp(
          `^${registry.filter((s) => s.frozen === undefined).length} sources: ${n('ok')} ok, ${n('stale')} stale, ${n('expired')} expired, 1 refused, 1 failed, 0 never fetched$`,
          'm',
        ),
      );
    } finally {
      await service.close();
      await mirror.close();
    }
  });
});

describe('the daily publication beside source refreshes', () => {
  test("skips by what was published today, not by what serves; finding a refresh's lock, it waits rather than skip the day", async () => {
    const dataDir = tempDir();
    const lines: string[] = [];
    const log = { info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m), error: (m: string) => lines.push(m) };
    const today = new Date().toISOString().slice(0, 10);
    await new PublishScheduler('00:05', loadConfig({ DATA_DIR: dataDir }), log, null, () => today).runOnce();
    assert.deepEqual(lines, ['daily build skipped: today’s databases are published']);
    // Yesterday's publication and a refresh holding the lock: the run says it waits (a minute).
    assert.ok(takeBuildLock(dataDir));
    try {
      const scheduler = new PublishScheduler('00:05', loadConfig({ DATA_DIR: dataDir }), log, null, () => '2026-01-01');
      await scheduler.runOnce();
      assert.equal(lines[1], 'daily build waits: another process on this data directory is building');
      // Started with a feed to build from, it catches up at once, finds the lock, and tries
      // again a minute later rather than at tomorrow's PUBLISH_AT.
      writeFeed(dataDir, 'one', path.join(dataDir, 'one.txt'), []);
      scheduler.start();
      try {
        const waits = (): number => lines.filter((l) => l === 'daily build waits: another process on this data directory is building').length;
        await until(
          () => waits() === 2,
          5_000,
          () => `a second wait: ${JSON.stringify(lines)}`,
        );
        assert.equal(lines[2], 'the latest daily build due is missing: building now');
        await until(
          () => scheduler.retryAfterS() > 30,
          5_000,
          () => `the retry scheduled: ${scheduler.retryAfterS()} s`,
        );
        assert.ok(scheduler.retryAfterS() <= 60, `${scheduler.retryAfterS()} s`);
      } finally {
        scheduler.stop();
      }
    } finally {
      releaseBuildLock(dataDir);
    }
  });
});
