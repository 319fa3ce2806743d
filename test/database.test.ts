// Licensed database endpoints and the /files route of the local store, against the real
// server, SQLite, the build's exports and the store on disk.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { createKey, createOrganisation } from '../src/control/accounts.js';
import { loadPlans } from '../src/model/plans.js';
import { runBuild } from '../src/build/build.js';
import { grantLicence } from '../src/control/licences.js';
import { publishExports } from '../src/pipeline/publish.js';
import { latestPublication, type Publication } from '../src/control/publications.js';
import { importFeed } from '../src/feeds/import.js';
import { parseRange } from '../src/http/file-transfer.js';
import type { Service } from '../src/service.js';
import { LocalStore } from '../src/objects/local-store.js';
import { fetchBytes, get, openTestControlDb, plansFile, request, startTestService, tempDir, until, utcDaysSince, writeFile } from './helpers.js';
import { againOn } from './again.js';
import { TestClock, clockSkip } from './test-clock.js';

// Enough networks that the range databases offer samples (≥ 10 entries, a sample ≤ a tenth).
const FEED = `network,category,provider,last_seen
81.7.3.0/24,vpn,ExampleVPN,2026-11-01
81.7.4.0/24,resproxy,ResiNet,2026-11-01
2a01:4f8:c012::/48,vpn,ExampleVPN,2026-10-01
${Array.from({ length: 40 }, (_, i) => `82.${2 * i}.0.0/16,vpn,ExampleVPN,2026-11-01\n83.${2 * i}.128.0/24,resproxy,ResiNet,2026-11-01\n84.${2 * i}.64.0/24,hosting,Hoster,2026-11-01`).join('\n')}
`;
/** The latest vpn_v1 publication once there is one (30 s at most), or null. */
async function waitForPublication(dir: string, timeoutMs = 30_000): Promise<Publication | null> {
  const db = openTestControlDb(dir);
  try {
    let published: Publication | null = null;
    await until(() => (published = latestPublication(db, 'vpn_v1', 'mmdb', false)) !== null, timeoutMs, 'a vpn_v1 publication').catch(() => undefined);
    return published;
  } finally {
    db.close();
  }
}

const BASES = ['ipsift', 'ipsift_extended', 'vpn', 'proxy', 'hosting', 'geoip2_anonymous', 'geoip2_anonymous_plus', 'vpn_provider', 'proxy_provider'];

