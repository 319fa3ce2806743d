// Secrets given to ipsift, searched for on every surface it has. A server process is started
// with a secret in every setting and URL that can hold one (the control database's DSN, in its
// user info and as a parameter; the Redis URL; a mirror's and a source's user info and query;
// the S3 endpoint; credentials read from the environment; one setting from CONFIG_FILE), made
// to fetch, fail, build and publish, and then every answer of both ports, every log line,
// every CLI output and every file of the data directory is searched. Start-up refusals are
// searched too.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, describe, test } from 'node:test';
import { createAdminToken } from '../src/control/admin-tokens.js';
import { openControlDb } from '../src/control/control-db.js';
import { cliInThread } from './cli-in-thread.js';
import { PROJECT_ROOT, get, killChild, request, serveProcess, tempDir, until, writeFile } from './helpers.js';
import { freshDatabase } from './postgres-server.js';
import { REDIS_SERVER, startRedis, type TestRedis } from './redis-server.js';

/** Every secret carries this mark, so one search finds any of them. */
const MARK = 'SEKRIT';

/** Every file under dir, gzip members opened. */
function filesUnder(dir: string): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    let bytes = fs.readFileSync(file);
    if (file.endsWith('.gz')) bytes = zlib.gunzipSync(bytes);
    out.push({ file, text: bytes.toString('latin1') });
  }
  return out;
}

