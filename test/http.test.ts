import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { runBuild } from '../src/build/build.js';
import { DEFAULT_MAX_BATCH_BODY_BYTES } from '../src/config.js';
import { importFeed } from '../src/feeds/import.js';
import { TIER_MAX } from '../src/model/projection.js';
import type { Service } from '../src/service.js';
import { RequestClient, peerText } from '../src/http/client.js';
import { LATENCY_BOUNDS } from '../src/http/metrics.js';
import { MetricsHistory, quantileMs } from '../src/http/metrics-history.js';
import { parseNetwork } from '../src/net/network.js';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { PROJECT_ROOT, get, postBatch, request, startTestService, tempDir, until, writeFile } from './helpers.js';
import { stoppedAt } from './test-clock.js';

const FEED = `network,category,provider,confidence,method,last_seen
81.7.3.0/24,vpn,ExampleVPN,high,server_list,2026-11-01
81.7.3.16/28,tor,Tor Project,high,,2026-11-02
2a01:4f8:c012::/48,vpn,ExampleVPN,medium,exit_probe,2026-10-01
`;

function dataDirWithBuild(): string {
  const dir = tempDir();
  importFeed({ dataDir: dir, file: writeFile(dir, 'feed.csv', FEED) });
  runBuild({ dataDir: dir });
  return dir;
}