describe('database catalogue, downloads and files', () => {
  let svc: Service;
  let dataDir: string;
  const keys: Record<string, string> = {};
  /** The server's clock: a link lapses when the test moves it past the link's end. */
  const clock = new TestClock();
  const day = 86_400_000;
  let builtFrom = 0;

  before(async () => {
    dataDir = tempDir();
    builtFrom = Date.now();
    importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', FEED) });
    const build = runBuild({ dataDir });
    const file = plansFile(dataDir);
    const plans = loadPlans(file);
    const db = openTestControlDb(dataDir);
    const org = (name: string, scopes: string[] = ['db.download']): string => {
      const o = createOrganisation(db, plans, name, 'max');
      keys[name] = createKey(db, { orgId: o.id, name, scopes }).secret;
      return o.id;
    };
    const licensed = org('licensed');
    const expired = org('expired');
    org('unlicensed');
    const upcoming = org('upcoming');
    org('noscope', []);
    const fenced = createOrganisation(db, plans, 'fenced', 'max');
    keys.fenced = createKey(db, { orgId: fenced.id, name: 'fenced', scopes: ['db.download'], allowedCidrs: ['10.0.0.0/8'] }).secret;
    grantLicence(
      db,
      {
        orgId: licensed,
        base: 'vpn',
        licenceType: 'subscription',
        starts: new Date(Date.now() - day).toISOString(),
        expires: new Date(Date.now() + day).toISOString(),
      },
      BASES,
    );
    grantLicence(
      db,
      {
        orgId: expired,
        base: 'vpn',
        licenceType: 'evaluation',
        starts: new Date(Date.now() - 9 * day).toISOString(),
        expires: new Date(Date.now() - day).toISOString(),
      },
      BASES,
    );
    grantLicence(
      db,
      {
        orgId: upcoming,
        base: 'vpn',
        licenceType: 'subscription',
        // Fixed days, far ahead: the expected message needs no clock.
        starts: '2099-01-01T00:00:00.000Z',
        expires: '2100-01-01T00:00:00.000Z',
      },
      BASES,
    );
    await publishExports(db, new LocalStore(dataDir), dataDir, build.id);
    db.close();
    svc = await startTestService({ dataDir, plansFile: file }, undefined, { clock });
  });
  after(() => svc.close());

  const as = (name: string): Record<string, string> => ({ Authorization: `Bearer ${keys[name]}` });
  const dl = (name: string, query: string) => get(svc.port, `/api/v1/database/download?${query}`, as(name));

  test('list shows every catalogue database with the organisation’s licence and standing', async () => {
    const r = await get(svc.port, '/api/v1/database/list', as('licensed'));
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.json.databases.map((d: { base: string }) => d.base),
      BASES,
    );
    const vpn = r.json.databases.find((d: { base: string }) => d.base === 'vpn');
    assert.deepEqual([vpn.license_type, vpn.in_term, vpn.standing], ['subscription', true, 'licensed']);
    assert.ok(vpn.renews_at && vpn.notice_due_at && vpn.starts && vpn.expires);
    assert.equal(vpn.versions[0].id, 'vpn_v1');
    assert.deepEqual(
      vpn.versions[0].formats.map((f: { format: string }) => f.format),
      ['csvgz', 'mmdb'],
    );
    assert.ok(vpn.versions[0].formats.every((f: { bytes: number }) => f.bytes > 0));
    assert.deepEqual(vpn.versions[0].sample_formats, ['csvgz', 'mmdb']);
    const provider = r.json.databases.find((d: { base: string }) => d.base === 'vpn_provider');
    assert.deepEqual(
      provider.versions[0].formats.map((f: { format: string }) => f.format),
      ['csvgz'],
    );
    assert.equal(r.json.databases.find((d: { base: string }) => d.base === 'proxy').standing, 'unlicensed');
    const expired = await get(svc.port, '/api/v1/database/list', as('expired'));
    assert.equal(expired.json.databases.find((d: { base: string }) => d.base === 'vpn').standing, 'expired');
  });

  test('each refusal a client can fix says what would fix it', async () => {
    const cases: [string, string, number, string, string | RegExp][] = [
      ['licensed', 'format=mmdb', 400, 'BAD_REQUEST', 'id is required: a database id such as vpn_v1 (GET /api/v1/database/list names them)'],
      ['licensed', 'id=vpn_v1', 400, 'BAD_REQUEST', 'format is required: vpn_v1 is built as csvgz, mmdb'],
      ['licensed', 'id=vpn_v1&format=csv', 400, 'FORMAT_NOT_BUILT', 'vpn_v1 is not built as "csv": ask for csvgz or mmdb'],
      ['licensed', 'id=vpn_v1&format=csvgz&sample=1', 400, 'BAD_REQUEST', 'sample must be true or false, not "1"'],
      ['licensed', 'id=vpn_v9&format=csvgz', 404, 'NOT_FOUND', 'no database "vpn_v9": GET /api/v1/database/list names the databases of this service'],
      ['upcoming', 'id=vpn_v1&format=csvgz', 403, 'NO_LICENSE', "this organisation's licence for vpn runs from 2099-01-01 to 2100-01-01: it has not begun yet"],
    ];
    for (const [who, query, status, rc, message] of cases) {
      const r = await dl(who, query);
      assert.deepEqual([r.status, r.json.rc], [status, rc], query);
      if (typeof message === 'string') assert.equal(r.json.message, message, query);
    }
    const checksum = await get(svc.port, '/api/v1/database/checksum?id=vpn_v1&format=csv', as('licensed'));
    assert.equal(checksum.json.message, 'vpn_v1 is not built as "csv": ask for csvgz or mmdb');
  });

  test('download answers each status and rc of the contract', async () => {
    const ok = await dl('licensed', 'id=vpn_v1&format=mmdb');
    assert.equal(ok.status, 302);
    assert.match(String(ok.headers.location), /\/files\/vpn_v1\/.+\/vpn_v1\.mmdb\?/);
    assert.equal(ok.text, '');
    const notBuilt = await dl('licensed', 'id=vpn_provider_v1&format=mmdb');
    assert.deepEqual([notBuilt.status, notBuilt.json], [400, { rc: 'FORMAT_NOT_BUILT', message: 'vpn_provider_v1 is not built as "mmdb": ask for csvgz' }]);
    assert.deepEqual((await dl('licensed', 'id=nope_v1&format=mmdb')).json.rc, 'NOT_FOUND');
    assert.equal((await dl('licensed', 'id=nope_v1&format=mmdb')).status, 404);
    const unlicensed = await dl('unlicensed', 'id=vpn_v1&format=csvgz');
    assert.deepEqual(
      [unlicensed.status, unlicensed.json],
      [403, { rc: 'NO_LICENSE', message: 'this organisation holds no licence for vpn: ask the operator for one' }],
    );
    assert.equal((await dl('expired', 'id=vpn_v1&format=csvgz')).json.rc, 'LICENSE_EXPIRED');
    assert.match(
      (await dl('expired', 'id=vpn_v1&format=csvgz')).json.message,
      /^this organisation's licence for vpn ran from \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d and has ended/,
    );
    assert.equal((await dl('unlicensed', 'id=vpn_v1&format=csvgz&sample=true')).status, 302); // samples need no licence
    assert.deepEqual([(await dl('noscope', 'id=vpn_v1&format=csvgz')).status, (await dl('noscope', 'id=vpn_v1&format=csvgz')).json.rc], [401, 'UNAUTHORIZED']);
    assert.deepEqual((await get(svc.port, '/api/v1/database/download?id=vpn_v1&format=csvgz')).json.rc, 'UNAUTHORIZED');
    assert.deepEqual((await dl('licensed', 'id=vpn_v1')).json, { rc: 'BAD_REQUEST', message: 'format is required: vpn_v1 is built as csvgz, mmdb' });
    // A key used from outside its allowed ranges: the database group's own 403 body.
    for (const p of ['/api/v1/database/list', '/api/v1/database/download?id=vpn_v1&format=mmdb', '/api/v1/database/downloads']) {
      const r = await get(svc.port, p, as('fenced'));
      assert.deepEqual([r.status, r.json.rc], [403, 'FORBIDDEN'], p);
    }
  });

  test('the history lists every attempt, refusals included, newest first, only the caller’s own', async () => {
    await dl('unlicensed', 'id=vpn_v1&format=mmdb');
    await dl('unlicensed', 'id=nope_v1&format=mmdb');
    const h = await get(svc.port, '/api/v1/database/downloads?limit=2', as('unlicensed'));
    assert.equal(h.status, 200);
    assert.equal(h.json.downloads.length, 2);
    assert.deepEqual(
      h.json.downloads.map((d: { outcome: string }) => d.outcome),
      ['not_found', 'no_license'],
    );
    const d = h.json.downloads[1];
    assert.deepEqual([d.dataset_id, d.format, d.sample, d.http_status, d.bytes, d.client_ip], ['vpn_v1', 'mmdb', false, 403, 0, '127.0.0.1']);
    assert.match(d.created, /^\d{4}-\d{2}-\d{2}T/);
    const mine = await get(svc.port, '/api/v1/database/downloads', as('licensed'));
    assert.ok(
      mine.json.downloads.every((x: { apikey_id: string }) => x.apikey_id !== d.apikey_id),
      'another organisation’s history leaked',
    );
    assert.ok(mine.json.downloads.some((x: { outcome: string }) => x.outcome === 'ok'));
    assert.equal((await get(svc.port, '/api/v1/database/downloads?limit=0', as('licensed'))).status, 400);
    assert.ok((await get(svc.port, '/api/v1/database/downloads?limit=500', as('licensed'))).json.downloads.length <= 200);
  });

  test('a download resumed with Range reassembles byte-identically and matches the published sha256', async () => {
    const location = String((await dl('licensed', 'id=vpn_v1&format=mmdb')).headers.location);
    assert.ok(location.startsWith('/files/'), `a relative reference without PUBLIC_URL: ${location}`);
    const url = new URL(location, 'http://unused');
    const p = url.pathname + url.search;
    const head = await request(svc.port, 'HEAD', p);
    assert.equal(head.status, 200);
    // A refused HEAD says what its GET says, length included: a tampered link, a range past the end.
    for (const [what, target, headers] of [
      ['tampered', p.replace(/sig=[^&]+/, 'sig=AAAA'), {}],
      ['past the end', p, { Range: 'bytes=99999999-' }],
    ] as const) {
      const [g, h] = [await request(svc.port, 'GET', target, undefined, headers), await request(svc.port, 'HEAD', target, undefined, headers)];
      assert.ok(g.status >= 400, what);
      assert.deepEqual([h.status, h.headers['content-length'], h.text], [g.status, String(Buffer.byteLength(g.text)), ''], what);
    }
    const size = Number(head.headers['content-length']);
    assert.ok(size > 1000);
    assert.match(String(head.headers['content-disposition']), /filename="vpn_v1\.mmdb"/);
    const cut = Math.floor(size / 3);
    const first = await fetchBytes(`http://127.0.0.1:${svc.port}${p}`, { Range: `bytes=0-${cut - 1}` });
    assert.equal(first.status, 206);
    assert.equal(first.headers['content-range'], `bytes 0-${cut - 1}/${size}`);
    const rest = await fetchBytes(`http://127.0.0.1:${svc.port}${p}`, { Range: `bytes=${cut}-` });
    assert.equal(rest.status, 206);
    const full = await fetchBytes(`http://127.0.0.1:${svc.port}${p}`);
    assert.equal(full.body.length, size);
    assert.deepEqual(Buffer.concat([first.body, rest.body]), full.body);
    const sums = await get(svc.port, '/api/v1/database/checksum?id=vpn_v1&format=mmdb', as('licensed'));
    assert.equal(sums.json.checksums.sha256, crypto.createHash('sha256').update(full.body).digest('hex'));
    const etag = String(head.headers.etag);
    assert.equal((await get(svc.port, p, { 'If-None-Match': etag })).status, 304);
    const past = await get(svc.port, p, { Range: `bytes=${size}-` });
    assert.deepEqual([past.status, past.json.rc, past.headers['content-range']], [416, 'BAD_REQUEST', `bytes */${size}`]);
    assert.equal(past.json.message, `the Range asks for bytes past the end of the file, which holds ${size}: ask from 0 to ${size - 1}`);
  });

  test('an MMDB download comes gzip-coded to a client that asks, resumable in its own bytes; a CSV.gz never twice', async () => {
    const location = String((await dl('licensed', 'id=vpn_v1&format=mmdb')).headers.location);
    const url = `http://127.0.0.1:${svc.port}${location}`;
    const plain = await fetchBytes(url);
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.equal(plain.headers.vary, 'Accept-Encoding');
    const gz = { 'Accept-Encoding': 'gzip, br' };
    const packed = await fetchBytes(url, gz);
    assert.equal(packed.status, 200);
    assert.equal(packed.headers['content-encoding'], 'gzip');
    assert.match(String(packed.headers['content-disposition']), /filename="vpn_v1\.mmdb"/);
    assert.ok(packed.body.length < plain.body.length, `${packed.body.length} of ${plain.body.length}`);
    assert.deepEqual(zlib.gunzipSync(packed.body), plain.body);
    assert.notEqual(packed.headers.etag, plain.headers.etag);
    // Range counts the gzip bytes: the two halves join into the same gzip stream.
    const cut = Math.floor(packed.body.length / 2);
    const first = await fetchBytes(url, { ...gz, Range: `bytes=0-${cut - 1}` });
    const rest = await fetchBytes(url, { ...gz, Range: `bytes=${cut}-` });
    assert.deepEqual([first.status, rest.status, rest.headers['content-range']], [206, 206, `bytes ${cut}-${packed.body.length - 1}/${packed.body.length}`]);
    assert.deepEqual(Buffer.concat([first.body, rest.body]), packed.body);
    const head = await request(svc.port, 'HEAD', location, undefined, gz);
    assert.deepEqual([head.headers['content-encoding'], Number(head.headers['content-length'])], ['gzip', packed.body.length]);
    assert.equal((await fetchBytes(url, { ...gz, 'If-None-Match': String(packed.headers.etag) })).status, 304);
    const csv = String((await dl('licensed', 'id=vpn_v1&format=csvgz')).headers.location);
    const csvGot = await fetchBytes(`http://127.0.0.1:${svc.port}${csv}`, gz);
    assert.equal(csvGot.headers['content-encoding'], undefined);
    assert.ok(zlib.gunzipSync(csvGot.body).toString('utf8').startsWith('network,'));
  });

  test('tampered, expired and unknown links are refused alike; no path escapes the store', async () => {
    const url = new URL(String((await dl('licensed', 'id=vpn_v1&format=csvgz')).headers.location), `http://127.0.0.1:${svc.port}`);
    const good = url.pathname + url.search;
    assert.equal((await get(svc.port, good)).status, 200);
    const tampered = good.replace(/sig=([^&])/, (_, c: string) => `sig=${c === 'A' ? 'B' : 'A'}`);
    const otherFile = good.replace('vpn_v1.csv.gz', 'vpn_v1.mmdb');
    const expired = good.replace(/expires=\d+/, `expires=${Math.floor(Date.now() / 1000) - 10}`);
    const outside = `/files/../control.sqlite${url.search}`;
    for (const p of [tampered, otherFile, expired, outside, '/files/vpn_v1/x?expires=9999999999&name=x&sig=x']) {
      const r = await get(svc.port, p);
      if (p === outside && svc.httpServer === 'bun') {
        // Bun.serve resolves dot segments before routing: the path is /control.sqlite, not a file route.
        assert.deepEqual([r.status, r.json], [400, { error: 'not a valid IP address' }]);
        continue;
      }
      assert.equal(r.status, 403, p);
      assert.deepEqual(r.json.rc, 'FORBIDDEN');
    }
  });

  test('a transfer that started before its link lapsed runs to the end; a new start is refused', { skip: clockSkip() }, async () => {
    // A file big enough to be held up by a client that does not read.
    const big = path.join(dataDir, 'big.bin');
    fs.writeFileSync(big, crypto.randomBytes(24 << 20));
    const store = new LocalStore(dataDir);
    await store.put('test/big.bin', big);
    const url = new URL(await store.signedUrl('test/big.bin', clock.now() + 60_000, 'big.bin', `http://127.0.0.1:${svc.port}`));
    const p = url.pathname + url.search;
    const body = await new Promise<Buffer>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port: svc.port, path: p, agent: false }, (res) => {
          assert.equal(res.statusCode, 200);
          const parts: Buffer[] = [];
          res.pause(); // backpressure: the server must wait, not buffer the file
          // The link lapses while the transfer waits on its reader: another start is refused,
          // then the one under way is read to its end.
          clock.advance(61_000);
          get(svc.port, p).then((again) => {
            assert.equal(again.status, 403, 'the lapsed link started another transfer');
            res.on('data', (c: Buffer) => parts.push(c));
            res.on('end', () => resolve(Buffer.concat(parts)));
            res.resume();
          }, reject);
        })
        .on('error', reject);
    });
    assert.equal(body.length, 24 << 20);
    assert.deepEqual(crypto.createHash('sha256').update(body).digest(), crypto.createHash('sha256').update(fs.readFileSync(big)).digest());
  });

  test('metadata and checksum documents carry an ETag and answer If-None-Match with 304', async () => {
    const m = await get(svc.port, '/api/v1/database/metadata?id=vpn_v1', as('licensed'));
    assert.equal(m.status, 200);
    assert.deepEqual(
      Object.keys(m.json).sort(),
      ['entries', 'id', 'sample', 'sample_entries', 'sample_size', 'schema', 'size', 'update_freq', 'updated'].sort(),
    );
    assert.ok(utcDaysSince(builtFrom).includes(m.json.updated), `updated ${m.json.updated}: the day of the build`);
    assert.ok(m.json.size.mmdb > 0 && m.json.sample_size.csvgz > 0 && m.json.entries >= 2);
    assert.deepEqual(m.json.schema.csvgz[0], { name: 'network', type: 'string', description: 'CIDR network (IPv4 or IPv6)' });
    assert.equal(m.headers['cache-control'], 'private, no-cache', 'a private cache may keep it and revalidate with the ETag');
    assert.equal((await get(svc.port, '/api/v1/database/metadata?id=vpn_v1', { ...as('licensed'), 'If-None-Match': String(m.headers.etag) })).status, 304);
    const refused = await get(svc.port, '/api/v1/database/metadata?id=vpn_v1', as('unlicensed'));
    assert.equal(refused.json.rc, 'NO_LICENSE');
    assert.equal(refused.headers['cache-control'], 'private, no-store');
    const c = await get(svc.port, '/api/v1/database/checksum?id=vpn_v1&format=csvgz', as('licensed'));
    assert.deepEqual(Object.keys(c.json.checksums), ['md5', 'sha1', 'sha256', 'sha512']);
    assert.equal(
      (await get(svc.port, '/api/v1/database/checksum?id=vpn_v1&format=csvgz', { ...as('licensed'), 'If-None-Match': String(c.headers.etag) })).status,
      304,
    );
  });

  test('the catalogue and metadata come compressed when asked, with an ETag of their own that revalidates', async () => {
    const plainList = await fetchBytes(`http://127.0.0.1:${svc.port}/api/v1/database/list`, as('licensed'));
    assert.ok(plainList.body.length >= 1024, `${plainList.body.length} bytes`);
    for (const coding of ['gzip', 'br']) {
      const list = await fetchBytes(`http://127.0.0.1:${svc.port}/api/v1/database/list`, { ...as('licensed'), 'Accept-Encoding': coding });
      assert.equal(list.headers['content-encoding'], coding);
      const decoded = coding === 'gzip' ? zlib.gunzipSync(list.body) : zlib.brotliDecompressSync(list.body);
      assert.deepEqual(JSON.parse(decoded.toString('utf8')), JSON.parse(plainList.body.toString('utf8')));
    }
    const url = `http://127.0.0.1:${svc.port}/api/v1/database/metadata?id=vpn_v1`;
    const plain = await fetchBytes(url, as('licensed'));
    const packed = await fetchBytes(url, { ...as('licensed'), 'Accept-Encoding': 'gzip' });
    const tag = String(plain.headers.etag);
    assert.equal(packed.headers.etag, `${tag.slice(0, -1)}-gzip"`, 'a representation of its own, a tag of its own');
    assert.deepEqual(
      JSON.parse((packed.headers['content-encoding'] === 'gzip' ? zlib.gunzipSync(packed.body) : packed.body).toString('utf8')),
      JSON.parse(plain.body.toString('utf8')),
    );
    const again = await fetchBytes(url, { ...as('licensed'), 'Accept-Encoding': 'gzip', 'If-None-Match': String(packed.headers.etag) });
    assert.deepEqual([again.status, again.headers.etag, again.body.length], [304, packed.headers.etag, 0]);
  });

  test('503 NOT_PUBLISHED while only an earlier day’s build is published, 302 once today’s is', async () => {
    const dir = tempDir();
    importFeed({ dataDir: dir, file: writeFile(dir, 'feed.csv', FEED) });
    const old = runBuild({ dataDir: dir, now: new Date(Date.now() - day) });
    const file = plansFile(dir);
    const db = openTestControlDb(dir);
    const o = createOrganisation(db, loadPlans(file), 'daily', 'max');
    const secret = createKey(db, { orgId: o.id, name: 'k', scopes: ['db.download'] }).secret;
    grantLicence(
      db,
      {
        orgId: o.id,
        base: 'vpn',
        licenceType: 'subscription',
        starts: new Date(Date.now() - 9 * day).toISOString(),
        expires: new Date(Date.now() + 9 * day).toISOString(),
      },
      BASES,
    );
    await publishExports(db, new LocalStore(dir), dir, old.id);
    // Yesterday's build serves and today's run is later today (never past midnight): nothing was missed, nothing catches up at start.
    const later = new Date(Date.now() + 7_200_000);
    const publishAt = later.getUTCDate() === new Date().getUTCDate() ? later.toISOString().slice(11, 19) : '23:59:59';
    const s = await startTestService({ dataDir: dir, plansFile: file, publishAt });
    try {
      const ask = () => get(s.port, '/api/v1/database/download?id=vpn_v1&format=mmdb', { Authorization: `Bearer ${secret}` });
      const refused = await ask();
      assert.deepEqual([refused.status, refused.json.rc], [503, 'NOT_PUBLISHED']);
      const retry = Number(refused.headers['retry-after']);
      assert.equal(refused.json.message, `today's copy of vpn_v1 is not published yet: retry in ${retry} s`);
      assert.ok(retry >= 1 && retry <= 7201, `Retry-After ${refused.headers['retry-after']}: until the next daily run`);
      const today = runBuild({ dataDir: dir });
      await publishExports(db, new LocalStore(dir), dir, today.id);
      assert.equal((await ask()).status, 302);
    } finally {
      db.close();
      await s.close();
    }
  });

  // The scheduler's, with what it writes in the control database: again on PostgreSQL only.
  test('the scheduler builds and publishes at PUBLISH_AT (UTC) without a restart', againOn('stores'), async () => {
    const dir = tempDir();
    importFeed({ dataDir: dir, file: writeFile(dir, 'feed.csv', FEED) });
    const clock = new TestClock();
    // The run is a minute away; the serving build is of the day the run before it fell due, so
    // nothing was missed and nothing is caught up at the start (a minute before midnight too).
    const from = clock.now();
    const at = new Date(from + 60_000).toISOString().slice(11, 19);
    runBuild({ dataDir: dir, now: new Date(from + 60_000 - day) });
    const s = await startTestService({ dataDir: dir, plansFile: plansFile(dir), publishAt: at }, undefined, { clock });
    try {
      assert.ok(
        clock.timers().some((ms) => ms > 50_000 && ms <= 60_000),
        `the run set for ${at}: ${clock.timers().join(', ')} ms`,
      );
      assert.equal(await waitForPublication(dir, 0), null, 'published before PUBLISH_AT');
      clock.advance(60_000);
      const published = await waitForPublication(dir);
      assert.ok(published, 'nothing was published');
      assert.ok(utcDaysSince(from).includes(published.day), `published for ${published.day}`);
      await until(() => s.holder.current?.buildId === published.buildId, 5_000, 'the server switched to the new build');
    } finally {
      await s.close();
    }
  });

  test('a server started after PUBLISH_AT with no build of today catches up at once', againOn('stores'), async () => {
    const dir = tempDir();
    importFeed({ dataDir: dir, file: writeFile(dir, 'feed.csv', FEED) });
    runBuild({ dataDir: dir, now: new Date(Date.now() - 2 * day) });
    const from = Date.now();
    const at = new Date(from - 60_000).toISOString().slice(11, 19); // a minute ago (yesterday's, just after midnight)
    const s = await startTestService({ dataDir: dir, plansFile: plansFile(dir), publishAt: at });
    try {
      const published = await waitForPublication(dir);
      assert.ok(published && utcDaysSince(from).includes(published.day), `no catch-up build (${published?.day})`);
    } finally {
      await s.close();
    }
  });

  test('Range parsing', () => {
    assert.deepEqual(parseRange('bytes=0-9', 100), { start: 0, end: 9 });
    assert.deepEqual(parseRange('bytes=90-', 100), { start: 90, end: 99 });
    assert.deepEqual(parseRange('bytes=-10', 100), { start: 90, end: 99 });
    assert.deepEqual(parseRange('bytes=50-500', 100), { start: 50, end: 99 });
    assert.equal(parseRange('bytes=100-', 100), 'unsatisfiable');
    assert.equal(parseRange('bytes=5-1', 100), null);
    assert.equal(parseRange('items=0-1', 100), null);
  });
});
