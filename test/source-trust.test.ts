// What ipsift believes of its sources (issue #44): content freshness on an injected clock (an
// unchanged source turns stale, its claims fall a band, then stop counting), the fetcher's
// holes closed (a pre-compressed upstream, redirects to internal hosts or the admin port, a
// host that would leave the mirror), the offline first start, and the registry's answers
// judged by the real data with every host up and with only GitHub reachable.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { explainAddress } from '../src/build/explain.js';
import { runBuild } from '../src/build/build.js';
import { refreshSources } from '../src/feeds/refresh.js';
import { loadRegistry, mirroredUrl } from '../src/feeds/registry.js';
import { readSourceStates, sourceStatuses } from '../src/feeds/source-state.js';
import { hopGuard, isInternalAddress } from '../src/feeds/source-fetch.js';
import { GithubDates } from '../src/feeds/github-dates.js';
import { cadenceOf } from '../src/feeds/content-dates.js';
import { freshnessOf } from '../src/feeds/freshness.js';
import { loadConfig } from '../src/config.js';
import { loadSources, type Source, SourcesError } from '../src/feeds/sources.js';
import type { LogFields, Logger } from '../src/log.js';
import { REAL } from '../scripts/real-data.js';
import { providerShare, REPLAY_AT, REPLAY_SINCE, realTruth, registryQuality } from '../scripts/registry-quality.js';
import { checkSource, registryFault, reportLine, verdictOf, type RegistryCheck } from '../scripts/check-registry.js';
import { copyOf, startRealMirror } from '../scripts/real-mirror.js';
import { answerOf, buildIndex, get, PROJECT_ROOT, startTestService, tempDir, until, writeFile } from './helpers.js';

const DAY = 86_400_000;
const CLI = path.join(PROJECT_ROOT, 'dist/src/cli.js');