describe('lookup HTTP API (keyless)', () => {
  let svc: Service;
  let dataDir: string;
  before(async () => {
    dataDir = dataDirWithBuild();
    svc = await startTestService({ dataDir });
  });
  after(() => svc.close());

  test('GET /{ip} answers ip and is_vpn as application/json', async () => {
    const r = await get(svc.port, '/81.7.3.20');
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/json');
    assert.deepEqual(r.json, { ip: '81.7.3.20', is_vpn: true });
    assert.deepEqual((await get(svc.port, '/81.7.4.1')).json, { ip: '81.7.4.1', is_vpn: false });
  });

  test('IPv6 answers carry the RFC 5952 form; IPv4-mapped is classified as IPv4', async () => {
    assert.deepEqual((await get(svc.port, '/2A01:04F8:C012:0000:0000:0000:0000:0001')).json, { ip: '2a01:4f8:c012::1', is_vpn: true });
    assert.deepEqual((await get(svc.port, '/::ffff:81.7.3.1')).json, { ip: '::ffff:81.7.3.1', is_vpn: true });
    assert.deepEqual((await get(svc.port, '/2a01%3A4f8%3Ac012%3A%3A2')).json, { ip: '2a01:4f8:c012::2', is_vpn: true });
  });

  test('a bogon is answered without classification', async () => {
    assert.deepEqual((await get(svc.port, '/10.1.2.3')).json, { ip: '10.1.2.3', is_vpn: false });
    assert.deepEqual((await get(svc.port, '/fe80::1')).json, { ip: 'fe80::1', is_vpn: false });
  });

  for (const bad of ['/1.2.3', '/01.2.3.4', '/fe80::1%25eth0', '/hello', '/%zz', '/1.2.3.4%20']) {
    test(`GET ${bad} is 400 'not a valid IP address'`, async () => {
      const r = await get(svc.port, bad);
      assert.equal(r.status, 400);
      assert.equal(r.headers['content-type'], 'application/json');
      assert.deepEqual(r.json, { error: 'not a valid IP address' });
    });
  }

  test('GET /myip answers for the TCP peer', async () => {
    assert.deepEqual((await get(svc.port, '/myip', { 'X-Forwarded-For': '81.7.3.20' })).json, { ip: '127.0.0.1', is_vpn: false });
  });

  test('unknown routes are JSON 404, wrong methods JSON 405 with Allow', async () => {
    for (const p of ['/', '/a/b', '/1.2.3.4/', '/api/v1/nothing', '/api/v1/iam/apikeys/a/b', '/api/v1/database/list/x']) {
      const r = await get(svc.port, p);
      assert.equal(r.status, 404, p);
      assert.deepEqual(r.json, { error: 'not found' });
    }
    const cases: [string, string, string][] = [
      ['GET', '/batch', 'POST'],
      ['POST', '/1.2.3.4', 'GET, HEAD'],
      ['DELETE', '/myip', 'GET, HEAD'],
      ['PUT', '/batch', 'POST'],
      ['POST', '/api/v1/account/me', 'GET, HEAD'],
      ['PUT', '/api/v1/iam/apikeys', 'POST, GET, HEAD'],
      ['GET', '/api/v1/iam/apikeys/ab12', 'DELETE'],
      ['GET', '/api/v1/iam/apikeys/ab12/rotate', 'POST'],
      ['DELETE', '/api/v1/database/list', 'GET, HEAD'],
      ['POST', '/api/v1/database/download', 'GET, HEAD'],
      ['POST', '/files/x/y.mmdb', 'GET, HEAD'],
    ];
    for (const [method, p, allow] of cases) {
      const r = await request(svc.port, method, p, method === 'GET' ? undefined : '{}');
      assert.equal(r.status, 405, `${method} ${p}`);
      assert.equal(r.headers.allow, allow);
      assert.equal(r.headers['content-type'], 'application/json');
      assert.deepEqual(r.json, { error: 'method not allowed' });
    }
  });

  test('POST /batch: keyed by the exact input, duplicates collapse, non-addresses are 400 entries', async () => {
    const ips = ['81.7.3.20', '81.7.3.20', '2A01:4F8:C012::1', 'nope', '::ffff:81.7.3.1', '192.168.0.1', 'nope', ''];
    const r = await postBatch(svc.port, { ips });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/json');
    assert.deepEqual(r.json, {
      results: {
        '81.7.3.20': { ip: '81.7.3.20', is_vpn: true },
        '2A01:4F8:C012::1': { ip: '2a01:4f8:c012::1', is_vpn: true },
        '::ffff:81.7.3.1': { ip: '::ffff:81.7.3.1', is_vpn: true },
        '192.168.0.1': { ip: '192.168.0.1', is_vpn: false },
      },
      errors: {
        nope: { status: 400, error: 'not a valid IP address' },
        '': { status: 400, error: 'not a valid IP address' },
      },
    });
  });

  test('POST /batch keeps strange input strings as exact keys', async () => {
    const ips = ['__proto__', 'a"b\\c', 'ü', 'constructor'];
    const r = await postBatch(svc.port, { ips });
    assert.deepEqual(Object.keys(r.json.errors), ips);
    assert.deepEqual(r.json.results, {});
  });

  const shapes: [string, string][] = [
    ['not JSON', '{"ips": ['],
    ['an array', '["1.2.3.4"]'],
    ['null', 'null'],
    ['a string', '"1.2.3.4"'],
    ['no ips', '{"addresses":["1.2.3.4"]}'],
    ['ips not an array', '{"ips":"1.2.3.4"}'],
    ['a number in ips', '{"ips":["1.2.3.4",5]}'],
    ['null in ips', '{"ips":[null]}'],
    ['an empty body', ''],
  ];
  for (const [name, body] of shapes) {
    test(`POST /batch with ${name} is 400 with the body-shape message`, async () => {
      const r = await postBatch(svc.port, body);
      assert.equal(r.status, 400);
      assert.deepEqual(r.json, { error: 'body must be a JSON object whose ips member is an array of strings' });
    });
  }

  test('POST /batch with 0 or 1001 addresses is 400; 1000 is answered', async () => {
    for (const n of [0, 1001]) {
      const r = await postBatch(svc.port, { ips: Array.from({ length: n }, (_, i) => `81.7.${i >> 8}.${i & 255}`) });
      assert.equal(r.status, 400, String(n));
      assert.deepEqual(r.json, { error: 'ips must hold between 1 and 1000 addresses' });
    }
    const ips = Array.from({ length: 1000 }, (_, i) => `81.7.${i >> 8}.${i & 255}`);
    const r = await postBatch(svc.port, { ips });
    assert.equal(r.status, 200);
    assert.equal(Object.keys(r.json.results).length, 1000);
    assert.deepEqual(r.json.results['81.7.3.5'], { ip: '81.7.3.5', is_vpn: true });
  });

  test('the largest valid 1000-address batch, fully \\u-escaped, fits under the body limit', async () => {
    const longest = (i: number) => `${(0x1000 + i).toString(16)}:ffff:ffff:ffff:ffff:ffff:255.255.255.255`;
    const escaped = (s: string) => '"' + [...s].map((ch) => '\\u' + ch.charCodeAt(0).toString(16).padStart(4, '0')).join('') + '"';
    const body = `{"ips":[${Array.from({ length: 1000 }, (_, i) => escaped(longest(i))).join(',\n  ')}]}`;
    assert.ok(Buffer.byteLength(body) < DEFAULT_MAX_BATCH_BODY_BYTES);
    const r = await postBatch(svc.port, body);
    assert.equal(r.status, 200);
    assert.equal(longest(999).length, 45);
    assert.equal(Object.keys(r.json.results).length, 1000);
  });

  test('a body over the limit is 413 at once from Content-Length', async () => {
    const r = await postBatch(svc.port, 'x'.repeat(DEFAULT_MAX_BATCH_BODY_BYTES + 1));
    assert.equal(r.status, 413);
    assert.deepEqual(r.json, { error: 'request body too large' });
  });

  test('a chunked body is cut off with 413 as soon as it passes the limit', async () => {
    // A small limit, so the whole overshoot sits in socket buffers and the client never
    // races the server's close with a pending write. The body is never terminated: an
    // answer at all proves the server stopped reading at the limit.
    const small = await startTestService({ dataDir, maxBatchBodyBytes: 4096 });
    try {
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(small.port, '127.0.0.1');
        let got = '';
        const timer = setTimeout(() => reject(new Error(`no answer; got ${JSON.stringify(got)}`)), 5000);
        socket.on('data', (c) => {
          got += c.toString('latin1');
          const m = /content-length: (\d+)\r\n/i.exec(got);
          const head = got.indexOf('\r\n\r\n');
          if (m && head >= 0 && got.length >= head + 4 + Number(m[1])) {
            clearTimeout(timer);
            socket.destroy();
            resolve(got);
          }
        });
        socket.on('error', () => undefined); // the server closes; what it sent is in `got`
        const chunk = 'x'.repeat(8192);
        socket.write(`POST /batch HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n`);
      });
      assert.match(raw, /^HTTP\/1\.1 413 /);
      assert.deepEqual(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)), { error: 'request body too large' });
    } finally {
      await small.close();
    }
  });
});

