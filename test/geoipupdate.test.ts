// Debian's geoipupdate (4.10) against ipsift, as a team that keeps MaxMind databases current
// would point it at ipsift: behind a TLS front (geoipupdate always speaks https), with the
// organisation's account id and an API key as licence key. It downloads byte-identical files,
// then finds no update; refusals come back as errors it prints.

import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import zlib from 'node:zlib';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { listOrganisations } from '../src/control/accounts.js';
import { latestPublication } from '../src/control/publications.js';
import { grantLicence } from '../src/control/licences.js';
import maxmind from 'maxmind';
import { basicCredentials, tarHeader } from '../src/api/public/geoipupdate.js';
import type { Service } from '../src/service.js';
import { LocalStore } from '../src/objects/local-store.js';
import { fetchBytes, get, openTestControlDb, publishedDataDir, startTestService, tempDir, writeFile } from './helpers.js';

const run = promisify(execFile);
const has = (cmd: string): boolean => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const missing = !has('geoipupdate')
  ? 'geoipupdate is not installed (Debian contrib: apt-get install geoipupdate; .ci/run does)'
  : !has('openssl')
    ? 'openssl is not installed'
    : false;

/** A TLS terminator on loopback in front of `port`, with a fresh self-signed certificate for 127.0.0.1. */
async function tlsFront(port: number, dir: string): Promise<{ port: number; ca: string; close(): void }> {
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    key,
    '-out',
    cert,
  ]);
  const server = tls.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (socket) => {
    const upstream = net.connect(port, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    const end = (): void => {
      socket.destroy();
      upstream.destroy();
    };
    socket.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as net.AddressInfo).port, ca: cert, close: () => server.close() };
}