/** A loopback upstream whose answer per path the test sets. */
async function upstream(answer: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<{ url: string; port: number; close(): Promise<void> }> {
  const server = http.createServer(answer);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const source = (over: Partial<Source> & Pick<Source, 'name'>): Source => ({ format: 'list', category: 'vpn', details: {}, skipInvalid: false, ...over });

describe('freshness of content, on an injected clock', () => {
  test('an unchanged source turns stale past max_age (its claims a band lower, confidence a step down), then expired (its claims no longer count)', async () => {
    const dataDir = tempDir();
    // A provider's server list (band 6, high confidence) and an exit observation of another
    // name one band lower: fresh, the list answers; stale, the observation outranks it.
    const list = writeFile(dataDir, 'servers.txt', '198.51.7.10\n198.51.7.11\n');
    const probe = writeFile(dataDir, 'probe.txt', '198.51.7.10\n');
    const sources = [
      source({ name: 'servers', path: list, evidence: 'server_list', details: { provider: 'NordVPN' }, maxAgeMs: DAY }),
      source({ name: 'probe', path: probe, evidence: 'exit_probe', details: { provider: 'Surfshark' }, priority: 1 }),
    ];
    const t0 = Date.parse('2026-11-01T00:00:00Z');
    const vpnAt = async (nowMs: number, ip: string): Promise<unknown> => answerOf(await buildIndex(dataDir, new Date(nowMs)), ip).vpn;
    const first = await refreshSources(dataDir, sources, { nowMs: t0 });
    assert.ok(first.changed);
    assert.deepEqual(await vpnAt(t0, '198.51.7.10'), { provider: 'NordVPN', confidence: 'high', method: 'server_list', last_seen: '2026-11-01' });

    // A day and an hour on, the same content: stale. The refresh says a build is due.
    const staleAt = t0 + DAY + 3_600_000;
    const r = await refreshSources(dataDir, sources, { nowMs: staleAt, all: true });
    assert.deepEqual(r.freshness, [{ name: 'servers', from: 'fresh', to: 'stale' }]);
    assert.equal(r.changed, true);
    const [servers] = sourceStatuses(sources, readSourceStates(dataDir), staleAt, DAY);
    assert.deepEqual([servers.state, servers.freshness, servers.max_age_s, servers.content_age_s], ['stale', 'stale', 86_400, 90_000]);
    assert.deepEqual(await vpnAt(staleAt, '198.51.7.10'), { provider: 'Surfshark', confidence: 'high', method: 'exit_probe', last_seen: '2026-11-01' });
    assert.deepEqual(await vpnAt(staleAt, '198.51.7.11'), { provider: 'NordVPN', confidence: 'medium', method: 'server_list', last_seen: '2026-11-01' });
    assert.match(explainAddress(dataDir, '198.51.7.11', staleAt)!.categories.vpn!.claims[0].detail!.confidence as string, /^medium$/);

    // Past twice max_age: expired, left out of the build.
    const expiredAt = t0 + 2 * DAY + 3_600_000;
    assert.deepEqual((await refreshSources(dataDir, sources, { nowMs: expiredAt, all: true })).freshness, [{ name: 'servers', from: 'stale', to: 'expired' }]);
    const built = runBuild({ dataDir, now: new Date(expiredAt), exports: false });
    assert.deepEqual(built.manifest.set_aside, [{ name: 'servers', freshness: 'expired', changed_at: new Date(t0).toISOString() }]);
    assert.equal(answerOf(await buildIndex(dataDir, new Date(expiredAt)), '198.51.7.11').is_vpn, false);

    // New content: fresh again at once.
    fs.appendFileSync(list, '198.51.7.12\n');
    assert.deepEqual((await refreshSources(dataDir, sources, { nowMs: expiredAt + 1000, all: true })).freshness, [
      { name: 'servers', from: 'expired', to: 'fresh' },
    ]);
    assert.equal(answerOf(await buildIndex(dataDir, new Date(expiredAt + 1000)), '198.51.7.11').is_vpn, true);
  });

  test('the same bytes under a new Last-Modified are unchanged content; `sources status --json` shows the last change and the allowed age', async () => {
    let asked = 0;
    const up = await upstream((_req, res) => {
      asked++;
      // No validators a 304 could come from: every answer is a 200 with a newer date.
      res.writeHead(200, { 'content-type': 'text/plain', 'last-modified': new Date(Date.parse('2026-10-01T00:00:00Z') + asked * DAY).toUTCString() });
      res.end('198.51.7.20\n');
    });
    try {
      const dataDir = tempDir();
      const file = writeFile(
        dataDir,
        'sources.json',
        JSON.stringify([{ name: 'frozen', url: `${up.url}/list.txt`, format: 'list', category: 'vpn', max_age: '7d', interval: '1h', licence: 'x' }]),
      );
      const sources = loadSources(file);
      const t0 = Date.parse('2026-11-01T00:00:00Z');
      await refreshSources(dataDir, sources, { nowMs: t0 });
      const changed = readSourceStates(dataDir).frozen.changed_at;
      assert.equal(changed, '2026-10-02T00:00:00.000Z', "the first copy's change is the upstream's Last-Modified");
      await refreshSources(dataDir, sources, { nowMs: t0 + 3_600_000, all: true });
      assert.equal(asked, 2);
      assert.equal(readSourceStates(dataDir).frozen.changed_at, changed, 'a new date over the same bytes is no change');
      // Unchanged since 2 October, allowed 7 days: stale on 1 November already.
      const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'sources', 'status', '--json'], {
        env: { ...process.env, DATA_DIR: dataDir, SOURCES_FILE: file, SOURCES: '' },
      });
      const [status] = JSON.parse(stdout) as Record<string, unknown>[];
      assert.equal(status.changed_at, changed);
      assert.equal(status.max_age_s, 7 * 86_400);
      assert.ok((status.content_age_s as number) > 30 * 86_400);
      assert.equal(status.state, 'expired');
    } finally {
      await up.close();
    }
  });
});