describe('lookup HTTP API with max-tier keyless answers and trusted proxies', () => {
  let svc: Service;
  before(async () => {
    const { parseNetwork } = await import('../src/net/network.js');
    const loopback = parseNetwork('127.0.0.0/8');
    assert.ok(loopback.ok);
    svc = await startTestService({ dataDir: dataDirWithBuild(), keylessTier: TIER_MAX, trustedProxies: [loopback.network] });
  });
  after(() => svc.close());

  test('every field is present with its detail', async () => {
    const r = await get(svc.port, '/81.7.3.20');
    assert.deepEqual(r.json, {
      ip: '81.7.3.20',
      is_vpn: true,
      is_hosting: false,
      is_relay: false,
      is_tor: true,
      is_cdn: false,
      is_resproxy: false,
      is_dcproxy: false,
      is_mobproxy: false,
      vpn: { provider: 'ExampleVPN', last_seen: '2026-11-01', confidence: 'high', method: 'server_list' },
      hosting: {},
      relay: {},
      tor: { provider: 'Tor Project', confidence: 'high', last_seen: '2026-11-02' },
      cdn: {},
      resproxy: {},
      dcproxy: {},
      mobproxy: {},
    });
  });

  test('/myip behind a trusted proxy reports the client from X-Forwarded-For, right to left', async () => {
    const r = await get(svc.port, '/myip', { 'X-Forwarded-For': '198.51.100.1, 81.7.3.20, 127.0.0.5' });
    assert.equal(r.json.ip, '81.7.3.20');
    assert.equal(r.json.is_tor, true);
  });

  test('/myip prefers Forwarded, with brackets and ports', async () => {
    const r = await get(svc.port, '/myip', { Forwarded: 'for="[2a01:4f8:c012::9]:4711";proto=https', 'X-Forwarded-For': '81.7.3.20' });
    assert.equal(r.json.ip, '2a01:4f8:c012::9');
    assert.equal(r.json.is_vpn, true);
  });

  test('/myip falls back to the peer when the header is garbage', async () => {
    assert.equal((await get(svc.port, '/myip', { 'X-Forwarded-For': 'unknown' })).json.ip, '127.0.0.1');
  });

  test('/myip writes a forwarded client in any spelling the way it answers lookups', async () => {
    assert.equal((await get(svc.port, '/myip', { 'X-Forwarded-For': '2A01:04F8:C012:0:0:0:0:9' })).json.ip, '2a01:4f8:c012::9');
    assert.equal((await get(svc.port, '/myip', { 'X-Forwarded-For': '::ffff:81.7.3.20' })).json.ip, '81.7.3.20');
  });
});

