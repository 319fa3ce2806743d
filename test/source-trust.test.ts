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
import { loadSources, type Source, SourcesError } from '../src/feeds/sources.js';
import type { LogFields, Logger } from '../src/log.js';
import { REAL } from '../scripts/real-data.js';
import { providerShare, realTruth, registryQuality } from '../scripts/registry-quality.js';
import { checkSource } from '../scripts/check-registry.js';
import { startRealMirror } from '../scripts/real-mirror.js';
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
    assert.deepEqual(await vpnAt(t0, '198.51.7.10'), { provider: 'NordVPN', confidence: 'high', method: 'server_list' });

    // A day and an hour on, the same content: stale. The refresh says a build is due.
    const staleAt = t0 + DAY + 3_600_000;
    const r = await refreshSources(dataDir, sources, { nowMs: staleAt, all: true });
    assert.deepEqual(r.freshness, [{ name: 'servers', from: 'fresh', to: 'stale' }]);
    assert.equal(r.changed, true);
    const [servers] = sourceStatuses(sources, readSourceStates(dataDir), staleAt, DAY);
    assert.deepEqual([servers.state, servers.freshness, servers.max_age_s, servers.content_age_s], ['stale', 'stale', 86_400, 90_000]);
    assert.deepEqual(await vpnAt(staleAt, '198.51.7.10'), { provider: 'Surfshark', confidence: 'high', method: 'exit_probe' });
    assert.deepEqual(await vpnAt(staleAt, '198.51.7.11'), { provider: 'NordVPN', confidence: 'medium', method: 'server_list' });
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

  for (const hosts of ['all', 'github only'] as const) {
    test(`with ${hosts === 'all' ? 'every host up' : "only GitHub's host up"}: ≥ 98 % precision on owners' space, resolvers never VPN, ≥ 95 % of server-list addresses answer their provider`, async () => {
      const { quality: q, missing } = await registryQuality(truth, hosts);
      if (hosts !== 'all') assert.ok(missing.includes('aws') && missing.includes('google') && missing.includes('tor-onionoo-exits'), missing.join(', '));
      assert.ok(
        q.ownerSpace.sampled >= 3000 && q.ownerSpace.vpn / q.ownerSpace.sampled <= 0.02,
        `${q.ownerSpace.vpn} of ${q.ownerSpace.sampled}: ${q.ownerSpace.examples.join('; ')}`,
      );
      for (const ip of ['8.8.8.8', '1.1.1.1', '9.9.9.9']) assert.equal(q.resolvers.find((r) => r.ip === ip)?.is_vpn, false, ip);
      assert.deepEqual(
        q.resolvers.filter((r) => r.is_vpn),
        [],
      );
      const { answered, listed } = providerShare(q);
      assert.ok(listed > 40_000 && answered / listed >= 0.95, `${answered} of ${listed}: ${JSON.stringify(q.providers)}`);
    });
  }
});