describe('the fetcher', () => {
  const LIST = '198.51.7.30\n198.51.7.31\n198.51.7.32\n';
  let up: Awaited<ReturnType<typeof upstream>>;
  let adminPort = 0;
  before(async () => {
    up = await upstream((req, res) => {
      if (req.url === '/list.gz-coded') {
        // A pre-compressed file served as is (nginx gzip_static, an S3 object stored gzip-coded):
        // Content-Length counts the coded bytes.
        const body = zlib.gzipSync(Buffer.from(LIST));
        res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip', 'content-length': String(body.length) });
        res.end(body);
      } else if (req.url === '/to-admin') {
        res.writeHead(302, { location: `http://127.0.0.1:${adminPort}/metrics` }).end();
      } else if (req.url === '/to-other-loopback') {
        res.writeHead(302, { location: `http://localhost:${adminPort + 1}/list` }).end();
      } else if (req.url === '/huge-page') {
        // A page whose link comes only after 5 MiB: read up to 4 MiB, never whole.
        res.writeHead(200, { 'content-type': 'text/html' });
        res.write(Buffer.alloc(5 << 20, 'x'));
        res.end(`<a href="${up.url}/list">list</a>`);
      } else if (req.url === '/page') {
        res.writeHead(200, { 'content-type': 'text/html' }).end(`<a href="${up.url}/list">list</a>`);
      } else if (req.url === '/moved') {
        res.writeHead(301, { location: '/list' }).end();
      } else if (req.url === '/list') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end(LIST);
      } else res.writeHead(404).end();
    });
    adminPort = up.port + 1;
  });
  after(() => up.close());

  test('a pre-compressed upstream imports; a redirect on its own origin is followed', async () => {
    const r = await refreshSources(
      tempDir(),
      [source({ name: 'coded', url: `${up.url}/list.gz-coded` }), source({ name: 'moved', url: `${up.url}/moved` })],
      {},
    );
    assert.deepEqual(
      r.reports.map((x) => [x.name, x.ok, x.rows, x.error]),
      [
        ['coded', true, 3, undefined],
        ['moved', true, 3, undefined],
      ],
    );
  });

  test('a redirect to the admin port, or to another loopback origin, is refused', async () => {
    const r = await refreshSources(
      tempDir(),
      [source({ name: 'admin', url: `${up.url}/to-admin` }), source({ name: 'inner', url: `${up.url}/to-other-loopback` })],
      { guardedPorts: [adminPort] },
    );
    assert.match(
      r.reports[0].error!,
      new RegExp(`^refused: redirected to 127\\.0\\.0\\.1:${adminPort}, refused: port ${adminPort} of 127\\.0\\.0\\.1 is this server's own admin port`),
    );
    assert.match(
      r.reports[1].error!,
      /^refused: redirected to localhost:\d+, refused: (127\.0\.0\.1|::1) is a loopback, private or link-local address the source does not name/,
    );
    assert.deepEqual(
      r.reports.map((x) => x.ok),
      [false, false],
    );
  });

  test('a URL whose host is not a host name (https://../x) is refused, and never leaves a mirror’s base', () => {
    const dir = tempDir();
    const file = writeFile(dir, 's.json', JSON.stringify([{ name: 'escape', url: 'https://../x', format: 'list', category: 'vpn' }]));
    assert.throws(
      () => loadSources(file),
      (e: unknown) => e instanceof SourcesError && /url must be http\(s\):\/\/host\/… with a host name/.test(e.message),
    );
    assert.throws(() => mirroredUrl('https://../etc/passwd', 'http://mirror/feeds'), /is not a host name/);
    assert.equal(mirroredUrl('https://a.example/x', 'http://mirror/feeds/'), 'http://mirror/feeds/a.example/x');
  });

  test('an unknown field in a sources file is refused by name', () => {
    const dir = tempDir();
    const file = writeFile(dir, 's.json', JSON.stringify([{ name: 'typo', url: 'https://a.example/x', format: 'list', category: 'vpn', max_agee: '1d' }]));
    assert.throws(() => loadSources(file), /unknown field "max_agee"/);
  });
});