describe('the client of a request, read as binary', () => {
  const fake = (bytes: number[]) => ({ getRemoteAddress: () => new Uint8Array(bytes).buffer }) as unknown as HttpResponse;
  const noHeaders = { getHeader: () => '' } as unknown as HttpRequest;
  const mapped = (a: number, b: number, c: number, d: number) => [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, a, b, c, d];

  test('IPv4 and IPv4-mapped peers are one client, keyed by number; IPv6 peers by their /64 (or the configured prefix)', () => {
    const client = new RequestClient([]);
    assert.deepEqual([client.of(fake([81, 7, 3, 20]), noHeaders).id(), client.text()], [0x51070314, '81.7.3.20']);
    assert.deepEqual([client.of(fake(mapped(81, 7, 3, 20)), noHeaders).id(), client.text()], [0x51070314, '81.7.3.20']);
    const v6 = [0x2a, 0x01, 0x04, 0xf8, 0xc0, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x09];
    assert.deepEqual([client.of(fake(v6), noHeaders).id(), client.text()], ['2a01:4f8:c012::/64', '2a01:4f8:c012::9']);
    const other = [0x2a, 0x01, 0x04, 0xf8, 0xc0, 0x12, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
    assert.equal(client.of(fake(other), noHeaders).id(), '2a01:4f8:c012::/64', 'one host of a /64 is one client');
    assert.equal(new RequestClient([], 48).of(fake(other), noHeaders).id(), '2a01:4f8:c012::/48');
    assert.equal(new RequestClient([], 128).of(fake(other), noHeaders).id(), '2a01:4f8:c012:0:ffff:ffff:ffff:ffff/128');
    assert.equal(client.of(fake([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]), noHeaders).text(), '::1');
    assert.equal(peerText(new Uint8Array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xfe, 1, 2, 3, 4])), '::fffe:102:304', 'not mapped');
  });

  test('behind trusted proxies the client is the forwarded one, keyed by its text', () => {
    const trusted = parseNetwork('127.0.0.0/8');
    assert.ok(trusted.ok);
    const client = new RequestClient([trusted.network]);
    const req = { getHeader: (h: string) => (h === 'x-forwarded-for' ? '81.7.3.20' : '') } as unknown as HttpRequest;
    assert.deepEqual([client.of(fake([127, 0, 0, 9]), req).id(), client.text()], ['81.7.3.20', '81.7.3.20']);
    assert.equal(client.of(fake([81, 7, 3, 21]), req).id(), '81.7.3.21', 'an untrusted peer is the client');
  });
});

describe('lookups with no build loaded', () => {
  let svc: Service;
  let dataDir: string;
  before(async () => {
    dataDir = tempDir();
    svc = await startTestService({ dataDir });
  });
  after(() => svc.close());

  test('GET /{ip} and /myip are 500 lookup failed; readiness is 503', async () => {
    for (const p of ['/81.7.3.20', '/10.0.0.1', '/myip']) {
      const r = await get(svc.port, p);
      assert.equal(r.status, 500, p);
      assert.deepEqual(r.json, { error: 'lookup failed' });
    }
    assert.equal((await get(svc.adminPort, '/readyz')).status, 503);
    assert.equal((await get(svc.adminPort, '/healthz')).status, 200);
  });

  test('a batch is 200 with every address a 500 entry', async () => {
    const r = await postBatch(svc.port, { ips: ['81.7.3.20', '2a01:4f8:c012::1', 'x'] });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, {
      results: {},
      errors: {
        '81.7.3.20': { status: 500, error: 'lookup failed' },
        '2a01:4f8:c012::1': { status: 500, error: 'lookup failed' },
        x: { status: 400, error: 'not a valid IP address' },
      },
    });
  });

  test('a build published later is picked up without a restart', async () => {
    importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', FEED) });
    runBuild({ dataDir });
    // Ready once every front-end thread serves it.
    await until(async () => (await get(svc.adminPort, '/readyz')).status === 200, 5_000, 'ready with the new build');
    assert.ok(svc.holder.current);
    assert.deepEqual((await get(svc.port, '/81.7.3.20')).json, { ip: '81.7.3.20', is_vpn: true });
  });
});

