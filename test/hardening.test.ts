// Hostile input and faults (issue #11): requests that crashed, escalated or exhausted the
// server, and the stores and workers failing under it. Each test pins one attack or fault.

import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { loadCatalogue } from '../src/catalogue/catalogue.js';
import { createKey, createOrganisation, listKeys } from '../src/control/accounts.js';
import { KeyCache } from '../src/control/auth.js';

import { loadPlans } from '../src/model/plans.js';
import { LmdbAccountingStore } from '../src/accounting/lmdb-store.js';
import { checkAccountingFile } from '../src/accounting/check-store.js';
import { staleBefore } from '../src/accounting/pruner.js';
import { AccountingUnavailable, MAX_OWED_COUNTERS, openMeter } from '../src/accounting/meter.js';
import { OwedTable } from '../src/accounting/owed-table.js';
import { BatchPool } from '../src/batch/pool.js';
import { runBuild } from '../src/build/build.js';
import { readCurrentBuildId } from '../src/index/builds.js';
import { grantLicence } from '../src/control/licences.js';
import { createAdminToken } from '../src/control/admin-tokens.js';
import { publishExports } from '../src/pipeline/publish.js';
import { importFeed } from '../src/feeds/import.js';
import { fileTransfers } from '../src/http/file-transfer.js';
import type { Service } from '../src/service.js';
import { LocalStore } from '../src/objects/local-store.js';
import { TIER_MAX } from '../src/model/projection.js';
import { openServer } from '../src/http/server/open.js';
import {
  get,
  openTestControlDb,
  plansFile,
  PROJECT_ROOT,
  PUBLISHED_FEED as FEED,
  raw,
  request,
  responses,
  startTestService,
  tempDir,
  until,
  utcDaysSince,
  writeFile,
} from './helpers.js';
import { againOn } from './again.js';
import { accountingDir, buildsDir, controlDbFile, storeLinkSecretFile } from '../src/data-dir.js';

const run = promisify(execFile);
const CLI = path.join(PROJECT_ROOT, 'dist/src/cli.js');

const BASES = loadCatalogue().bases.map((b) => b.base);
const lavish = { per_second: 1_000_000, burst: 1_000_000 };

/** A store over `real` that refuses every write (ENOSPC) while `fail(true)`: reads go on. */
function failingStore(real: LmdbAccountingStore): { store: LmdbAccountingStore; fail: (on: boolean) => void } {
  let failing = false;
  const refuse = (): never => {
    throw new Error('ENOSPC');
  };
  const store = {
    spent: (c: string) => real.spent(c),
    reserve: (c: string, n: number, e: number, l: number | null) => (failing ? refuse() : real.reserve(c, n, e, l)),
    release: (c: string, n: number) => (failing ? refuse() : real.release(c, n)),
    takeTokens: (b: string, w: number, r: number, bu: number, t: number) => (failing ? refuse() : real.takeTokens(b, w, r, bu, t)),
  } as unknown as LmdbAccountingStore;
  return { store, fail: (on) => void (failing = on) };
}