describe('secrets in settings and URLs', { skip: REDIS_SERVER === null && 'redis-server is not installed' }, () => {
  let redis: TestRedis | null = null;
  after(() => redis?.kill());

  test('a secret in every setting and URL appears in no answer, page, log line, CLI output, file or start-up error', async () => {
    redis = await startRedis(undefined, { password: `redis-${MARK}-1` });
    // The mirror every source is fetched through: it asks for its own credentials, and serves
    // one list and a 404 (a failure whose message names the URL).
    const asked: string[] = [];
    const mirror = http.createServer((req, res) => {
      asked.push(req.url ?? '');
      if (req.headers.authorization !== `Basic ${Buffer.from(`mirror:mirror-${MARK}-2`).toString('base64')}`) return void res.writeHead(401).end();
      if (req.url?.startsWith('/m/feeds.example/list.txt?api_key='))
        return void res.writeHead(200, { 'content-type': 'text/plain' }).end('198.51.7.50\n81.7.3.0/24\n');
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => mirror.listen(0, '127.0.0.1', r));
    const mirrorPort = (mirror.address() as { port: number }).port;
    const dataDir = tempDir();
    const sources = writeFile(
      dataDir,
      'sources.json',
      JSON.stringify([
        { name: 'with-secrets', url: `https://feeds:src-${MARK}-3@feeds.example/list.txt?api_key=src-${MARK}-4&x=1`, format: 'list', category: 'vpn' },
        { name: 'gone', url: `https://feeds.example/gone?token=src-${MARK}-5`, format: 'list', category: 'vpn' },
      ]),
    );
    const configFile = writeFile(dataDir, 'ipsift.json', JSON.stringify({ SOURCES_MIRROR: `http://mirror:mirror-${MARK}-2@127.0.0.1:${mirrorPort}/m` }));
    const dsn = new URL(freshDatabase());
    dsn.password = `pg-${MARK}-6`; // trust authentication: any password is taken
    dsn.searchParams.set('password', `pg-${MARK}-7`);
    const env = {
      DATA_DIR: dataDir,
      CONFIG_FILE: configFile,
      CONTROL_DB: dsn.toString(),
      ACCOUNTING: 'redis',
      REDIS_URL: redis.url,
      REDIS_PREFIX: `secrets${process.pid}:`,
      SOURCES_FILE: sources,
      SOURCES: '',
      S3_ENDPOINT: `http://s3user:s3-${MARK}-8@127.0.0.1:9/`,
      AWS_ACCESS_KEY_ID: `AKIA${MARK}9`,
      AWS_SECRET_ACCESS_KEY: `aws-${MARK}-10`,
      GITHUB_TOKEN: `ghp_${MARK}11`,
    };
    const server = await serveProcess(env);
    try {
      const db = openControlDb(dataDir, { url: dsn.toString(), timeoutMs: 10_000 });
      const token = createAdminToken(db, 'ops', ['admin.write']).secret;
      db.close();
      const auth = { Authorization: `Bearer ${token}` };
      const admin = (p: string) => get(server.adminPort, p, auth);
      // The sources fetched (one fails), built and published; one disabled and enabled, so the
      // actions, the audit log and a second build with its comparison are there too.
      await until(async () => (await admin('/admin/v1/builds')).json.builds.length > 0, 60_000, 'the first build');
      assert.ok(asked.some((u) => u.startsWith('/m/feeds.example/list.txt')));
      assert.equal((await request(server.adminPort, 'POST', '/admin/v1/sources/with-secrets/disable', undefined, auth)).status, 200);
      await until(async () => (await admin('/admin/v1/builds')).json.builds.length > 1, 60_000, 'a build without it');
      assert.equal((await request(server.adminPort, 'POST', '/admin/v1/sources/with-secrets/enable', undefined, auth)).status, 200);
      await until(async () => (await admin('/admin/v1/builds')).json.builds.length > 2, 60_000, 'a build with it again');
      const builds = (await admin('/admin/v1/builds')).json.builds as { id: string }[];

      const surfaces: { where: string; text: string }[] = [];
      const keep = (where: string, text: string): void => void surfaces.push({ where, text });
      // Both ports: every operator page the console reads, the probes and metrics, the documents.
      const adminPaths = [
        '/healthz',
        '/readyz',
        '/metrics',
        '/openapi.json',
        '/console/',
        '/admin/v1/settings',
        '/admin/v1/sources',
        '/admin/v1/overview',
        '/admin/v1/log',
        '/admin/v1/audit',
        '/admin/v1/feeds',
        '/admin/v1/builds',
        '/admin/v1/serving-log',
        '/admin/v1/activity',
        '/admin/v1/organizations',
        '/admin/v1/tokens',
        '/explain/198.51.7.50',
        '/admin/v1/answers/198.51.7.50',
        ...builds.flatMap((b) => [`/admin/v1/builds/${b.id}`, `/admin/v1/builds/${b.id}/changes`]),
        '/admin/v1/nope',
      ];
      for (const p of adminPaths) keep(`admin ${p}`, (await admin(p)).text);
      for (const p of ['/198.51.7.50', '/myip', '/api/v1/databases', '/openapi.json', '/nope', '/81.7.3.20?x=1'])
        keep(`public ${p}`, (await get(server.port, p)).text);
      // The CLI on the same settings.
      const cliEnv = { ...process.env, ...env };
      for (const args of [
        ['sources', 'status'],
        ['sources', 'status', '--json'],
        ['explain', '198.51.7.50'],
        ['explain', '198.51.7.50', '--json'],
        ['builds', '--json'],
        ['builds', 'compare', builds[0].id],
        ['audit', '--json'],
        ['admin', 'token', 'list', '--json'],
      ]) {
        const run = await cliInThread(args, cliEnv);
        keep(`ipsift ${args.join(' ')} (exit ${run.code})`, run.stdout + run.stderr);
      }
      // Every file the server and CLI wrote.
      for (const f of filesUnder(path.join(dataDir))) if (f.file !== configFile && f.file !== sources) keep(f.file, f.text);
      keep('the log', server.log());

      for (const s of surfaces) {
        const at = s.text.indexOf(MARK);
        assert.equal(at, -1, `${s.where} shows a secret: …${s.text.slice(Math.max(0, at - 80), at + 40)}…`);
      }
      // The surfaces are real: they show the masked forms, and the failure names its URL.
      const all = surfaces.map((s) => s.text).join('\n');
      assert.match(all, /api_key=\*\*\*&x=1/);
      assert.match(all, /mirror:\*\*\*@127\.0\.0\.1/);
      assert.match(all, /postgres:\/\/postgres:\*\*\*@127\.0\.0\.1/);
      assert.match(all, /HTTP 404/);
      assert.ok(surfaces.length > 60, `${surfaces.length} surfaces`);
    } finally {
      await killChild(server.child);
      mirror.close();
    }
  });

  test('start-up refusals and failures to reach a store name the setting without its secret', async () => {
    const refusals: Record<string, string>[] = [
      { PUBLIC_URL: `https://u:pub-${MARK}-1@ip.example/?key=${MARK}` },
      { SOURCES_MIRROR: `ftp://u:mirror-${MARK}-2@mirror.example/` },
      // Stores that cannot be reached: the error names them, masked.
      { CONTROL_DB: `postgres://ipsift:pg-${MARK}-3@127.0.0.1:1/ipsift?password=pg-${MARK}-4`, CONTROL_TIMEOUT_MS: '500' },
      { ACCOUNTING: 'redis', REDIS_URL: `redis://:redis-${MARK}-5@127.0.0.1:1`, REDIS_TIMEOUT_MS: '200' },
    ];
    for (const settings of refusals) {
      const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'dist/src/cli.js'), 'serve'], {
        env: { ...process.env, DATA_DIR: tempDir(), PORT: '0', ADMIN_PORT: '0', DEMO: '0', ...settings },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout!.on('data', (c: Buffer) => (out += c));
      child.stderr!.on('data', (c: Buffer) => (out += c));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      await killChild(child);
      const name = Object.keys(settings)[0];
      assert.notEqual(code, 0, `${name}: ${out}`);
      assert.ok(out.includes(name === 'ACCOUNTING' ? 'REDIS_URL' : name) || out.includes('127.0.0.1:1'), `${name}: ${out}`);
      assert.ok(!out.includes(MARK), `${name} shows its secret: ${out}`);
    }
  });
});