describe('a full batch queue', () => {
  let svc: Service;
  before(async () => {
    svc = await startTestService({ dataDir: dataDirWithBuild(), batchWorkers: 1, batchQueue: 0 });
  });
  after(() => svc.close());

  test('answers 429 rate limit exceeded with Retry-After, and serves the rest', async () => {
    const ips = Array.from({ length: 1000 }, (_, i) => `81.${i & 255}.${i >> 8}.1`);
    const replies = await Promise.all(Array.from({ length: 40 }, () => postBatch(svc.port, { ips })));
    const refused = replies.filter((r) => r.status === 429);
    const served = replies.filter((r) => r.status === 200);
    assert.ok(refused.length > 0, 'nothing was refused');
    assert.ok(served.length > 0, 'nothing was served');
    assert.equal(refused.length + served.length, replies.length);
    for (const r of refused) {
      assert.deepEqual(r.json, { error: 'rate limit exceeded' });
      assert.equal(r.headers['retry-after'], '1');
    }
    for (const r of served) assert.equal(Object.keys(r.json.results).length, 1000);
  });
});

describe('CORS (CORS_ORIGINS)', () => {
  const ORIGIN = 'https://app.example';
  let svc: Service;
  let plain: Service;
  before(async () => {
    const dataDir = dataDirWithBuild();
    svc = await startTestService({ dataDir, corsOrigins: [ORIGIN] });
    plain = await startTestService({ dataDir });
  });
  after(async () => {
    await svc.close();
    await plain.close();
  });

  const preflight = (port: number, p: string, origin: string, method: string) =>
    request(port, 'OPTIONS', p, undefined, { Origin: origin, 'Access-Control-Request-Method': method, 'Access-Control-Request-Headers': 'authorization' });

  test('a preflight from an allowed origin is 204 with the path’s methods and the key headers', async () => {
    for (const [p, methods] of [
      ['/81.7.3.9', 'GET, HEAD'],
      ['/batch', 'POST'],
      ['/api/v1/iam/apikeys', 'POST, GET, HEAD'],
      ['/api/v1/iam/apikeys/ab12', 'DELETE'],
    ] as const) {
      const r = await preflight(svc.port, p, ORIGIN, 'GET');
      assert.equal(r.status, 204, p);
      assert.equal(r.headers['access-control-allow-origin'], ORIGIN);
      assert.equal(r.headers['access-control-allow-methods'], methods, p);
      assert.match(String(r.headers['access-control-allow-headers']), /Authorization.*X-Api-Key.*Content-Type/);
      assert.equal(r.headers.vary, 'Origin');
      assert.equal(r.text, '');
    }
    // Not a preflight, another origin, or no CORS configured: the usual 405 (or 404), no CORS headers.
    for (const r of [
      await preflight(svc.port, '/81.7.3.9', 'https://evil.example', 'GET'),
      await preflight(plain.port, '/81.7.3.9', ORIGIN, 'GET'),
      await request(svc.port, 'OPTIONS', '/81.7.3.9'),
    ]) {
      assert.equal(r.status, 405);
      assert.equal(r.headers['access-control-allow-origin'], undefined);
    }
    assert.equal((await preflight(svc.port, '/a/b', ORIGIN, 'GET')).status, 404);
  });

  test('answers to an allowed origin carry Allow-Origin and expose the quota headers, refusals included', async () => {
    const o = { Origin: ORIGIN };
    const ok = await get(svc.port, '/81.7.3.9', o);
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.json, { ip: '81.7.3.9', is_vpn: true });
    assert.equal(ok.headers['access-control-allow-origin'], ORIGIN);
    assert.match(String(ok.headers['access-control-expose-headers']), /RateLimit-Policy, RateLimit,.*X-Allowance-Used.*Retry-After/);
    assert.ok(ok.headers.ratelimit !== undefined);
    const batch = await request(svc.port, 'POST', '/batch', JSON.stringify({ ips: ['81.7.3.9', 'nope'] }), o);
    assert.equal(batch.status, 200);
    assert.equal(batch.headers['access-control-allow-origin'], ORIGIN);
    const refused = await get(svc.port, '/81.7.3.9', { ...o, Authorization: 'Bearer isk_nope' });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers['access-control-allow-origin'], ORIGIN);
    for (const p of ['/myip', '/api/v1/account/me', '/nothing/here'])
      assert.equal((await get(svc.port, p, o)).headers['access-control-allow-origin'], ORIGIN, p);
    assert.equal((await get(svc.port, '/81.7.3.9', { Origin: 'https://evil.example' })).headers['access-control-allow-origin'], undefined);
    assert.equal((await get(svc.port, '/81.7.3.9')).headers['access-control-allow-origin'], undefined);
    assert.equal((await get(plain.port, '/81.7.3.9', o)).headers['access-control-allow-origin'], undefined);
  });
});