describe('an offline first start', () => {
  test('lookups answer 503 with Retry-After until data comes; each failure names its host; one warning points at SOURCES_MIRROR', async () => {
    const dataDir = tempDir();
    // Hosts that refuse every connection, as a machine without Internet access sees them.
    const closed = await upstream(() => {});
    const port = closed.port;
    await closed.close();
    const file = writeFile(
      dataDir,
      'sources.json',
      JSON.stringify(
        ['a', 'b', 'c'].map((n) => ({ name: `offline-${n}`, url: `http://127.0.0.1:${port}/${n}.txt`, format: 'list', category: 'vpn', licence: 'x' })),
      ),
    );
    const warnings: [string, LogFields | undefined][] = [];
    const log: Logger = { info() {}, error() {}, warn: (msg, fields) => void warnings.push([msg, fields]) };
    const svc = await startTestService({ dataDir, sourcesFile: file, sources: '' }, log);
    try {
      await until(() => warnings.some(([m]) => m.includes('SOURCES_MIRROR')), 10_000, 'the mirror advice');
      for (const p of ['/198.51.7.40', '/myip']) {
        const r = await get(svc.port, p);
        assert.equal(r.status, 503, p);
        assert.equal(r.headers['retry-after'], '30');
        assert.deepEqual(r.json, { error: 'service temporarily unavailable' });
      }
      const failures = warnings.filter(([m]) => m === 'source not refreshed');
      assert.equal(failures.length, 3);
      for (const [, f] of failures) assert.match(String(f?.reason), new RegExp(`cannot fetch from 127\\.0\\.0\\.1:${port}: ECONNREFUSED`));
      assert.equal(warnings.filter(([m]) => m.includes('SOURCES_MIRROR')).length, 1);
    } finally {
      await svc.close();
    }
  });
});