describe('geoipupdate against ipsift', { skip: missing }, () => {
  let svc: Service;
  let front: Awaited<ReturnType<typeof tlsFront>>;
  let dataDir: string;
  let key: string;
  let accountId: number;
  /** A key of the same organisation with apikeys.manage only. */
  let scopeless: string;
  const dir = tempDir();
  before(async () => {
    const d = await publishedDataDir([{ scopes: ['db.download'] }, { scopes: ['apikeys.manage'] }]);
    dataDir = d.dataDir;
    [key, scopeless] = d.keys;
    const db = openTestControlDb(dataDir);
    accountId = listOrganisations(db)[0].accountId;
    db.close();
    svc = await startTestService({ dataDir, plansFile: d.plans });
    front = await tlsFront(svc.port, dir);
  });
  after(async () => {
    front.close();
    await svc.close();
  });

  /**
   * geoipupdate's Host: 4.x takes host:port (and speaks https), 5.x and later parse it as a URL,
   * where host:port alone is not one (Debian 13's 7.1: "first path segment in URL cannot contain colon").
   */
  const hostSetting = (port: number): string => {
    const v = spawnSync('geoipupdate', ['-V'], { encoding: 'utf8' });
    const version = /\b(\d+)\.\d+\.\d+/.exec(`${v.stdout ?? ''}${v.stderr ?? ''}`)?.[1];
    return version !== undefined && Number(version) >= 5 ? `https://127.0.0.1:${port}` : `127.0.0.1:${port}`;
  };

  /** geoipupdate with a GeoIP.conf of these settings; its exit code and what it printed. */
  async function geoipupdate(settings: { account?: number; key?: string; editions?: string }, into: string): Promise<{ code: number; out: string }> {
    fs.mkdirSync(into, { recursive: true });
    const conf = writeFile(
      into,
      'GeoIP.conf',
      `AccountID ${settings.account ?? accountId}\nLicenseKey ${settings.key ?? key}\nEditionIDs ${settings.editions ?? 'vpn_v1'}\nDatabaseDirectory ${into}\nHost ${hostSetting(front.port)}\nLockFile ${path.join(into, '.lock')}\nPreserveFileTimes 1\n`,
    );
    try {
      const r = await run('geoipupdate', ['-v', '-f', conf], { env: { ...process.env, SSL_CERT_FILE: front.ca } });
      return { code: 0, out: r.stdout + r.stderr };
    } catch (e) {
      const err = e as { code: number; stdout: string; stderr: string };
      return { code: err.code, out: err.stdout + err.stderr };
    }
  }

  const history = async (): Promise<{ outcome: string; http_status: number; dataset_id: string }[]> =>
    (await get(svc.port, '/api/v1/database/downloads', { Authorization: `Bearer ${key}` })).json.downloads;

  test('downloads a byte-identical MMDB, then finds no update; the download is in the history', async () => {
    const into = path.join(dir, 'db');
    const first = await geoipupdate({}, into);
    assert.equal(first.code, 0, first.out);
    const db = openTestControlDb(dataDir);
    const pub = latestPublication(db, 'vpn_v1', 'mmdb', false)!;
    db.close();
    const published = fs.readFileSync(new LocalStore(dataDir).pathOf(pub.key));
    const got = fs.readFileSync(path.join(into, 'vpn_v1.mmdb'));
    assert.deepEqual(crypto.createHash('sha256').update(got).digest('hex'), pub.checksums.sha256);
    assert.ok(got.equals(published));
    // geoipupdate gives the file the publication's time (Last-Modified, with PreserveFileTimes 1;
    // without it the file had its write time, within a second of publishing only by luck).
    assert.ok(Math.abs(fs.statSync(path.join(into, 'vpn_v1.mmdb')).mtimeMs - Date.parse(pub.publishedAt)) < 1000);
    const before = (await history()).length;
    const second = await geoipupdate({}, into);
    assert.equal(second.code, 0, second.out);
    assert.match(second.out, /No new updates available for vpn_v1/i);
    const entries = await history();
    assert.equal(entries.length, before, 'a check that finds no update downloads nothing');
    assert.deepEqual([entries[0].dataset_id, entries[0].outcome, entries[0].http_status], ['vpn_v1', 'ok', 200]);
  });

  test('the two GeoIP2-compatible editions, each of one database type, both come over geoipupdate', async () => {
    const db = openTestControlDb(dataDir);
    const org = listOrganisations(db)[0].id;
    const term = { licenceType: 'evaluation' as const, starts: '2026-01-01T00:00:00Z', expires: '2099-01-01T00:00:00Z' };
    const bases = ['ipsift', 'ipsift_extended', 'vpn', 'proxy', 'hosting', 'geoip2_anonymous', 'geoip2_anonymous_plus', 'vpn_provider', 'proxy_provider'];
    grantLicence(db, { orgId: org, base: 'geoip2_anonymous', ...term }, bases);
    grantLicence(db, { orgId: org, base: 'geoip2_anonymous_plus', ...term }, bases);
    db.close();
    const into = path.join(dir, 'editions');
    const r = await geoipupdate({ editions: 'geoip2_anonymous_v1 geoip2_anonymous_plus_v1' }, into);
    assert.equal(r.code, 0, r.out);
    const types = await Promise.all(
      ['geoip2_anonymous_v1', 'geoip2_anonymous_plus_v1'].map(async (e) => (await maxmind.open(path.join(into, `${e}.mmdb`))).metadata.databaseType),
    );
    assert.deepEqual(types, ['GeoIP2-Anonymous-IP', 'GeoIP-Anonymous-Plus']);
  });

  test('a wrong account, a wrong key, a key without db.download, no licence, an unknown edition: errors it reports, and no file', async () => {
    const cases: [string, Parameters<typeof geoipupdate>[0], RegExp][] = [
      ['account', { account: accountId + 1 }, /401/],
      ['key', { key: 'isk_not_a_key' }, /401/],
      ['scope', {}, /401/],
      ['licence', { editions: 'proxy_v1' }, /403.*NO_LICENSE/s],
      ['edition', { editions: 'nope_v1' }, /404.*NOT_FOUND/s],
    ];
    for (const [name, settings, expected] of cases) {
      const into = path.join(dir, `refused-${name}`);
      const r = await geoipupdate(name === 'scope' ? { key: scopeless } : settings, into);
      assert.notEqual(r.code, 0, `${name}: ${r.out}`);
      assert.match(r.out, expected, name);
      assert.deepEqual(
        fs.readdirSync(into).filter((f) => f.endsWith('.mmdb')),
        [],
        name,
      );
    }
  });
});