/** A request whose answer is kept as bytes (a compressed body). */
function requestBytes(
  port: number,
  method: string,
  p: string,
  body: string | undefined,
  headers: Record<string, string>,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: p, headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('compressed answers (Accept-Encoding)', () => {
  let svc: Service;
  before(async () => {
    svc = await startTestService({ dataDir: dataDirWithBuild() });
  });
  after(() => svc.close());
  const ips = Array.from({ length: 1000 }, (_, i) => (i % 4 === 0 ? `81.7.3.${i >> 2}` : `203.0.${i >> 8}.${i % 256}`));
  const body = JSON.stringify({ ips });

  test('a batch answer comes gzip- or br-coded when asked, identical once decoded; never when not asked', async () => {
    const plain = await requestBytes(svc.port, 'POST', '/batch', body, {});
    assert.equal(plain.status, 200);
    assert.equal(plain.headers['content-encoding'], undefined);
    const expected = JSON.parse(plain.body.toString('utf8'));
    assert.equal(Object.keys(expected.results).length, 1000);
    for (const [accept, coding] of [
      ['gzip', 'gzip'],
      ['br', 'br'],
      ['gzip, deflate, br, zstd', 'br'],
      ['gzip;q=1, br;q=0.5', 'gzip'],
      ['x-gzip', 'gzip'],
      ['*', 'br'],
      ['br;q=0, *;q=0.1', 'gzip'],
    ] as const) {
      const r = await requestBytes(svc.port, 'POST', '/batch', body, { 'Accept-Encoding': accept });
      assert.equal(r.status, 200, accept);
      assert.equal(r.headers['content-encoding'], coding, accept);
      assert.equal(r.headers.vary, 'Accept-Encoding');
      assert.equal(Number(r.headers['content-length']), r.body.length);
      assert.ok(r.body.length * 5 < plain.body.length, `${accept}: ${r.body.length} of ${plain.body.length} bytes`);
      const decoded = coding === 'gzip' ? zlib.gunzipSync(r.body) : zlib.brotliDecompressSync(r.body);
      assert.deepEqual(JSON.parse(decoded.toString('utf8')), expected, accept);
    }
    for (const accept of ['identity', 'gzip;q=0, br;q=0', 'deflate', 'gzip;q=2', '*;q=0']) {
      const r = await requestBytes(svc.port, 'POST', '/batch', body, { 'Accept-Encoding': accept });
      assert.equal(r.headers['content-encoding'], undefined, accept);
      assert.deepEqual(JSON.parse(r.body.toString('utf8')), expected, accept);
    }
  });

  test('short answers and whole-call errors go out as they are', async () => {
    const one = await requestBytes(svc.port, 'POST', '/batch', JSON.stringify({ ips: ['81.7.3.9'] }), { 'Accept-Encoding': 'gzip' });
    assert.equal(one.headers['content-encoding'], undefined);
    assert.deepEqual(JSON.parse(one.body.toString('utf8')).results['81.7.3.9'], { ip: '81.7.3.9', is_vpn: true });
    const bad = await requestBytes(svc.port, 'POST', '/batch', '{"ips":' + '['.repeat(2000), { 'Accept-Encoding': 'gzip' });
    assert.equal(bad.status, 400);
    assert.equal(bad.headers['content-encoding'], undefined);
    const single = await requestBytes(svc.port, 'GET', '/81.7.3.9', undefined, { 'Accept-Encoding': 'gzip' });
    assert.deepEqual([single.headers['content-encoding'], JSON.parse(single.body.toString('utf8'))], [undefined, { ip: '81.7.3.9', is_vpn: true }]);
  });

  test('Prometheus metrics on the admin port are compressed for a scraper that asks', async () => {
    const r = await requestBytes(svc.adminPort, 'GET', '/metrics', undefined, { 'Accept-Encoding': 'gzip' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-encoding'], 'gzip');
    assert.match(zlib.gunzipSync(r.body).toString('utf8'), /^ipsift_batches_total \d+$/m);
  });
});

/** Prometheus text (0.0.4) as sample → value, the sample named with its labels as written. */
function samplesOf(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-z_]+(?:\{[^}]*\})?) (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    assert.ok(!out.has(m[1]), `${m[1]} twice`);
    out.set(m[1], Number(m[2]));
  }
  return out;
}