describe('SOURCES=public judged by the real data', { skip: !fs.existsSync(REAL) && `${REAL} is not present` }, () => {
  let truth: Awaited<ReturnType<typeof realTruth>>;
  before(async () => {
    truth = await realTruth();
  });
  after(() => fs.rmSync(truth.dataDir, { recursive: true, force: true }));

  test('the registry check reads every source through the test mirror in the layout its format reads', async () => {
    const registry = loadRegistry();
    const mirror = await startRealMirror(registry);
    const dir = tempDir();
    try {
      // The bound of a hang, as the command has it: the mirror is local, but a busy machine serves every source at once slowly.
      const checks = await Promise.all(registry.map((s) => checkSource(s, { mirror: mirror.url, timeoutMs: 60_000, dir })));
      const failing = checks.filter((c) => !c.reachable || !c.layout_ok || c.entries === 0);
      // Apple's own egress file is served nowhere public to copy or sample.
      assert.deepEqual(
        failing.map((c) => c.name),
        ['icloud-private-relay'],
        JSON.stringify(failing),
      );
    } finally {
      await mirror.close();
    }
  });

  test('replayed on 2026-08-23, the registry check dates each source by its publisher and flags every frozen one the registry marks', async () => {
    const registry = loadRegistry();
    const mirror = await startRealMirror(registry, { replayAt: REPLAY_AT });
    const dir = tempDir();
    try {
      const github = new GithubDates({
        dataDir: dir,
        nowMs: REPLAY_AT,
        timeoutMs: 60_000,
        mirror: mirror.url,
        guard: hopGuard('https://api.github.com/', { mirror: mirror.url }),
      });
      const checks: RegistryCheck[] = [];
      for (const s of registry) checks.push(await checkSource(s, { mirror: mirror.url, timeoutMs: 60_000, dir, nowMs: REPLAY_AT, github }));
      const of = (name: string): RegistryCheck => checks.find((c) => c.name === name)!;
      // Dated by the publisher: OVPN's list by its path's commit, its repository at work the day before.
      assert.deepEqual(
        [of('vpn-ovpn').content_date?.slice(0, 10), of('vpn-ovpn').dated_by, of('vpn-ovpn').active_at?.slice(0, 10)],
        ['2026-07-03', 'commit', '2026-08-22'],
      );
      assert.equal(verdictOf(of('vpn-ovpn')), 'ok');
      assert.deepEqual([of('aws').dated_by, verdictOf(of('aws'))], ['document', 'FROZEN']);
      assert.match(
        reportLine(of('vpn-nordvpn-az0')),
        /^FROZEN vpn-nordvpn-az0: list, 6126 entries, content 2024-03-04 by commit \(902 d\), publisher active 2026-08-22 \(1 d\) — .*; marked frozen: last changed 2024-03-04/,
      );
      // Every source the check finds expired is one the registry marks, but for owners' own
      // documents whose copies in the real data are a year old or more (their hosts publish daily).
      const COPIES_OLDER_THAN_UPSTREAM = ['tor-exit-addresses', 'aws', 'google-cloud', 'google', 'oracle-cloud', 'linode'];
      const unmarked = checks.filter((c) => registryFault(c) && c.reachable && c.layout_ok && !COPIES_OLDER_THAN_UPSTREAM.includes(c.name));
      assert.deepEqual(unmarked.map(reportLine), []);
      // And every source the registry marks reads as frozen, stale or aged on its own dates.
      for (const c of checks.filter((x) => x.marked_frozen)) assert.ok(['FROZEN', 'STALE', 'AGED'].includes(verdictOf(c)), reportLine(c));
    } finally {
      await mirror.close();
    }
  });

  // Replayed as the upstreams really moved (their last commits), on 2026-08-23: a new install,
  // and a server refreshing every day since 2026-07-01.
  for (const replay of [{ at: REPLAY_AT }, { at: REPLAY_AT, since: REPLAY_SINCE }]) {
    for (const hosts of ['all', 'github only'] as const) {
      const as = replay.since === undefined ? 'a new install' : 'a server running since July';
      test(`${as}, ${hosts === 'all' ? 'every host up' : "only GitHub's hosts up"}: ≥ 99 % of live server-list addresses answer their provider, none only in frozen lists in the top band, ≥ 99 % precision on owners' space, resolvers never VPN`, async () => {
        const { quality: q, missing, frozen } = await registryQuality(truth, hosts, undefined, replay);
        if (hosts !== 'all') assert.ok(missing.includes('aws') && missing.includes('google') && missing.includes('tor-onionoo-exits'), missing.join(', '));
        assert.ok(
          q.ownerSpace.sampled >= 3000 && q.ownerSpace.vpn / q.ownerSpace.sampled <= 0.01,
          `${q.ownerSpace.vpn} of ${q.ownerSpace.sampled}: ${q.ownerSpace.examples.join('; ')}`,
        );
        assert.deepEqual(
          q.resolvers.filter((r) => r.is_vpn),
          [],
        );
        const { answered, listed } = providerShare(q);
        assert.ok(listed > 30_000 && answered / listed >= 0.99, `${answered} of ${listed}: ${JSON.stringify(q.providers)}`);
        // OVPN's and RiseupVPN's lists go unchanged for weeks while their publisher is at work.
        for (const name of ['OVPN', 'RiseupVPN']) {
          const p = q.providers.find((x) => x.provider === name);
          assert.ok(p && p.listed > 0 && p.answered === p.listed, `${name}: ${JSON.stringify(p)}`);
        }
        // The lists frozen since 2024-2025 (NordVPN's old API pull, ProtonVPN's, ExpressVPN's, an old Mullvad CSV).
        assert.ok(frozen.addresses > 6000, JSON.stringify(frozen));
        assert.equal(frozen.high, 0, JSON.stringify(frozen));
      });
    }
  }
});