// Parsing and limits: the HTTP server's, again on node:http.
describe('hostile requests', againOn('server'), () => {
  let svc: Service;
  let dataDir: string;
  const keys: Record<string, string> = {};
  const ids: Record<string, string> = {};
  let orgA = '';

  before(async () => {
    dataDir = tempDir();
    importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', FEED) });
    const build = runBuild({ dataDir });
    const file = plansFile(dataDir, {
      keyless: { daily_cap: 3, rate: lavish },
      plans: [
        { key: 'max', tier: 'max', quota: 1_000_000, rate: lavish, hard_limit: null },
        { key: 'small', tier: 'max', quota: 2000, rate: lavish, hard_limit: 'quota' },
      ],
    });
    const plans = loadPlans(file);
    const db = openTestControlDb(dataDir);
    const org = createOrganisation(db, plans, 'A', 'max');
    orgA = org.id;
    const key = (name: string, o: Parameters<typeof createKey>[1]): void => {
      const k = createKey(db, o);
      keys[name] = k.secret;
      ids[name] = k.key.id;
    };
    key('manager', { orgId: org.id, name: 'manager', scopes: ['apikeys.manage'] });
    key('owner', { orgId: org.id, name: 'owner', scopes: ['apikeys.manage', 'db.download'] });
    key('download', { orgId: org.id, name: 'download', scopes: ['db.download'] });
    key('plain', { orgId: org.id, name: 'plain', scopes: [] });
    key('fenced', { orgId: org.id, name: 'fenced', scopes: ['db.download'], allowedCidrs: ['10.0.0.0/8'] });
    key('restricted', {
      orgId: org.id,
      name: 'restricted',
      scopes: ['apikeys.manage'],
      allowedCidrs: ['127.0.0.0/8'],
      expires: new Date(Date.now() + 3_600_000).toISOString(),
    });
    const small = createOrganisation(db, plans, 'Small', 'small');
    key('small', { orgId: small.id, name: 'small' });
    grantLicence(
      db,
      {
        orgId: org.id,
        base: 'vpn',
        licenceType: 'subscription',
        starts: new Date(Date.now() - 86_400_000).toISOString(),
        expires: new Date(Date.now() + 86_400_000).toISOString(),
      },
      BASES,
    );
    await publishExports(db, new LocalStore(dataDir), dataDir, build.id);
    db.close();
    svc = await startTestService({ dataDir, plansFile: file, trustedProxies: [], keylessTier: TIER_MAX });
  });
  after(() => svc.close());

  const bearer = (name: string) => ({ Authorization: `Bearer ${keys[name]}` });
  const alive = async (): Promise<void> => assert.equal((await get(svc.port, '/81.7.3.9', bearer('plain'))).status, 200);

  test('malformed escapes under /files answer 403 (GET) and a bodiless 403 (HEAD); the server lives', async () => {
    for (const p of ['/files/%ZZ', '/files/a%', '/files/%E0%A4%A', '/files/%']) {
      const g = await get(svc.port, p);
      assert.deepEqual([g.status, g.json.rc], [403, 'FORBIDDEN'], p);
      const h = await request(svc.port, 'HEAD', p);
      assert.deepEqual([h.status, h.text], [403, ''], `HEAD ${p}`);
    }
    await alive();
  });

  test('HEAD answers carry no body: 404, 405 with Allow, 401', async () => {
    const stream = await raw(
      svc.port,
      'HEAD /no/such HTTP/1.1\r\nHost: t\r\n\r\nHEAD /batch HTTP/1.1\r\nHost: t\r\n\r\nHEAD /api/v1/account/me HTTP/1.1\r\nHost: t\r\n\r\nGET /81.7.3.9 HTTP/1.1\r\nHost: t\r\n\r\n',
      1000,
      [true, true, true, false],
    );
    const [a, b, c, d] = responses(stream, [true, true, true, false]);
    assert.equal(a.status, 404);
    assert.equal(b.status, 405);
    assert.match(b.head, /allow: POST/i);
    assert.equal(c.status, 401);
    // Were a HEAD body sent, it would be read as the start of the next answer.
    assert.equal(d.status, 200);
    assert.equal(JSON.parse(d.body).ip, '81.7.3.9');
  });

  test('HEAD on every GET route answers as GET would, with the body’s Content-Length and no body', async () => {
    const id = 'vpn_v1';
    const paths: [string, string][] = [
      ['/81.7.3.9', keys.plain],
      ['/myip', keys.plain],
      ['/api/v1/account/me', keys.plain],
      ['/api/v1/iam/apikeys', keys.owner],
      ['/api/v1/database/list', keys.download],
      [`/api/v1/database/metadata?id=${id}`, keys.download],
      [`/api/v1/database/checksum?id=${id}&format=mmdb`, keys.download],
      ['/api/v1/database/downloads', keys.download],
    ];
    for (const [p, key] of paths) {
      const req = (method: string): string => `${method} ${p} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${key}\r\n\r\n`;
      // HEAD, then GET on one connection: the GET's answer must follow the HEAD's head directly.
      const [head, got] = responses(await raw(svc.port, req('HEAD') + req('GET'), 1000, [true, false]), [true, false]);
      assert.equal(head.status, got.status, p);
      assert.ok(got.status < 400, `${p}: ${got.status} ${got.body}`);
      const lengthOf = (r: { head: string }): string | undefined => /content-length: *(\d+)/i.exec(r.head)?.[1];
      assert.equal(lengthOf(head), String(Buffer.byteLength(got.body)), p);
      const names = (r: { head: string }): string[] =>
        r.head
          .split('\r\n')
          .slice(1)
          .map((l) => l.split(':')[0].toLowerCase())
          .filter((n) => n !== 'date')
          .sort();
      assert.deepEqual(names(head), names(got), p);
    }
  });

  test('a key holding only apikeys.manage cannot rotate or revoke a db.download key', async () => {
    const rotate = await request(svc.port, 'POST', `/api/v1/iam/apikeys/${ids.download}/rotate`, undefined, bearer('manager'));
    assert.deepEqual([rotate.status, rotate.json.rc], [403, 'FORBIDDEN']);
    const revoke = await request(svc.port, 'DELETE', `/api/v1/iam/apikeys/${ids.download}`, undefined, bearer('manager'));
    assert.deepEqual([revoke.status, revoke.json.rc], [403, 'FORBIDDEN']);
    // The holder still downloads with the old secret.
    assert.equal((await get(svc.port, '/api/v1/database/list', bearer('download'))).status, 200);
    // A body a rotation does not take is refused before anything changes.
    const odd = await request(svc.port, 'POST', `/api/v1/iam/apikeys/${ids.plain}/rotate`, 'not json at all', bearer('owner'));
    assert.deepEqual([odd.status, odd.json.rc], [400, 'BAD_REQUEST']);
    assert.equal((await get(svc.port, '/81.7.3.9', bearer('plain'))).status, 200, 'the key was not rotated');
    // A new key that would be dead on arrival is refused.
    const dead = await request(svc.port, 'POST', '/api/v1/iam/apikeys', JSON.stringify({ name: 'late', expires: '2020-01-01T00:00:00Z' }), bearer('owner'));
    assert.deepEqual([dead.status, dead.json.rc], [400, 'BAD_REQUEST']);
    assert.match(dead.json.message, /^expires must be in the future/);
    // A key holding both scopes may.
    const ok = await request(svc.port, 'POST', `/api/v1/iam/apikeys/${ids.plain}/rotate`, undefined, bearer('owner'));
    assert.equal(ok.status, 200);
    keys.plain = ok.json.key;
  });

  test('a body nested 30 000 deep (or 5 000, on the admin port) is a 400 naming the depth, never a 500', async () => {
    const deep = (n: number): string => `{"scopes":${'['.repeat(n)}${']'.repeat(n)}}`;
    const token = await request(svc.port, 'POST', '/api/v1/auth/token', deep(30_000), { ...bearer('owner'), 'Content-Type': 'application/json' });
    assert.deepEqual([token.status, (token.json as { rc?: string }).rc], [400, 'BAD_REQUEST'], token.text.slice(0, 200));
    assert.match((token.json as { message: string }).message, /^body nests deeper than 16 levels/);
    const db = openTestControlDb(dataDir);
    const ops = createAdminToken(db, 'deep-ops', ['admin.write']).secret;
    db.close();
    const admin = await request(svc.adminPort, 'POST', '/admin/v1/tokens', deep(5_000), { Authorization: `Bearer ${ops}`, 'Content-Type': 'application/json' });
    assert.deepEqual([admin.status, (admin.json as { rc?: string }).rc], [400, 'BAD_REQUEST'], admin.text.slice(0, 200));
    // Shallow but wrong: the refusal names the item's kind, not its contents.
    const wrong = await request(svc.port, 'POST', '/api/v1/auth/token', '{"scopes":[[1]]}', { ...bearer('owner'), 'Content-Type': 'application/json' });
    assert.equal(wrong.status, 400);
    assert.match((wrong.json as { message: string }).message, /scopes\[0\] must be .*, not an array$/);
    await alive();
  });

  test('a created key inherits the creator’s expiry and ranges, and can get no more than they allow', async () => {
    const create = (body: unknown) => request(svc.port, 'POST', '/api/v1/iam/apikeys', JSON.stringify(body), bearer('restricted'));
    const inherited = await create({ name: 'child' });
    assert.equal(inherited.status, 201);
    assert.deepEqual(inherited.json.allowed_cidrs, ['127.0.0.0/8']);
    const db = openTestControlDb(dataDir);
    const stored = listKeys(db, orgA).find((k) => k.id === inherited.json.id)!;
    const parent = listKeys(db, orgA).find((k) => k.id === ids.restricted)!;
    db.close();
    assert.equal(stored.expires, parent.expires);
    for (const body of [
      { name: 'never', expires: null },
      { name: 'later', expires: new Date(Date.now() + 7_200_000).toISOString() },
      { name: 'anywhere', allowed_cidrs: [] },
      { name: 'elsewhere', allowed_cidrs: ['10.0.0.0/8'] },
      { name: 'wider', allowed_cidrs: ['126.0.0.0/7'] },
      { name: 'scoped', allowed_scopes: ['db.download'] },
    ]) {
      const r = await create(body);
      assert.deepEqual([r.status, r.json.rc], [403, 'FORBIDDEN'], JSON.stringify(body));
    }
    const narrower = await create({ name: 'narrow', allowed_cidrs: ['127.0.0.1/32'], expires: new Date(Date.now() + 60_000).toISOString() });
    assert.equal(narrower.status, 201);
  });

  test('two different keys under one name are 401: two headers of either kind, or ?apikey twice', async () => {
    const twice = (lines: string) => raw(svc.port, `GET /81.7.3.9 HTTP/1.1\r\nHost: t\r\n${lines}Connection: close\r\n\r\n`).then((s) => responses(s)[0]);
    const [a, b] = [keys.plain, keys.download];
    for (const lines of [`Authorization: Bearer ${a}\r\nAuthorization: Bearer ${b}\r\n`, `X-Api-Key: ${a}\r\nX-Api-Key: ${b}\r\n`]) {
      const r = await twice(lines);
      assert.deepEqual([r.status, JSON.parse(r.body)], [401, { error: 'invalid API key' }], lines);
    }
    const q = await get(svc.port, `/81.7.3.9?apikey=${a}&apikey=${b}`);
    assert.deepEqual([q.status, q.json], [401, { error: 'invalid API key' }]);
    // The same key twice is one key.
    assert.equal((await twice(`X-Api-Key: ${a}\r\nX-Api-Key: ${a}\r\n`)).status, 200);
    assert.equal((await get(svc.port, `/81.7.3.9?apikey=${a}&apikey=${a}`)).status, 200);
  });

  test('batch bodies take memory as they arrive, not as declared', async () => {
    const N = 200;
    const sockets: net.Socket[] = [];
    try {
      for (let i = 0; i < N; i++) {
        const s = net.connect(svc.port, '127.0.0.1');
        s.on('error', () => undefined);
        s.write(`POST /batch HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${keys.plain}\r\nContent-Length: 524288\r\n\r\n`);
        sockets.push(s);
      }
      // Every request admitted (its reader waiting for the body) and nothing taken for it yet.
      await until(
        () => svc.metrics.inFlight === N,
        10_000,
        () => `${N} batch requests admitted (${svc.metrics.inFlight})`,
      );
      assert.equal(svc.metrics.bodyMemory!.held, 0, 'declared lengths were allocated');
      for (const s of sockets) s.write('{"ips":[');
      // Each first chunk takes one first block (16 KiB), not the 512 KiB declared.
      await until(
        () => svc.metrics.bodyMemory!.held >= N * 16 * 1024,
        10_000,
        () => `every first chunk read (held ${svc.metrics.bodyMemory!.held})`,
      );
      assert.equal(svc.metrics.bodyMemory!.held, N * 16 * 1024);
    } finally {
      for (const s of sockets) s.destroy();
    }
    await until(
      () => svc.metrics.bodyMemory!.held === 0,
      10_000,
      () => `closed connections gave their memory back (held ${svc.metrics.bodyMemory!.held})`,
    );
    assert.equal(svc.metrics.inFlight, 0);
    await alive();
  });

  test('a body over the limit is drained and answered 413, so a client that writes it all first reads the 413', async () => {
    // 4 MB: more than the socket buffers hold, so a server that closes early is a broken pipe.
    const body = Buffer.alloc(4 * 1024 * 1024, 0x20);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port: svc.port, method: 'POST', path: '/batch', agent: false, headers: { 'Content-Length': body.length } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', (e) => reject(new Error(`no 413: ${e.message}`)));
      req.end(body);
    });
    assert.equal(status, 413);
  });

  test('a pipelined request after a database request is answered too', async () => {
    const stream = await raw(
      svc.port,
      `GET /api/v1/database/list HTTP/1.1\r\nHost: t\r\nX-Api-Key: ${keys.download}\r\n\r\nGET /81.7.3.9 HTTP/1.1\r\nHost: t\r\n\r\n`,
      1000,
      [false, false],
    );
    const [list, lookup] = responses(stream);
    assert.equal(list?.status, 200);
    assert.equal(lookup?.status, 200);
  });

  test('batches never refuse while the allowance is unspent, and count exactly what they answered', async () => {
    const me = async () => (await get(svc.port, '/api/v1/account/me', bearer('small'))).json.usage.requests as number;
    for (let i = 0; i < 170; i++) assert.equal((await get(svc.port, `/81.7.3.${i % 250}`, bearer('small'))).status, 200);
    const pad = ' '.repeat(20_000);
    const tens = Array.from({ length: 40 }, (_, b) => `{"ips":[${Array.from({ length: 10 }, (_, i) => `"81.7.${b}.${i}"`).join(`,${pad}`)}]}`);
    const copies = Array.from({ length: 10 }, (_, b) => JSON.stringify({ ips: Array(1000).fill(`82.0.${b}.1`) }));
    const replies = await Promise.all([...tens, ...copies].map((body) => request(svc.port, 'POST', '/batch', body, bearer('small'))));
    let refused = 0;
    for (const r of replies) {
      assert.equal(r.status, 200);
      refused += Object.values(r.json.errors as Record<string, { status: number }>).filter((e) => e.status === 429).length;
    }
    assert.equal(refused, 0, 'a batch was refused with allowance unspent');
    // Idle leases go back (on every thread) within 1.5 × LEASE_IDLE_MS; until then usage
    // counts what the leases hold.
    let usage = -1;
    await until(
      async () => (usage = await me()) === 170 + 400 + 10,
      10_000,
      () => `usage counts what was answered (last read ${usage})`,
    );
  });

  test('keyless IPv6 clients are counted per /64, IPv4 per address', async () => {
    const proxied = await startTestService({
      dataDir,
      plansFile: plansFile(tempDir(), {
        keyless: { daily_cap: 3, rate: lavish },
        plans: [{ key: 'max', tier: 'max', quota: 10, rate: lavish, hard_limit: null }],
      }),
      trustedProxies: [{ family: 4, start: 0x7f000000n, end: 0x7fffffffn }],
    });
    try {
      const from = (ip: string) => get(proxied.port, '/81.7.3.9', { 'X-Forwarded-For': ip }).then((r) => r.status);
      assert.deepEqual(await Promise.all(['2a01:4f8:1:2::1', '2a01:4f8:1:2::2', '2a01:4f8:1:2:ffff::3'].map(from)), [200, 200, 200]);
      assert.equal(await from('2a01:4f8:1:2::4'), 429, 'another host of the same /64 has no cap of its own');
      assert.equal(await from('2a01:4f8:1:3::1'), 200);
      assert.deepEqual(await Promise.all(['81.7.3.1', '81.7.3.2'].map(from)), [200, 200]);
    } finally {
      await proxied.close();
    }
  });

  test('refusals of a download are in the history: missing parameters, no scope, outside the key’s ranges; sample takes true or false only', async () => {
    const dl = (name: string, q: string) => get(svc.port, `/api/v1/database/download?${q}`, bearer(name));
    assert.equal((await dl('download', 'format=csvgz')).status, 400);
    assert.equal((await dl('plain', 'id=vpn_v1&format=csvgz')).status, 401);
    assert.equal((await dl('fenced', 'id=vpn_v1&format=csvgz')).status, 403);
    for (const v of ['1', 'TRUE', 'yes', '']) {
      const r = await dl('download', `id=vpn_v1&format=csvgz&sample=${v}`);
      assert.deepEqual([r.status, r.json.rc], [400, 'BAD_REQUEST'], `sample=${v}`);
    }
    const history = (await get(svc.port, '/api/v1/database/downloads?limit=20', bearer('download'))).json.downloads as Record<string, unknown>[];
    const seen = history.map((d) => [d.outcome, d.http_status, d.dataset_id]);
    assert.deepEqual(seen.slice(0, 7).reverse(), [
      ['bad_request', 400, ''],
      ['forbidden', 401, 'vpn_v1'],
      ['forbidden', 403, 'vpn_v1'],
      ['bad_request', 400, 'vpn_v1'],
      ['bad_request', 400, 'vpn_v1'],
      ['bad_request', 400, 'vpn_v1'],
      ['bad_request', 400, 'vpn_v1'],
    ]);
  });

  test('a database too small for a strict sample offers none', async () => {
    const list = (await get(svc.port, '/api/v1/database/list', bearer('download'))).json.databases as {
      base: string;
      versions: { sample_formats: string[] }[];
    }[];
    assert.deepEqual(list.find((d) => d.base === 'vpn_provider')!.versions[0].sample_formats, [], 'one provider');
    assert.deepEqual(list.find((d) => d.base === 'vpn')!.versions[0].sample_formats, ['csvgz', 'mmdb']);
    const r = await get(svc.port, '/api/v1/database/download?id=vpn_provider_v1&format=csvgz&sample=true', bearer('download'));
    assert.equal(r.status, 503);
  });

  test('stalled download readers hold no read buffer, and a resumed one gets every byte', async () => {
    const store = new LocalStore(dataDir);
    const big = path.join(dataDir, 'big.bin');
    const bytes = Buffer.alloc(8 * 1024 * 1024);
    for (let i = 0; i < bytes.length; i += 4096) bytes[i] = i & 255;
    fs.writeFileSync(big, bytes);
    await store.put('test/big.bin', big);
    const url = new URL(store.signedUrl('test/big.bin', Date.now() + 60_000, 'big.bin', `http://127.0.0.1:${svc.port}`));
    const stalled: http.ClientRequest[] = [];
    const responsesIn: http.IncomingMessage[] = [];
    try {
      for (let i = 0; i < 50; i++) {
        const req = http.get({ host: '127.0.0.1', port: svc.port, path: url.pathname + url.search, agent: false }, (res) => {
          res.pause(); // never reads
          responsesIn.push(res);
        });
        req.on('error', () => undefined);
        stalled.push(req);
      }
      await until(
        () => responsesIn.length === 50,
        5_000,
        () => `50 transfers started (${responsesIn.length})`,
      );
      // Until the socket buffers are full the transfers still move; then they stall.
      await until(
        () => fileTransfers.held === 0,
        10_000,
        () => `stalled transfers give their read buffers back (held ${fileTransfers.held})`,
      );
      await alive();
      // One reader resumes and gets the whole file.
      const resumed = responsesIn[0];
      const parts: Buffer[] = [];
      resumed.on('data', (c: Buffer) => parts.push(c));
      const ended = new Promise((r) => resumed.on('end', r));
      resumed.resume();
      await ended;
      assert.ok(Buffer.concat(parts).equals(bytes), 'the resumed transfer is intact');
    } finally {
      for (const r of stalled) r.destroy();
    }
  });

  test('no route registers on a uWS app except through the route table (the guard cannot be skipped)', () => {
    const offenders: string[] = [];
    const walk = (dir: string): void => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (p.endsWith('.ts') && !p.endsWith(path.join('http', 'routes.ts'))) {
          const text = fs.readFileSync(p, 'utf8');
          if (/\bapp\.(get|post|put|del|patch|head|options|any)\(/.test(text)) offenders.push(path.relative(PROJECT_ROOT, p));
        }
      }
    };
    walk(path.join(PROJECT_ROOT, 'src'));
    assert.deepEqual(offenders, []);
  });
});