describe('metrics (admin port)', () => {
  let svc: Service;
  before(async () => {
    svc = await startTestService({ dataDir: dataDirWithBuild() });
  });
  after(() => svc.close());

  test('latency histograms per route family, build info, index age, process and event-loop figures', async () => {
    for (let i = 0; i < 5; i++) assert.equal((await get(svc.port, `/81.7.3.${i}`)).status, 200);
    assert.equal((await postBatch(svc.port, { ips: ['81.7.3.9'] })).status, 200);
    assert.equal((await get(svc.port, '/api/v1/database/list')).status, 401);
    assert.equal((await get(svc.port, '/api/v1/account/me')).status, 401);
    const r = await get(svc.adminPort, '/metrics');
    assert.equal(r.headers['content-type'], 'text/plain; version=0.0.4');
    const s = samplesOf(r.text);
    const pkg = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string };
    const info = [...s.keys()].find((k) => k.startsWith('ipsift_build_info{'));
    assert.match(String(info), new RegExp(`version="${pkg.version}",runtime="(Node|Bun) [\\d.]+",http_server="${svc.httpServer}"`));
    for (const [family, least] of [
      ['lookup', 5],
      ['batch', 1],
      ['database', 1],
      ['account', 1],
    ] as const) {
      const count = s.get(`ipsift_request_duration_seconds_count{family="${family}"}`)!;
      assert.ok(count >= least, `${family}: ${count}`);
      assert.equal(s.get(`ipsift_request_duration_seconds_bucket{family="${family}",le="+Inf"}`), count);
      let last = 0;
      for (const [k, v] of s) {
        if (!k.startsWith(`ipsift_request_duration_seconds_bucket{family="${family}",`)) continue;
        assert.ok(v >= last, `${k} is cumulative`);
        last = v;
      }
      const sum = s.get(`ipsift_request_duration_seconds_sum{family="${family}"}`)!;
      assert.ok(sum > 0 && sum < count * 5, `${family}: sum ${sum}`);
    }
    const now = Date.now() / 1000;
    const built = s.get('ipsift_index_build_timestamp_seconds')!;
    assert.ok(built > now - 600 && built <= now, `built ${built}`);
    assert.ok(s.get('ipsift_index_loaded_timestamp_seconds')! >= built);
    assert.equal(s.get('ipsift_last_publish_timestamp_seconds'), 0, 'nothing published in this data directory');
    assert.ok(s.get('process_resident_memory_bytes')! > 1e6);
    assert.ok(s.get('process_cpu_seconds_total')! > 0);
    assert.ok(Math.abs(s.get('process_start_time_seconds')! - (now - process.uptime())) < 5);
    for (const q of ['0.5', '0.99', '1']) assert.ok(s.get(`ipsift_event_loop_delay_seconds{thread="0",quantile="${q}"}`)! >= 0);
  });

  test("the console's traffic history: one sample a period, from the same counters, the oldest dropped", async () => {
    const history = new MetricsHistory(() => svc.metrics, { periodMs: 10_000, keep: 3 });
    const t0 = Date.parse('2026-11-26T12:00:00Z');
    history.sample(t0);
    assert.deepEqual(history.samples(), [], 'the first reading is only a start');
    for (let i = 0; i < 8; i++) assert.equal((await get(svc.port, `/81.7.3.${i}`)).status, 200);
    assert.equal((await get(svc.port, '/not-an-ip')).status, 400);
    assert.equal((await postBatch(svc.port, { ips: ['81.7.3.9'] })).status, 200);
    history.sample(t0 + 10_000);
    const [s] = history.samples();
    assert.equal(s.at, '2026-11-26T12:00:10.000Z');
    assert.equal(s.requests_per_s, 1, '10 answers in 10 s');
    assert.equal(s.client_errors_per_s, 0.1);
    assert.equal(s.rate_limited_per_s, 0);
    assert.equal(s.server_errors_per_s, 0);
    assert.ok(s.lookup_p50_ms! > 0 && s.lookup_p50_ms! <= s.lookup_p99_ms!, JSON.stringify(s));
    assert.ok(s.batch_p99_ms! > 0);
    for (let k = 2; k <= 4; k++) history.sample(t0 + k * 10_000);
    assert.deepEqual(
      history.samples().map((x) => x.at.slice(11, 19)),
      ['12:00:20', '12:00:30', '12:00:40'],
    );
    assert.deepEqual([history.samples()[2].requests_per_s, history.samples()[2].lookup_p50_ms], [0, null], 'a quiet period');
    // Per route family over the window: the 8 lookups and 1 batch since the first reading, the
    // busiest first, each with its own latency.
    const routes = history.routes('1h', t0 + 40_000);
    assert.deepEqual(
      routes.slice(0, 2).map((r) => [r.family, r.requests]),
      [
        ['lookup', 9],
        ['batch', 1],
      ],
      'the 400 is a lookup-route answer too',
    );
    assert.equal(routes[0].per_s, 0.23, '9 in 40 s');
    assert.ok(routes[0].p50_ms! > 0 && routes[1].p99_ms! > 0);
    assert.deepEqual(
      routes.slice(2).map((r) => [r.requests, r.p50_ms]),
      [
        [0, null],
        [0, null],
        [0, null],
      ],
    );

    // Linear within the bucket, as Prometheus's histogram_quantile: 10 requests between 0.1 and 0.25 ms.
    const before = LATENCY_BOUNDS.map(() => 0).concat(0);
    const after = LATENCY_BOUNDS.map((b) => (b >= 0.00025 ? 10 : 0)).concat(10);
    assert.ok(Math.abs(quantileMs(before, after, 0.5)! - 0.175) < 1e-9);
    assert.equal(quantileMs(before, before, 0.5), null);
  });

  test('the traffic history outlives a restart in its ring file, and answers 1 h, 6 h and 24 h in 360 points at most', async () => {
    const file = path.join(tempDir(), 'history', 'traffic-test.bin');
    const t0 = Date.parse('2026-11-26T00:00:00Z');
    const first = new MetricsHistory(() => svc.metrics, { file });
    first.sample(t0);
    // A day of quiet periods, one lookup in the last of them.
    for (let k = 1; k < 8640; k++) first.sample(t0 + k * 10_000);
    assert.equal((await get(svc.port, '/81.7.3.1')).status, 200);
    first.sample(t0 + 8640 * 10_000);
    const last = first.samples().at(-1)!;
    assert.equal(last.requests_per_s, 0.1);
    assert.equal(first.samples().length, 8640, 'a day of samples, the oldest dropped');
    first.close();
    assert.equal(fs.statSync(file).size, 16 + 8640 * 40, 'the ring keeps its size');

    // Restarted a minute later: the day comes back from the file, nothing newer than now.
    const again = new MetricsHistory(() => svc.metrics, { file });
    const stop = again.start(stoppedAt(t0 + 8646 * 10_000));
    try {
      const kept = again.samples();
      assert.equal(kept.length, 8640 - 6, 'the day before now, read back');
      assert.deepEqual(kept.at(-1), last, 'a sample reads back as written');
      const hour = again.view('1h', t0 + 8646 * 10_000);
      assert.deepEqual([hour.window, hour.period_s, hour.samples.length], ['1h', 10, 354]);
      const six = again.view('6h', t0 + 8646 * 10_000);
      assert.equal(six.period_s, 60);
      assert.ok(six.samples.length <= 360 && six.samples.length >= 359, String(six.samples.length));
      // The lookup's period merged with five quiet ones: its rate averaged over the minute.
      assert.ok(
        six.samples.some((s) => Math.abs(s.requests_per_s - 0.02) < 1e-9),
        'a merged minute with one lookup',
      );
      const day = again.view('24h', t0 + 8646 * 10_000);
      assert.deepEqual([day.period_s, day.samples.length <= 360], [240, true]);
    } finally {
      stop();
    }
    // A file of another shape (another period) is started afresh, not misread.
    const other = new MetricsHistory(() => svc.metrics, { file, periodMs: 60_000 });
    other.start(stoppedAt(t0 + 8646 * 10_000))();
    assert.deepEqual(other.samples().length, 0);
  });
});