describe('every hop checked, every spelling', () => {
  // Loopback as a URL may spell it; the URL parser writes most of them one way, which the check must see through.
  const LOOPBACK_SPELLINGS = [
    '127.0.0.1',
    '[::ffff:127.0.0.1]',
    '[::ffff:7f00:1]',
    '[0:0:0:0:0:ffff:127.0.0.1]',
    '[::127.0.0.1]',
    '2130706433',
    '0x7f000001',
    '0177.0.0.1',
    '127.1',
  ];
  let up: Awaited<ReturnType<typeof upstream>>;
  let adminPort = 0;
  let target = '';
  before(async () => {
    up = await upstream((req, res) => {
      if (req.url === '/redirect') res.writeHead(302, { location: target }).end();
      else if (req.url === '/page') res.writeHead(200, { 'content-type': 'text/html' }).end(`<a href="${target}">list</a>`);
      else if (req.url === '/list.txt') res.writeHead(200, { 'content-type': 'text/plain' }).end('198.51.7.30\n');
      else res.writeHead(404).end();
    });
    adminPort = up.port + 1;
  });
  after(() => up.close());

  test('the address check sees IPv4 in every IPv6 form and every IPv4 spelling', () => {
    for (const spelling of LOOPBACK_SPELLINGS) assert.ok(isInternalAddress(new URL(`http://${spelling}/`).hostname.replace(/^\[|\]$/g, '')), spelling);
    for (const ip of [
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::',
      '::1',
      'fc00::1',
      'fe80::1',
      '64:ff9b::a9fe:a9fe',
      '2002:7f00:1::',
    ])
      assert.ok(isInternalAddress(ip), ip);
    for (const ip of ['8.8.8.8', '185.220.101.1', '2001:db8::1', '2606:4700::1111', '::ffff:8.8.8.8']) assert.equal(isInternalAddress(ip), false, ip);
  });

  test('a redirect, a found link and the first request to loopback in any spelling are refused; the admin port whoever names it', async () => {
    const own = (name: string, url: string, o: Partial<Source> = {}): Source => source({ name, url, ...o });
    for (const spelling of LOOPBACK_SPELLINGS) {
      // Redirected to the admin port, or to another loopback spelling the source does not name.
      for (const port of [adminPort, adminPort + 1]) {
        target = `http://${spelling}:${port}/metrics#x.txt`;
        const r = await refreshSources(tempDir(), [own('hop', `${up.url}/redirect`), own('found', `${up.url}/page`, { find: /http:[^"]+/ })], {
          guardedPorts: [adminPort],
        });
        const named = new URL(target).hostname === '127.0.0.1' && port !== adminPort;
        for (const report of r.reports) {
          // The same host as the source names, on another port, is the source's own host; anything else is refused.
          if (named)
            assert.match(
              report.error ?? '',
              new RegExp(`^fetch failed: cannot fetch from 127\\.0\\.0\\.1:${port}: ECONNREFUSED`),
              `${report.name} ${spelling}:${port}`,
            );
          else
            assert.match(
              report.error ?? '',
              port === adminPort ? /this server's own admin port/ : /the source does not name/,
              `${report.name} ${spelling}:${port}`,
            );
        }
      }
      // A registry source names public hosts: its first request to loopback is refused too.
      const first = await refreshSources(tempDir(), [{ ...own('first', `http://${spelling}:${up.port}/list.txt`), registry: true }], {});
      assert.match(first.reports[0].error ?? '', /refused: .*loopback, private or link-local address the source does not name/, spelling);
    }
    // The operator's own source on loopback is fetched: it names that host.
    const mine = await refreshSources(tempDir(), [own('mine', `${up.url}/list.txt`)], { guardedPorts: [adminPort] });
    assert.deepEqual([mine.reports[0].ok, mine.reports[0].rows], [true, 1]);
  });
});

describe('credentials in URLs: used, never shown', () => {
  test('userinfo is sent as Authorization to its origin only; no secret appears in reports, states, statuses, explain or messages', async () => {
    const seen: { url: string; authorization?: string }[] = [];
    const up = await upstream((req, res) => {
      seen.push({ url: req.url ?? '', authorization: req.headers.authorization });
      if (req.headers.authorization !== `Basic ${Buffer.from('feeds:SECRET-ONE').toString('base64')}`) return void res.writeHead(401).end();
      if (req.url?.startsWith('/mirror/')) return void res.writeHead(200, { 'content-type': 'text/plain' }).end('198.51.7.60\n');
      if (req.url?.startsWith('/gone')) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/plain' }).end('198.51.7.50\n');
    });
    const dataDir = tempDir();
    try {
      const sources = [
        source({ name: 'secret-list', url: `http://feeds:SECRET-ONE@127.0.0.1:${up.port}/list.txt?token=SECRET-TWO&x=1`, details: { provider: 'NordVPN' } }),
        source({ name: 'secret-gone', url: `http://feeds:SECRET-ONE@127.0.0.1:${up.port}/gone?api_key=SECRET-THREE` }),
      ];
      const at = Date.parse('2026-11-01T00:00:00Z');
      const r = await refreshSources(dataDir, sources, { nowMs: at });
      assert.deepEqual(
        r.reports.map((x) => x.ok),
        [true, false],
      );
      assert.ok(seen.every((s) => s.authorization !== undefined && !s.url.includes('SECRET-ONE')));
      // Through a mirror whose URL carries credentials: used the same way.
      const mirrored = await refreshSources(tempDir(), [source({ name: 'via-mirror', url: 'https://list.example/servers.txt' })], {
        mirror: `http://feeds:SECRET-ONE@127.0.0.1:${up.port}/mirror`,
        nowMs: at,
      });
      assert.equal(mirrored.reports[0].ok, true, mirrored.reports[0].error);
      runBuild({ dataDir, exports: false, now: new Date(at) });
      const surfaces = [
        JSON.stringify(r),
        fs.readFileSync(path.join(dataDir, 'sources', 'state.json'), 'utf8'),
        JSON.stringify(sourceStatuses(sources, readSourceStates(dataDir), at, DAY)),
        JSON.stringify(explainAddress(dataDir, '198.51.7.50', at)),
      ];
      for (const text of surfaces) assert.doesNotMatch(text, /SECRET/, text.slice(0, 300));
      assert.match(surfaces[2], /token=\*\*\*&x=1/);
    } finally {
      await up.close();
    }
  });

  test('a setting that refuses a URL never echoes its credentials', () => {
    assert.throws(
      () => loadConfig({ SOURCES_MIRROR: 'ftp://u:SECRET-FOUR@mirror' }),
      (e: Error) => !/SECRET/.test(e.message) && /SOURCES_MIRROR/.test(e.message),
    );
    assert.throws(
      () => loadConfig({ PUBLIC_URL: 'https://u:SECRET-FIVE@ip.example/?key=1' }),
      (e: Error) => !/SECRET/.test(e.message) && /PUBLIC_URL/.test(e.message),
    );
  });
});

describe("freshness from the publisher's evidence", { skip: !fs.existsSync(REAL) && `${REAL} is not present` }, () => {
  test('a new install dates GitHub files by their commits and documents by their own dates: a live list of a stable fleet fresh, frozen lists expired, with why', async () => {
    const registry = loadRegistry();
    const picked = ['vpn-ovpn', 'vpn-nordvpn-az0', 'tor-exits-doodad', 'aws'].map((n) => registry.find((s) => s.name === n)!);
    const mirror = await startRealMirror(picked, { replayAt: REPLAY_AT });
    const dataDir = tempDir();
    try {
      await refreshSources(dataDir, picked, { mirror: mirror.url, nowMs: REPLAY_AT });
      const status = (at: number) => Object.fromEntries(sourceStatuses(picked, readSourceStates(dataDir), at, DAY).map((s) => [s.name, s]));
      const s = status(REPLAY_AT);
      assert.deepEqual(
        [s['vpn-ovpn'].freshness, s['vpn-ovpn'].dated_by, s['vpn-ovpn'].changed_at, s['vpn-ovpn'].active_by, s['vpn-ovpn'].active_at],
        ['fresh', 'commit', '2026-07-03T00:00:00.000Z', 'repository', '2026-08-22T00:00:00.000Z'],
      );
      assert.deepEqual([s['vpn-nordvpn-az0'].freshness, s['vpn-nordvpn-az0'].dated_by], ['expired', 'commit']);
      assert.match(s['vpn-nordvpn-az0'].freshness_reason!, /^the content unchanged for 903 d \(stale past 90 d, expired past 180 d\)$/);
      assert.match(s['tor-exits-doodad'].freshness_reason!, /^the publisher silent for 183 d \(stale past 6 h, expired past 12 h\)$/);
      assert.deepEqual([s.aws.dated_by, s.aws.changed_at, s.aws.freshness], ['document', '2025-07-24T20:23:14.000Z', 'expired']);
      // The build leaves the expired out and answers OVPN's servers with their provider, confidence high.
      const ovpn = fs.readFileSync(copyOf(picked[0])!, 'utf8').trim().split('\n')[0];
      const index = await buildIndex(dataDir, new Date(REPLAY_AT));
      assert.deepEqual(answerOf(index, ovpn).vpn, { provider: 'OVPN', last_seen: '2026-08-22', confidence: 'high', method: 'server_list' });
      const built = runBuild({ dataDir, exports: false, now: new Date(REPLAY_AT) });
      assert.deepEqual(built.manifest.set_aside.map((a) => a.name).sort(), ['aws', 'tor-exits-doodad', 'vpn-nordvpn-az0']);
      // Three weeks on without a commit in OVPN's repository: its publisher is silent past twice its max_age.
      assert.equal(status(REPLAY_AT + 21 * DAY)['vpn-ovpn'].freshness, 'expired');
      // A second refresh asks GitHub nothing new for an hour (the repository) and never again for a dated path.
      const asked = mirror.requests.filter((r) => r.path.startsWith('/api.github.com/')).length;
      await refreshSources(dataDir, picked, { mirror: mirror.url, nowMs: REPLAY_AT + 10 * 60_000 });
      assert.equal(mirror.requests.filter((r) => r.path.startsWith('/api.github.com/')).length, asked);
      // What GitHub said is read back through its schema: a file of another shape is started afresh, not trusted.
      fs.writeFileSync(path.join(dataDir, 'sources', 'github.json'), JSON.stringify({ repos: 'nope', paths: [{ key: 1 }] }));
      await refreshSources(dataDir, picked, { mirror: mirror.url, nowMs: REPLAY_AT + 20 * 60_000 });
      assert.ok(mirror.requests.filter((r) => r.path.startsWith('/api.github.com/')).length > asked);
      assert.equal(status(REPLAY_AT + 20 * 60_000)['vpn-ovpn'].freshness, 'fresh');
    } finally {
      await mirror.close();
    }
  });

  test('content nothing dates is stale until it changes; a Last-Modified that is only the time of sending dates nothing', async () => {
    let body = '198.51.7.70\n';
    const t0 = Date.parse('2026-11-01T00:00:00Z');
    // A host that stamps each answer's Last-Modified with the time it sends it.
    const sent = new Date(t0).toUTCString();
    const up = await upstream((_req, res) => void res.writeHead(200, { 'content-type': 'text/plain', date: sent, 'last-modified': sent }).end(body));
    const dataDir = tempDir();
    const src = [source({ name: 'undated', url: `${up.url}/list.txt`, maxAgeMs: 7 * DAY, evidence: 'server_list', details: { provider: 'Mullvad' } })];
    try {
      await refreshSources(dataDir, src, { nowMs: t0 });
      let [st] = sourceStatuses(src, readSourceStates(dataDir), t0, DAY);
      assert.deepEqual([st.freshness, st.dated_by, st.freshness_reason], ['stale', null, 'no evidence dates the content yet']);
      assert.equal((answerOf(await buildIndex(dataDir, new Date(t0)), '198.51.7.70').vpn as { confidence: string }).confidence, 'medium');
      body = '198.51.7.70\n198.51.7.71\n';
      await refreshSources(dataDir, src, { nowMs: t0 + DAY, all: true });
      [st] = sourceStatuses(src, readSourceStates(dataDir), t0 + DAY, DAY);
      assert.deepEqual([st.freshness, st.dated_by], ['fresh', 'observed']);
    } finally {
      await up.close();
    }
  });

  test('a publisher slower than its max_age is given three of its learnt cadences', () => {
    const at = (d: number): string => new Date(Date.UTC(2026, 0, 1) + d * DAY).toISOString();
    const state = {
      changed_at: at(0),
      dated_by: 'commit' as const,
      active_at: at(30),
      max_age_s: 7 * 86_400,
      cadence_s: cadenceOf([at(0), at(10), at(20), at(30)]),
    };
    assert.equal(state.cadence_s, 10 * 86_400);
    assert.equal(freshnessOf(state, Date.parse(at(55))), 'fresh'); // silent 25 d < 30 d
    assert.equal(freshnessOf(state, Date.parse(at(65))), 'stale');
    assert.equal(freshnessOf({ ...state, cadence_s: null }, Date.parse(at(40))), 'stale'); // without the cadence: max_age alone
  });
});