/**
 * The 6.x/7.x protocol, followed as geoipupdate 6 does it (client/metadata.go and download.go:
 * one metadata request naming every edition, then a tar.gz per outdated one whose .mmdb entry
 * must have the metadata's MD5). Debian ships no 6.x to run, so this client stands in for it,
 * and GNU tar and Python's tarfile read the archive as independent readers.
 */
describe('the geoipupdate 6.x/7.x protocol', () => {
  let svc: Service;
  let dataDir: string;
  let key: string;
  let auth: Record<string, string>;
  before(async () => {
    const d = await publishedDataDir([{ scopes: ['db.download'] }]);
    dataDir = d.dataDir;
    key = d.keys[0];
    const db = openTestControlDb(dataDir);
    auth = { Authorization: `Basic ${Buffer.from(`${listOrganisations(db)[0].accountId}:${key}`).toString('base64')}` };
    db.close();
    svc = await startTestService({ dataDir, plansFile: d.plans });
  });
  after(() => svc.close());

  test('metadata, then a tar.gz whose .mmdb has that MD5, byte-identical to the published file, resumable; GNU tar and Python read it', async () => {
    const db = openTestControlDb(dataDir);
    const pub = latestPublication(db, 'vpn_v1', 'mmdb', false)!;
    db.close();
    const m = await get(svc.port, '/geoip/updates/metadata?edition_id=vpn_v1', { ...auth, 'User-Agent': 'geoipupdate/6.1.0' });
    assert.equal(m.status, 200);
    assert.deepEqual(m.json, { databases: [{ edition_id: 'vpn_v1', md5: pub.checksums.md5, date: pub.day }] });
    const url = `http://127.0.0.1:${svc.port}/geoip/databases/vpn_v1/download?date=${pub.day.replace(/-/g, '')}&suffix=tar.gz`;
    const got = await fetchBytes(url, auth);
    assert.equal(got.status, 200);
    assert.equal(got.headers['content-type'], 'application/gzip');
    assert.equal(got.headers['last-modified'], new Date(pub.publishedAt).toUTCString());
    const tar = zlib.gunzipSync(got.body);
    assert.equal(tar.length % 512, 0);
    const name = tar.subarray(0, 100).toString('latin1').replace(/\0.*$/s, '');
    assert.equal(name, `vpn_v1_${pub.day.replace(/-/g, '')}/vpn_v1.mmdb`);
    const size = parseInt(tar.subarray(124, 136).toString('latin1'), 8);
    const mmdb = tar.subarray(512, 512 + size);
    const published = fs.readFileSync(new LocalStore(dataDir).pathOf(pub.key));
    assert.ok(mmdb.equals(published));
    assert.equal(crypto.createHash('md5').update(mmdb).digest('hex'), m.json.databases[0].md5);
    // Independent readers of the archive.
    const file = path.join(tempDir(), 'vpn_v1.tar.gz');
    fs.writeFileSync(file, got.body);
    const listed = await run('tar', ['-tvzf', file]);
    assert.match(listed.stdout, new RegExp(`${size} .*vpn_v1_\\d{8}/vpn_v1\\.mmdb`));
    const py = await run('/usr/bin/python3', [
      '-c',
      'import sys, tarfile, hashlib\nt = tarfile.open(sys.argv[1], "r:gz")\nm = t.getmembers()\nprint(len(m), m[0].name, hashlib.md5(t.extractfile(m[0]).read()).hexdigest())',
      file,
    ]);
    assert.equal(py.stdout.trim(), `1 ${name} ${pub.checksums.md5}`);
    // A resumed download joins into the same bytes.
    const cut = Math.floor(got.body.length / 3);
    const first = await fetchBytes(url, { ...auth, Range: `bytes=0-${cut - 1}` });
    const rest = await fetchBytes(url, { ...auth, Range: `bytes=${cut}-` });
    assert.deepEqual([first.status, rest.status], [206, 206]);
    assert.ok(Buffer.concat([first.body, rest.body]).equals(got.body));
    // The download is in the history; the metadata request is not.
    const history = (await get(svc.port, '/api/v1/database/downloads', { Authorization: `Bearer ${key}` })).json.downloads;
    assert.deepEqual(
      history
        .map((h: { dataset_id: string; http_status: number; outcome: string; bytes: number }) => [h.dataset_id, h.http_status, h.outcome, h.bytes])
        .slice(0, 3),
      [
        ['vpn_v1', 206, 'ok', got.body.length - cut],
        ['vpn_v1', 206, 'ok', cut],
        ['vpn_v1', 200, 'ok', got.body.length],
      ],
    );
  });

  test('refusals: credentials, licence, unknown edition, no edition, too many', async () => {
    const wrong = { Authorization: `Basic ${Buffer.from(`999:${key}`).toString('base64')}` };
    const r401 = await get(svc.port, '/geoip/updates/metadata?edition_id=vpn_v1', wrong);
    assert.deepEqual([r401.status, r401.json.rc, r401.headers['www-authenticate']], [401, 'UNAUTHORIZED', 'Basic realm="ipsift", charset="UTF-8"']);
    // Credentials were sent: each refusal says which part is wrong, not that none came.
    assert.match(r401.json.message, /^the licence key \(LicenseKey\) belongs to another account/);
    const basic = (user: string, password: string) => ({ Authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
    assert.match(
      (await get(svc.port, '/geoip/updates/metadata?edition_id=vpn_v1', basic('1', 'isk_not_a_key'))).json.message,
      /^the licence key \(LicenseKey\) is no live API key/,
    );
    assert.match((await get(svc.port, '/geoip/updates/metadata?edition_id=vpn_v1', basic('acme', key))).json.message, /^the account id \(AccountID\) must be/);
    assert.match((await get(svc.port, '/geoip/updates/metadata?edition_id=vpn_v1')).json.message, /^Basic credentials are required/);
    assert.deepEqual((await get(svc.port, '/geoip/updates/metadata?edition_id=vpn_v1&edition_id=geoip2_anonymous_v1', auth)).json.rc, 'NO_LICENSE');
    const unknown = await get(svc.port, '/geoip/databases/nope_v1/download?date=20260101&suffix=tar.gz', auth);
    assert.deepEqual([unknown.status, unknown.json.rc], [404, 'NOT_FOUND']);
    assert.equal((await get(svc.port, '/geoip/updates/metadata', auth)).status, 400);
    assert.equal((await get(svc.port, `/geoip/updates/metadata?${'edition_id=vpn_v1&'.repeat(51)}`, auth)).status, 400);
    assert.equal((await get(svc.port, '/geoip/databases/vpn_v1/download', { Authorization: 'Bearer x' })).status, 401);
  });
});

describe('tar headers', () => {
  test('the checksum and octal fields are as POSIX has them', () => {
    const h = tarHeader('a/b.mmdb', 1234567, 1_700_000_000);
    assert.equal(h.length, 512);
    assert.equal(h.subarray(124, 136).toString('latin1'), '00004553207\0');
    const stored = parseInt(h.subarray(148, 154).toString('latin1'), 8);
    const blank = Buffer.from(h);
    blank.fill(32, 148, 156);
    assert.equal(
      stored,
      blank.reduce((s, b) => s + b, 0),
    );
    assert.equal(h.subarray(257, 263).toString('latin1'), 'ustar\0');
  });
});

describe('Basic credentials', () => {
  test('user and password, a colon in the password kept; anything else is none', () => {
    const enc = (s: string): string => `Basic ${Buffer.from(s).toString('base64')}`;
    assert.deepEqual(basicCredentials(enc('42:isk_a:b')), { user: '42', password: 'isk_a:b' });
    assert.deepEqual(basicCredentials(`basic  ${Buffer.from('7:k').toString('base64')}`), { user: '7', password: 'k' });
    for (const bad of ['', 'Bearer x', 'Basic', 'Basic !!!', enc('no-colon')]) assert.equal(basicCredentials(bad), null, bad);
  });
});