// The stores', the files' and the batch pool's: once.
describe('stores and workers at fault', againOn(), () => {
  test('unknown keys are cached only up to their length bound: a 60 KB key is refused and never cached', () => {
    const dataDir = tempDir();
    const db = openTestControlDb(dataDir);
    const cache = new KeyCache(db, loadPlans(plansFile(dataDir)));
    try {
      for (let i = 0; i < 50; i++) assert.equal((cache.resolve(`${i}`.padEnd(60_000, 'x'), Date.now()) as { status: number }).status, 401);
      assert.equal(cache.size, 0);
      for (let i = 0; i < 30_000; i++) cache.resolve(`isk_${i}`, Date.now());
      assert.ok(cache.size <= 20_000, `cached ${cache.size}`);
    } finally {
      cache.close();
      db.close();
    }
  });

  test('stale day counters, old month counters and full token buckets are pruned; current ones stay', async () => {
    const dataDir = tempDir();
    const store = new LmdbAccountingStore(dataDir);
    try {
      const now = Date.UTC(2026, 10, 22, 12);
      store.reserve('d:2026-11-20:1.2.3.4', 5, 0, null);
      store.reserve('d:2026-11-21:1.2.3.4', 5, 0, null);
      store.reserve('d:2026-11-22:1.2.3.4', 5, 0, null);
      store.reserve('m:2024-10:org', 5, 0, null);
      store.reserve('m:2026-11:org', 5, 0, null);
      store.takeTokens('r:a:1.2.3.4', 1, 5, 10, now - 60_000);
      store.takeTokens('r:a:5.6.7.8', 1, 5, 10, now - 500);
      const { day, month } = staleBefore(now);
      assert.equal(store.prune(day, month, 3000, now), 3);
      for (const k of ['d:2026-11-21:1.2.3.4', 'd:2026-11-22:1.2.3.4', 'm:2026-11:org']) assert.equal(store.spent(k), 5, k);
      assert.equal(store.spent('d:2026-11-20:1.2.3.4'), 0);
      // 2000 buckets in more than one pruning transaction.
      for (let i = 0; i < 2000; i++) store.takeTokens(`r:a:10.0.${i >> 8}.${i & 255}`, 1, 5, 10, now - 60_000);
      assert.equal(store.prune(day, month, 3000, now), 2000);
    } finally {
      await store.close();
    }
  });

  test('degraded accounting: counted in memory within the limit, written once the store recovers, refused past the grace', async () => {
    const dataDir = tempDir();
    const real = new LmdbAccountingStore(dataDir);
    const { store, fail } = failingStore(real);
    const meter = openMeter(store, { graceMs: 5_000 });
    try {
      real.reserve('m:x', 90, 0, null); // another process used 90 of 100
      fail(true);
      const t0 = Date.now();
      let granted = 0;
      for (let i = 0; i < 50; i++) granted += meter.spend('m:x', 1, 0, 100, t0);
      assert.equal(granted, 10, 'the limit holds in degraded mode');
      assert.ok(meter.degraded);
      assert.equal(meter.take('r:k:x', { perSecond: 10, burst: 20 }, t0).ok, true, 'tokens from a per-thread bucket');
      // One client from many sources cannot grow what is owed without bound.
      for (let i = 0; i < MAX_OWED_COUNTERS - 1; i++) meter.spend(`d:x:${i}`, 1, 0, 1000, t0);
      assert.throws(() => meter.spend('d:x:one-too-many', 1, 0, 1000, t0), AccountingUnavailable, 'owed counters are bounded');
      assert.throws(() => meter.spend('m:x', 1, 0, null, t0 + 5_000), AccountingUnavailable, 'past the grace period');
      fail(false);
      meter.sweep(t0 + 6_000);
      assert.equal(real.spent('m:x'), 100, 'what was answered meanwhile is written');
      assert.equal(real.spent('d:x:7'), 1);
      assert.equal(meter.degraded, false);
    } finally {
      meter.close();
      await real.close();
    }
  });

  test('degraded accounting over two threads: each sees what the other owes, the limit holds for both, and both debts are written', async () => {
    const dataDir = tempDir();
    const real = new LmdbAccountingStore(dataDir);
    const { store, fail } = failingStore(real);
    // Two threads' meters over one process's table (as front-end threads have it).
    const table = new OwedTable();
    const a = openMeter(store, { graceMs: 60_000, table });
    const b = openMeter(store, { graceMs: 60_000, table: new OwedTable(table.shared) });
    try {
      real.reserve('m:org', 15, 0, null);
      fail(true);
      const t0 = Date.now();
      for (let i = 0; i < 25; i++) assert.equal(a.spend('m:org', 1, 0, null, t0), 1);
      for (let i = 0; i < 25; i++) assert.equal(b.spend('m:org', 1, 0, null, t0), 1);
      assert.deepEqual([a.usage('m:org'), b.usage('m:org')], [65, 65], 'every thread counts what the other answered');
      assert.deepEqual([a.used('m:org'), b.used('m:org')], [65, 65]);
      // An overage limit of 100 holds across both threads: 35 more between them, not 35 each.
      let granted = 0;
      for (let i = 0; i < 40; i++) granted += a.spend('m:org', 1, 0, 100, t0) + b.spend('m:org', 1, 0, 100, t0);
      assert.equal(granted, 35);
      fail(false);
      a.sweep(t0 + 10);
      b.sweep(t0 + 10);
      assert.equal(real.spent('m:org'), 100, "both threads' debts are written");
      assert.deepEqual([a.usage('m:org'), b.usage('m:org'), table.get('m:org')], [100, 100, 0]);
      assert.equal(table.any(), false);
    } finally {
      a.close();
      b.close();
      await real.close();
    }
  });

  test('an accounting store another process is creating at this moment (empty for an instant) is waited for, not called damaged', async () => {
    const made = tempDir();
    const real = new LmdbAccountingStore(made);
    real.reserve('m:x', 5, 0, null);
    await real.close();
    const dataDir = tempDir();
    const file = accountingDir(dataDir);
    fs.writeFileSync(file, '');
    // The other process: the file whole 300 ms after it says it is running (a child, as this
    // thread is blocked while checking). Counted from its word, not its spawn: a child's start
    // on a busy machine can take most of the check's wait by itself.
    const writer = spawn(process.execPath, [
      '-e',
      `process.stdout.write('running'); setTimeout(() => require('fs').copyFileSync(${JSON.stringify(accountingDir(made))}, ${JSON.stringify(file)}), 300)`,
    ]);
    await new Promise((r) => writer.stdout.once('data', r));
    checkAccountingFile(file);
    await new Promise((r) => writer.once('exit', r));
  });

  test('a damaged or emptied accounting store, or a damaged control database, stops the start with one line naming the file', async () => {
    for (const damage of ['garbage', 'empty', 'control'] as const) {
      const dataDir = tempDir();
      importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', FEED) });
      runBuild({ dataDir, exports: false });
      const svc = await startTestService({ dataDir });
      await svc.close();
      const file = damage === 'control' ? controlDbFile(dataDir) : accountingDir(dataDir);
      if (damage === 'garbage') fs.writeFileSync(file, Buffer.alloc(64 * 1024, 0x5a));
      else if (damage === 'empty') fs.truncateSync(file, 0);
      else fs.writeFileSync(file, Buffer.alloc(64 * 1024, 0x5a));
      const r = await run(process.execPath, [CLI, 'serve'], {
        env: { ...process.env, DATA_DIR: dataDir, DEMO: '0', PORT: '0', ADMIN_PORT: '0', PUBLISH_AT: '' },
      }).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code: number; stderr: string }) => e,
      );
      assert.equal(r.code, 1, damage);
      const lines = r.stderr
        .trim()
        .split('\n')
        .filter((l) => !l.startsWith('{'));
      assert.equal(lines.length, 1, `${damage}: ${r.stderr}`);
      assert.ok(lines[0].includes(file), `${damage}: ${lines[0]}`);
      assert.match(lines[0], /move it aside/);
    }
  });

  test('secret-bearing and personal-data files are readable by their owner only', async () => {
    const dataDir = tempDir();
    const svc = await startTestService({ dataDir });
    await svc.close();
    for (const f of [controlDbFile(dataDir), accountingDir(dataDir), storeLinkSecretFile(dataDir)]) {
      assert.equal(fs.statSync(f).mode & 0o777, 0o600, f);
    }
  });

  for (const [fault, fixture] of [
    ['keeps dying', 'exiting-worker.js'],
    ['never answers', 'hanging-worker.js'],
  ] as const) {
    test(`a batch settles within its deadline while every worker ${fault} (the route then answers every address 500)`, async () => {
      const pool = new BatchPool({ workers: 2, maxQueue: 8, worker: path.join(PROJECT_ROOT, 'dist/test/fixtures', fixture), timeoutMs: 2000 });
      try {
        const task = () => ({
          body: new TextEncoder().encode('{"ips":["1.1.1.1"]}').buffer,
          tier: TIER_MAX,
          generation: 0,
          index: null,
          budget: 1,
          refusal: 1,
          out: null,
          coding: 0,
        });
        const started = Date.now();
        const settled = await Promise.allSettled(Array.from({ length: 4 }, () => pool.run(task())));
        assert.ok(
          settled.every((s) => s.status === 'rejected'),
          'a batch on a faulty worker succeeded',
        );
        assert.ok(Date.now() - started < 4000, `took ${Date.now() - started} ms`);
      } finally {
        await pool.close();
      }
    });
  }

  test('builds use refuses a damaged build and leaves the serving one', async () => {
    const dataDir = tempDir();
    importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', FEED) });
    const first = runBuild({ dataDir, exports: false });
    const second = runBuild({ dataDir, exports: false });
    const index = path.join(first.dir, 'index.bin');
    const bytes = fs.readFileSync(index);
    bytes[bytes.length >> 1] ^= 0xff;
    fs.writeFileSync(index, bytes);
    const r = await run(process.execPath, [CLI, 'builds', 'use', first.id], { env: { ...process.env, DATA_DIR: dataDir } }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    assert.equal(r.code, 1);
    assert.match(r.stderr, /damaged/);
    assert.equal(readCurrentBuildId(dataDir), second.id);
  });

  test('a full disk with two front-end threads: what each thread owed is written and seen by every thread', async (t) => {
    const { server } = await openServer(process.env.HTTP_SERVER === 'node' ? 'node' : 'auto', { keepAliveTimeoutMs: 1000 });
    if (server.cannotSharePort !== null) return void t.skip(server.cannotSharePort);
    const mount = tempDir('ipsift-full-');
    try {
      await run('mount', ['-t', 'tmpfs', '-o', 'size=160m', 'tmpfs', mount]);
    } catch (e) {
      t.skip(`cannot mount a small tmpfs here (${(e as Error).message.split('\n')[0]})`);
      return;
    }
    try {
      const dataDir = path.join(mount, 'data');
      fs.mkdirSync(dataDir);
      importFeed({ dataDir, file: writeFile(tempDir(), 'feed.csv', FEED) });
      runBuild({ dataDir, exports: false });
      // A rate of 10/s leases no extra units (meter.ts leaseExtra): a thread's usage then never
      // counts another's unused lease, so every read is exact, not only once leases are swept.
      const plans = plansFile(tempDir(), {
        keyless: { daily_cap: 1000, rate: lavish },
        plans: [{ key: 'max', tier: 'max', quota: 1_000_000, rate: { per_second: 10, burst: 1000 }, hard_limit: null }],
      });
      const db = openTestControlDb(dataDir);
      const org = createOrganisation(db, loadPlans(plans), 'Two threads', 'max');
      const key = createKey(db, { orgId: org.id, name: 'k' }).secret;
      db.close();
      const svc = await startTestService({ dataDir, plansFile: plans, frontendThreads: 2 });
      const auth = { Authorization: `Bearer ${key}` };
      // Sequential requests on fresh connections: the kernel spreads them over both threads.
      const lookups = async (n: number): Promise<void> => {
        for (let i = 0; i < n; i++) assert.equal((await get(svc.port, '/81.7.3.9', auth)).status, 200);
      };
      // Whichever thread answers, usage reaches the answers, and stays there.
      const usageIs = async (n: number, what: string): Promise<void> => {
        let seen = -1;
        await until(
          async () => (seen = (await get(svc.port, '/api/v1/account/me', auth)).json.usage.requests) === n,
          10_000,
          () => `${what}: usage ${n} (last read ${seen})`,
        );
        for (let i = 0; i < 10; i++) assert.equal((await get(svc.port, '/api/v1/account/me', auth)).json.usage.requests, n, what);
      };
      try {
        await lookups(15);
        await usageIs(15, 'before the disk fills');
        const filler = fs.openSync(path.join(mount, 'filler'), 'w');
        const block = Buffer.alloc(1 << 20);
        try {
          for (;;) fs.writeSync(filler, block);
        } catch {
          // ENOSPC: full
        }
        fs.closeSync(filler);
        await lookups(25);
        await usageIs(40, 'while the disk is full, on whichever thread answers');
        fs.rmSync(path.join(mount, 'filler'));
        await usageIs(40, 'once the disk has room again');
        await lookups(50);
        await usageIs(90, 'after more lookups');
      } finally {
        await svc.close();
      }
    } finally {
      await run('umount', [mount]).catch(() => undefined);
    }
  });

  test('a full disk: lookups go on being answered, counted in memory, and a failed build leaves no staging directory', async (t) => {
    const mount = tempDir('ipsift-full-');
    try {
      await run('mount', ['-t', 'tmpfs', '-o', 'size=160m', 'tmpfs', mount]);
    } catch (e) {
      t.skip(`cannot mount a small tmpfs here (${(e as Error).message.split('\n')[0]})`);
      return;
    }
    try {
      const dataDir = path.join(mount, 'data');
      fs.mkdirSync(dataDir);
      importFeed({ dataDir, file: writeFile(tempDir(), 'feed.csv', FEED) });
      runBuild({ dataDir, exports: false });
      let closed = false;
      const svc = await startTestService({
        dataDir,
        trustedProxies: [{ family: 4, start: 0x7f000000n, end: 0x7fffffffn }],
        plansFile: plansFile(tempDir(), {
          keyless: { daily_cap: 1000, rate: lavish },
          plans: [{ key: 'max', tier: 'max', quota: 10, rate: lavish, hard_limit: null }],
        }),
      });
      try {
        const tokens = openTestControlDb(dataDir);
        const ops = { Authorization: `Bearer ${createAdminToken(tokens, 'ops', ['admin.write']).secret}` };
        tokens.close();
        // Fill the disk.
        const filler = fs.openSync(path.join(mount, 'filler'), 'w');
        const block = Buffer.alloc(1 << 20);
        try {
          for (;;) fs.writeSync(filler, block);
        } catch {
          // ENOSPC: full
        }
        try {
          for (;;) fs.writeSync(filler, block.subarray(0, 512));
        } catch {
          // and the last few blocks
        }
        fs.closeSync(filler);
        // Thousands of new keyless sources: counters and buckets the store has no room for.
        let ok = 0;
        const statuses = new Map<number, number>();
        const from = Date.now();
        for (let i = 0; i < 4000; i += 50) {
          const replies = await Promise.all(
            Array.from({ length: 50 }, (_, j) => get(svc.port, '/81.7.3.9', { 'X-Forwarded-For': `10.${(i + j) >> 8}.${(i + j) & 255}.7` })),
          );
          for (const r of replies) {
            statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
            if (r.status === 200) ok++;
          }
        }
        t.diagnostic(`lookups on a full disk: ${JSON.stringify([...statuses])}`);
        assert.equal(ok, 4000);
        assert.throws(() => runBuild({ dataDir, exports: false }));
        // An operator's write and a build asked for: 503 with Retry-After (the server's state,
        // not the request's fault), never a 500 whose cause is lost or a 409 "a build is running".
        const write = await request(svc.adminPort, 'POST', '/admin/v1/organizations', JSON.stringify({ name: 'Full Ltd', plan: 'max' }), ops);
        assert.deepEqual([write.status, write.headers['retry-after']], [503, '1'], write.text);
        const build = await request(svc.adminPort, 'POST', '/admin/v1/builds', undefined, ops);
        assert.deepEqual([build.status, build.headers['retry-after']], [503, '1'], build.text);
        assert.deepEqual(
          fs.readdirSync(buildsDir(dataDir)).filter((d) => d.includes('staging')),
          [],
        );
        // Room again: what was answered meanwhile reaches the store (at the latest when the
        // service stops, which writes what is owed; the periodic write is the test above's).
        fs.rmSync(path.join(mount, 'filler'));
        closed = true;
        await svc.close();
        // Counted under the day each was answered (two, where midnight passed meanwhile).
        const store = new LmdbAccountingStore(dataDir);
        try {
          const spent = (source: string): number => utcDaysSince(from).reduce((n, day) => n + store.spent(`d:${day}:${source}`), 0);
          assert.equal(spent('10.0.0.7'), 1);
          assert.equal(spent('10.15.159.7'), 1);
        } finally {
          await store.close(); // before the unmount
        }
      } finally {
        if (!closed) await svc.close();
      }
    } finally {
      await run('umount', [mount]).catch(() => undefined);
    }
  });
});
