// The operator's API (/admin/v1/… on the admin port) against the real server, and the CLI on
// the same data directory: authorisation (no token, unknown, revoked, read-only scope, public
// port), every endpoint, the errors, the audit log, and that the CLI and the API answer alike.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { importFeed } from '../src/feeds/import.js';
import { runBuild } from '../src/build/build.js';
import { releaseBuildLock, takeBuildLock } from '../src/pipeline/build-lock.js';
import { createAdminToken } from '../src/control/admin-tokens.js';
import type { Service } from '../src/service.js';
import { freePort, get, openTestControlDb, plansFile, request, startTestService, tempDir, testStoreEnv, until, type Reply, writeFile } from './helpers.js';
import { TestClock, clockSkip } from './test-clock.js';
import { createKey, createOrganisation } from '../src/control/accounts.js';
import { loadPlans } from '../src/model/plans.js';
import { jsonLogger, silentLogger, type Logger } from '../src/log.js';
import { cliInThread } from './cli-in-thread.js';
import { healthProblems, type HealthInput } from '../src/api/admin/health.js';
import { HARVEST_MS, KeyActivity } from '../src/control/key-activity.js';
import type { KeyTally } from '../src/control/auth.js';

const FEED = `network,category,provider,confidence,method,last_seen
81.7.3.16/28,tor,Tor Project,high,,2026-11-02
`;

describe('operator API (admin port)', () => {
  let svc: Service;
  let dataDir: string;
  let plans: string;
  let write: string;
  let read: string;
  let revoked: string;

  /** The CLI on the service's data directory, --json, parsed; or its exit code and stderr. */
  async function cli(args: string[]): Promise<{ code: number; json: any; stderr: string }> {
    const r = await cliInThread([...args, '--json'], { ...process.env, ...testStoreEnv(dataDir), PLANS_FILE: plans });
    return { code: r.code, json: r.code === 0 ? JSON.parse(r.stdout) : null, stderr: r.stderr };
  }

  const as = (token: string | null, method: string, p: string, body?: unknown): Promise<Reply> =>
    request(
      svc.adminPort,
      method,
      `/admin/v1${p}`,
      body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      token ? { Authorization: `Bearer ${token}` } : {},
    );

  before(async () => {
    dataDir = tempDir();
    importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', FEED) });
    runBuild({ dataDir });
    plans = plansFile(tempDir());
    svc = await startTestService({ dataDir, plansFile: plans });
    const db = openTestControlDb(dataDir);
    try {
      write = createAdminToken(db, 'billing', ['admin.write']).secret;
      read = createAdminToken(db, 'support', ['admin.read']).secret;
    } finally {
      db.close();
    }
  });
  after(() => svc.close());

  test('no token, an unknown one, an API key, a read-only token for a change, and the public port are refused', async () => {
    for (const [token, status, rc] of [
      [null, 401, 'UNAUTHORIZED'],
      ['iat_not-a-real-token', 401, 'UNAUTHORIZED'],
      ['isk_a-customer-key-is-never-an-operator', 401, 'UNAUTHORIZED'],
    ] as const) {
      const r = await as(token, 'GET', '/organizations');
      assert.equal(r.status, status);
      assert.equal(r.json.rc, rc);
      assert.equal(typeof r.json.message, 'string');
    }
    const r = await as(read, 'POST', '/organizations', { name: 'Nope', plan: 'free' });
    assert.equal(r.status, 403);
    assert.equal(r.json.rc, 'FORBIDDEN');
    assert.match(r.json.message, /admin\.write/);
    assert.equal((await as(read, 'GET', '/organizations')).status, 200);
    // Not on the public port, whatever the token.
    const pub = await request(svc.port, 'GET', '/admin/v1/organizations', undefined, { Authorization: `Bearer ${write}` });
    assert.notEqual(pub.status, 200);
    assert.equal(pub.json?.organizations, undefined);
  });

  test('organisations: create, list, show, plan and limit, delete (keys revoked at once, licences ended, history kept)', async () => {
    const created = await as(write, 'POST', '/organizations', { name: 'Acme', plan: 'starter' });
    assert.equal(created.status, 201);
    const org = created.json;
    assert.equal(org.name, 'Acme');
    assert.equal(org.plan, 'starter');
    assert.ok(Number.isInteger(org.account_id));
    assert.ok((await as(read, 'GET', '/organizations')).json.organizations.some((o: { id: string }) => o.id === org.id));

    const changed = await as(write, 'POST', `/organizations/${org.id}`, { plan: 'scale', hard_limit: 5000 });
    assert.equal(changed.status, 200);
    assert.equal(changed.json.plan, 'scale');
    assert.equal(changed.json.hard_limit, 5000);
    assert.equal((await as(write, 'POST', `/organizations/${org.id}`, { hard_limit: null })).json.hard_limit, null);
    // Both or neither: a refused overage limit leaves the plan, and the audit log, as they were.
    const audited = (await as(read, 'GET', `/audit?org_id=${org.id}`)).json.entries.length;
    const half = await as(write, 'POST', `/organizations/${org.id}`, { plan: 'max', hard_limit: -1 });
    assert.deepEqual([half.status, half.json.rc], [400, 'BAD_REQUEST']);
    assert.equal((await as(read, 'GET', `/organizations/${org.id}`)).json.plan, 'scale');
    assert.equal((await as(read, 'GET', `/audit?org_id=${org.id}`)).json.entries.length, audited);

    const key = await as(write, 'POST', `/organizations/${org.id}/keys`, { name: 'prod', allowed_scopes: ['db.download'] });
    assert.equal(key.status, 201);
    assert.match(key.json.key, /^isk_/);
    assert.deepEqual(key.json.allowed_scopes, ['db.download']);
    assert.equal((await get(svc.port, '/81.7.3.20', { Authorization: `Bearer ${key.json.key}` })).json.is_tor, true);

    const lic = await as(write, 'POST', `/organizations/${org.id}/licenses`, {
      base: 'ipsift',
      license_type: 'subscription',
      starts: '2026-01-01',
      expires: '2099-01-01',
    });
    assert.equal(lic.status, 201, lic.text);
    assert.equal(lic.json.standing, 'licensed');

    const shown = await as(read, 'GET', `/organizations/${org.id}`);
    assert.deepEqual(
      shown.json.keys.map((k: { id: string }) => k.id),
      [key.json.id],
    );
    assert.equal(shown.json.keys[0].key, undefined, 'a listing never holds a secret');

    const deleted = await as(write, 'DELETE', `/organizations/${org.id}`);
    assert.equal(deleted.status, 200);
    assert.equal(deleted.json.keys_revoked, 1);
    assert.equal(deleted.json.licences_ended, 1);
    assert.match(deleted.json.deleted_at, /^\d{4}-/);
    await until(
      async () => (await get(svc.port, '/81.7.3.20', { Authorization: `Bearer ${key.json.key}` })).status === 401,
      5_000,
      "the deleted organisation's key refused",
    );
    const refused = await get(svc.port, '/81.7.3.20', { Authorization: `Bearer ${key.json.key}` });
    assert.equal(refused.status, 401);
    assert.equal(refused.json.error, 'API key revoked');
    assert.equal((await as(read, 'GET', `/organizations/${org.id}`)).status, 404);
    assert.equal((await as(write, 'POST', `/organizations/${org.id}/keys`, { name: 'again' })).status, 404);
    assert.ok(!(await as(read, 'GET', '/organizations')).json.organizations.some((o: { id: string }) => o.id === org.id));
    assert.ok((await as(read, 'GET', '/organizations?deleted=true')).json.organizations.some((o: { id: string }) => o.id === org.id));
    assert.equal((await as(read, 'GET', `/organizations/${org.id}/downloads`)).status, 200, 'the history of a deleted organisation stays readable');
  });

  test('keys of any organisation: list, show, rotate (old secret refused), revoke; rotating a revoked key is a conflict', async () => {
    const org = (await as(write, 'POST', '/organizations', { name: 'Keys Ltd', plan: 'free' })).json;
    const k = (await as(write, 'POST', `/organizations/${org.id}/keys`, { name: 'k1' })).json;
    assert.equal((await as(read, 'GET', `/keys/${k.id}`)).json.key_prefix, k.key_prefix);
    assert.deepEqual(
      (await as(read, 'GET', `/organizations/${org.id}/keys`)).json.apikeys.map((x: { id: string }) => x.id),
      [k.id],
    );
    const rotated = await as(write, 'POST', `/keys/${k.id}/rotate`);
    assert.equal(rotated.status, 200);
    assert.notEqual(rotated.json.key, k.key);
    await until(async () => (await get(svc.port, '/81.7.3.20', { Authorization: `Bearer ${k.key}` })).status === 401, 5_000, 'the old secret refused');
    assert.equal((await get(svc.port, '/81.7.3.20', { Authorization: `Bearer ${rotated.json.key}` })).status, 200);
    const revokedKey = await as(write, 'DELETE', `/keys/${k.id}`);
    assert.equal(revokedKey.status, 200);
    assert.match(revokedKey.json.revoked_at, /^\d{4}-/);
    const conflict = await as(write, 'POST', `/keys/${k.id}/rotate`);
    assert.equal(conflict.status, 409);
    assert.equal(conflict.json.rc, 'CONFLICT');
    assert.equal((await as(read, 'GET', '/keys/no-such-key')).status, 404);
  });

  test('requests the service layer refuses answer 400 with the reason; unknown subjects 404', async () => {
    const org = (await as(write, 'POST', '/organizations', { name: 'Bad Input', plan: 'free' })).json;
    for (const [method, p, body, rc, why] of [
      ['POST', '/organizations', { name: 'X', plan: 'platinum' }, 'BAD_REQUEST', /unknown plan/],
      ['POST', '/organizations', { name: 42, plan: 'free' }, 'BAD_REQUEST', /^name must be a string$/],
      ['POST', '/organizations', '{"name":', 'BAD_REQUEST', /JSON object/],
      ['POST', '/organizations', '[1]', 'BAD_REQUEST', /JSON object/],
      ['POST', `/organizations/${org.id}`, {}, 'BAD_REQUEST', /nothing to change/],
      ['POST', `/organizations/${org.id}`, { hard_limit: -1 }, 'BAD_REQUEST', /whole number/],
      [
        'POST',
        `/organizations/${org.id}/keys`,
        { name: 'k', allowed_scopes: ['root'] },
        'BAD_REQUEST',
        /^allowed_scopes\[0\] must be one of db\.download, apikeys\.manage, changes\.read, not "root"$/,
      ],
      ['POST', `/organizations/${org.id}/keys`, { name: 'k', allowed_cidrs: ['10.0.0.1'] }, 'BAD_REQUEST', /not a CIDR/],
      ['POST', `/organizations/${org.id}/keys`, { allowed_scopes: [] }, 'BAD_REQUEST', /name is required/],
      [
        'POST',
        `/organizations/${org.id}/licenses`,
        { base: 'nope', license_type: 'evaluation', starts: '2026-01-01', expires: '2026-02-01' },
        'BAD_REQUEST',
        /base/,
      ],
      ['DELETE', `/organizations/${org.id}/licenses/ipsift`, undefined, 'NOT_FOUND', /no licence/],
      ['GET', '/organizations/00000000-0000-0000-0000-000000000000', undefined, 'NOT_FOUND', /no organisation/],
      ['GET', `/organizations/${org.id}/downloads?limit=0`, undefined, 'BAD_REQUEST', /limit/],
      ['GET', '/audit?before=x', undefined, 'BAD_REQUEST', /before/],
      ['GET', '/organizations/%E0%A4%A', undefined, 'BAD_REQUEST', /percent-encoding/],
    ] as const) {
      const r = await as(write, method, p, body);
      assert.equal(r.json?.rc, rc, `${method} ${p}: ${r.status} ${r.text}`);
      assert.equal(r.status, rc === 'NOT_FOUND' ? 404 : 400);
      assert.match(r.json.message, why, `${method} ${p}`);
    }
  });

  test('usage and download history of any organisation', async () => {
    const org = (await as(write, 'POST', '/organizations', { name: 'Usage Co', plan: 'starter' })).json;
    const k = (await as(write, 'POST', `/organizations/${org.id}/keys`, { name: 'u' })).json;
    for (let i = 0; i < 3; i++) assert.equal((await get(svc.port, `/81.7.3.${20 + i}`, { Authorization: `Bearer ${k.key}` })).status, 200);
    // Leases held by the front end count as used until given back (about 1.5 s idle).
    let u = await as(read, 'GET', `/organizations/${org.id}/usage`);
    await until(
      async () => (u = await as(read, 'GET', `/organizations/${org.id}/usage`)).json.requests === 3,
      10_000,
      () => `usage 3 (read ${u.json.requests})`,
    );
    assert.equal(u.status, 200);
    assert.equal(u.json.requests, 3);
    assert.equal(u.json.plan, 'starter');
    assert.ok(Date.parse(u.json.window_end) > Date.parse(u.json.window_start));
    const d = await as(read, 'GET', `/organizations/${org.id}/downloads?limit=5`);
    assert.deepEqual(d.json, { downloads: [] });
  });

  test('the audit log names who did what, from where, and never holds a secret; the CLI reads the same log', async () => {
    const org = (await as(write, 'POST', '/organizations', { name: 'Audited', plan: 'free' })).json;
    const k = (await as(write, 'POST', `/organizations/${org.id}/keys`, { name: 'a' })).json;
    await as(write, 'POST', `/keys/${k.id}/rotate`);
    const log = await as(read, 'GET', `/audit?org_id=${org.id}`);
    assert.equal(log.status, 200);
    assert.deepEqual(
      log.json.entries.map((e: { action: string }) => e.action),
      ['key.rotate', 'key.create', 'org.create'],
    );
    for (const e of log.json.entries) {
      assert.match(e.actor, /^admin:[0-9a-f-]{36}$/);
      assert.equal(e.source, '127.0.0.1');
      assert.ok(!JSON.stringify(e).includes(k.key), 'no secret in the audit log');
    }
    const paged = await as(read, 'GET', `/audit?org_id=${org.id}&limit=1&before=${log.json.entries[0].id}`);
    assert.deepEqual(
      paged.json.entries.map((e: { action: string }) => e.action),
      ['key.create'],
    );
    const fromCli = await cli(['audit', '--org', org.id]);
    assert.equal(fromCli.code, 0, fromCli.stderr);
    assert.deepEqual(fromCli.json, log.json.entries);
  });

  test("the CLI and the API give identical answers, and the CLI's changes are audited as its user", async () => {
    const viaApi = (await as(write, 'POST', '/organizations', { name: 'Twin', plan: 'scale' })).json;
    const viaCli = await cli(['org', 'create', '--name', 'Twin', '--plan', 'scale']);
    assert.equal(viaCli.code, 0, viaCli.stderr);
    const strip = (o: Record<string, unknown>): Record<string, unknown> => ({ ...o, id: '', account_id: 0, created_at: '' });
    assert.deepEqual(strip(viaCli.json), strip(viaApi));
    assert.deepEqual((await cli(['org', 'show', viaApi.id])).json, (await as(read, 'GET', `/organizations/${viaApi.id}`)).json);
    const limited = await cli(['org', 'limit', viaApi.id, '700']);
    const { keys, keys_next: keysNext, ...shownAfter } = (await as(read, 'GET', `/organizations/${viaApi.id}`)).json;
    assert.deepEqual([keys, keysNext], [[], null]);
    assert.deepEqual(limited.json, shownAfter);
    assert.equal(shownAfter.hard_limit, 700);
    assert.deepEqual((await cli(['usage', viaApi.id])).json, (await as(read, 'GET', `/organizations/${viaApi.id}/usage`)).json);
    assert.deepEqual((await cli(['license', 'list', '--org', viaApi.id])).json, (await as(read, 'GET', `/organizations/${viaApi.id}/licenses`)).json.licenses);
    // The same refusal, in the same words.
    const bad = await cli(['org', 'plan', viaApi.id, 'platinum']);
    assert.notEqual(bad.code, 0);
    const apiBad = await as(write, 'POST', `/organizations/${viaApi.id}`, { plan: 'platinum' });
    assert.ok(bad.stderr.includes(apiBad.json.message), `${bad.stderr} / ${apiBad.json.message}`);
    const entries = (await as(read, 'GET', `/audit?org_id=${viaCli.json.id}`)).json.entries;
    assert.equal(entries[0].action, 'org.create');
    assert.match(entries[0].actor, /^cli:/);
    assert.equal(entries[0].source, 'local');
  });

  test('a revoked operator token is refused at once', async () => {
    const made = await cli(['admin', 'token', 'create', '--name', 'temp', '--scope', 'admin.read']);
    assert.equal(made.code, 0, made.stderr);
    revoked = made.json.token;
    assert.equal((await as(revoked, 'GET', '/organizations')).status, 200);
    assert.equal((await cli(['admin', 'token', 'revoke', made.json.id])).code, 0);
    const r = await as(revoked, 'GET', '/organizations');
    assert.equal(r.status, 401);
    assert.equal(r.json.rc, 'UNAUTHORIZED');
    const tokens = (await cli(['admin', 'token', 'list'])).json as { id: string; revoked_at: string | null; token?: string }[];
    assert.ok(tokens.find((t) => t.id === made.json.id)!.revoked_at);
    assert.ok(
      tokens.every((t) => t.token === undefined),
      'a listing never holds a secret',
    );
  });

  test('operator tokens over the API: made with a scope, listed without secrets, revoked at once; a read-only token can do neither; both audited', async () => {
    const made = await as(write, 'POST', '/tokens', { name: 'night shift', scopes: ['admin.read'] });
    assert.equal(made.status, 201, made.text);
    assert.match(made.json.token, /^iat_/);
    assert.deepEqual(made.json.scopes, ['admin.read']);
    assert.equal(made.json.revoked_at, null);
    const secret = made.json.token as string;
    assert.equal((await as(secret, 'GET', '/organizations')).status, 200);
    // The new token reads but cannot act: not make a token, not revoke one (its own included).
    for (const [method, p, body] of [
      ['POST', '/tokens', { name: 'escalate', scopes: ['admin.write'] }],
      ['DELETE', `/tokens/${made.json.id}`, undefined],
    ] as const) {
      const r = await as(secret, method, p, body);
      assert.equal(r.status, 403, `${method} ${p}`);
      assert.match(r.json.message, /admin\.write/);
    }
    const listed = await as(secret, 'GET', '/tokens');
    assert.equal(listed.status, 200);
    assert.ok(listed.json.tokens.some((t: { id: string }) => t.id === made.json.id));
    assert.ok(!listed.text.includes(secret.slice(12)), 'a listing never holds a secret');
    // Bodies are checked: an unknown scope or field, no scope at all.
    for (const body of [
      { name: 'x', scopes: ['admin.root'] },
      { name: 'x', scopes: ['admin.read'], scope: 'admin.write' },
      { name: 'x', scopes: [] },
    ]) {
      const r = await as(write, 'POST', '/tokens', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.json.rc, 'BAD_REQUEST');
    }
    const gone = await as(write, 'DELETE', `/tokens/${made.json.id}`);
    assert.equal(gone.status, 200);
    assert.ok(gone.json.revoked_at);
    assert.equal((await as(secret, 'GET', '/organizations')).status, 401);
    assert.equal((await as(write, 'DELETE', '/tokens/00000000-0000-4000-8000-000000000000')).status, 404);
    const audit = (await as(write, 'GET', '/audit')).json.entries as { action: string; target: string; detail: Record<string, unknown> }[];
    assert.deepEqual(
      audit.filter((e) => e.target === made.json.id).map((e) => e.action),
      ['admin_token.revoke', 'admin_token.create'],
    );
    assert.ok(!JSON.stringify(audit).includes(secret), 'the audit log never holds a secret');
  });

  test('operator tokens end by themselves where made to; the last live write token cannot be revoked over the API (the command line can)', async () => {
    const soon = new Date(Date.now() + 3_600_000).toISOString();
    const timed = await as(write, 'POST', '/tokens', { name: 'contractor', scopes: ['admin.read'], expires: soon });
    assert.deepEqual([timed.status, timed.json.expires_at], [201, soon]);
    assert.equal((await as(timed.json.token, 'GET', '/organizations')).status, 200);
    const late = await as(write, 'POST', '/tokens', { name: 'late', scopes: ['admin.read'], expires: '2020-01-01T00:00:00Z' });
    assert.deepEqual([late.status, late.json.rc], [400, 'BAD_REQUEST']);
    // One made an hour before its end, an hour ago: refused now.
    const db = openTestControlDb(dataDir);
    const ended = createAdminToken(db, 'ended', ['admin.read'], new Date(Date.now() - 1000).toISOString(), Date.now() - 3_600_000).secret;
    db.close();
    const refused = await as(ended, 'GET', '/organizations');
    assert.equal(refused.status, 401);

    // A data directory whose one write token tries to revoke itself.
    const otherDir = tempDir();
    importFeed({ dataDir: otherDir, file: writeFile(otherDir, 'feed.csv', FEED) });
    runBuild({ dataDir: otherDir });
    const other = await startTestService({ dataDir: otherDir, plansFile: plans });
    try {
      const odb = openTestControlDb(otherDir);
      const only = createAdminToken(odb, 'only', ['admin.write']);
      odb.close();
      const auth = { Authorization: `Bearer ${only.secret}` };
      const last = await request(other.adminPort, 'DELETE', `/admin/v1/tokens/${only.token.id}`, undefined, auth);
      assert.deepEqual([last.status, last.json.rc], [409, 'CONFLICT']);
      assert.match(last.json.message, /^this is the last live admin\.write token: create another first/);
      const second = await request(other.adminPort, 'POST', '/admin/v1/tokens', JSON.stringify({ name: 'second', scopes: ['admin.write'] }), auth);
      assert.equal(second.status, 201);
      assert.equal((await request(other.adminPort, 'DELETE', `/admin/v1/tokens/${only.token.id}`, undefined, auth)).status, 200, 'once another can write');
      // The way out where no token is left: the command line, at the control database.
      const cli = await cliInThread(['admin', 'token', 'revoke', second.json.id, '--json'], { ...process.env, ...testStoreEnv(otherDir), PLANS_FILE: plans });
      assert.equal(cli.code, 0, cli.stderr);
    } finally {
      await other.close();
    }
  });

  test('settings: each value with its origin (environment over CONFIG_FILE over default), passwords masked, credentials set or not; read-only tokens may read', async () => {
    const file = writeFile(tempDir(), 'ipsift.json', JSON.stringify({ BATCH_QUEUE: 32, LOG_LEVEL: 'debug', CONTROL_DB: 'sqlite' }));
    const given = loadConfig({
      CONFIG_FILE: file,
      LOG_LEVEL: 'warn',
      REDIS_URL: 'redis://ops:hunter2@10.0.0.5:6379/2',
      AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI-never-shown',
      // node-postgres takes the password as a parameter too; a mirror may take a token.
      CONTROL_DB: 'postgres://ipsift@10.0.0.6/ipsift?password=pg-param-secret&sslmode=require',
      SOURCES_MIRROR: 'https://mirror.example/feeds?token=mirror-param-secret',
    }).given;
    // A data directory of its own: two services of one process on one directory share its stores.
    const otherDir = tempDir();
    importFeed({ dataDir: otherDir, file: writeFile(otherDir, 'feed.csv', FEED) });
    runBuild({ dataDir: otherDir });
    const other = await startTestService({ dataDir: otherDir, plansFile: plans, given });
    try {
      const db = openTestControlDb(otherDir);
      const reader = createAdminToken(db, 'support', ['admin.read']).secret;
      db.close();
      const r = await request(other.adminPort, 'GET', '/admin/v1/settings', undefined, { Authorization: `Bearer ${reader}` });
      assert.equal(r.status, 200, r.text);
      const by = new Map((r.json.settings as { name: string; value: string | null; origin: string }[]).map((x) => [x.name, x]));
      assert.equal(r.json.config_file, file);
      assert.deepEqual(by.get('LOG_LEVEL'), { name: 'LOG_LEVEL', group: 'Logs', value: 'warn', origin: 'environment' });
      assert.deepEqual([by.get('BATCH_QUEUE')!.value, by.get('BATCH_QUEUE')!.origin], ['32', 'file']);
      assert.deepEqual([by.get('KEEP_ALIVE_TIMEOUT_S')!.value, by.get('KEEP_ALIVE_TIMEOUT_S')!.origin], ['75', 'default']);
      assert.equal(by.get('REDIS_URL')!.value, 'redis://ops:***@10.0.0.5:6379/2');
      assert.equal(by.get('CONTROL_DB')!.value, 'postgres://***@10.0.0.6/ipsift?password=***&sslmode=require');
      assert.equal(by.get('SOURCES_MIRROR')!.value, 'https://mirror.example/feeds?token=***');
      for (const secret of ['hunter2', 'wJalrXUtnFEMI', 'pg-param-secret', 'mirror-param-secret'])
        assert.ok(!r.text.includes(secret), `${secret} is not in the answer`);
      assert.deepEqual(
        r.json.credentials.map((c: { name: string; set: boolean }) => [c.name, c.set]),
        [
          ['AWS_ACCESS_KEY_ID', false],
          ['AWS_SECRET_ACCESS_KEY', true],
          ['AWS_SESSION_TOKEN', false],
          ['GITHUB_TOKEN', false],
        ],
      );
      assert.equal((await request(other.adminPort, 'GET', '/admin/v1/settings')).status, 401);
    } finally {
      await other.close();
    }
  });

  test('actions: a build now (202, serving and listed once done; 409 while one runs) and a refresh of the sources (409 with none configured); audited; a read-only token can run neither', async () => {
    for (const p of ['/builds', '/sources/refresh']) {
      const r = await as(read, 'POST', p);
      assert.equal(r.status, 403, p);
      assert.match(r.json.message, /admin\.write/);
    }
    const odd = await as(write, 'POST', '/builds', { now: true });
    assert.equal(odd.status, 400);
    assert.match(odd.json.message, /now/, 'the unknown field named');
    const none = await as(write, 'POST', '/sources/refresh');
    assert.deepEqual([none.status, none.json.rc], [409, 'CONFLICT']);
    assert.match(none.json.message, /no sources are configured/);
    const before = (await as(read, 'GET', '/builds')).json.builds as { id: string; current: boolean }[];
    const started = await as(write, 'POST', '/builds');
    assert.equal(started.status, 202, started.text);
    assert.equal(started.reason, 'Accepted', 'the status line has its reason phrase (RFC 9112)');
    assert.equal(started.json.status, 'started');
    const again = await as(write, 'POST', '/builds');
    assert.equal(again.status, 409, 'one build at a time');
    let builds = before;
    await until(async () => (builds = (await as(read, 'GET', '/builds')).json.builds).length === before.length + 1, 60_000, 'the build listed');
    const made = builds.find((b) => !before.some((o) => o.id === b.id))!;
    await until(() => svc.holder.current?.buildId === made.id, 10_000, `build ${made.id} serving`);
    // The serving log names it from when it began to serve, open-ended.
    const spans = (await as(read, 'GET', '/serving-log')).json.spans as { build: string; from: string; to: string | null }[];
    assert.deepEqual([spans[0].build, spans[0].to], [made.id, null]);
    assert.equal(spans[1].to, spans[0].from, 'the one before ended when it began');
    const audit = (await as(read, 'GET', '/audit')).json.entries as { action: string; actor: string }[];
    assert.equal(audit.filter((e) => e.action === 'build.start').length, 1, 'the started build audited, the refused one not');
  });

  test('the admin port refuses an unknown path or method in its own {rc, message} shape', async () => {
    const unknown = await as(read, 'GET', '/no-such-thing');
    assert.deepEqual(
      [unknown.status, unknown.json],
      [404, { rc: 'NOT_FOUND', message: 'no route has this path: GET /openapi.json on this port lists every route' }],
    );
    const method = await as(read, 'DELETE', '/builds');
    assert.deepEqual([method.status, method.json.rc, method.headers.allow], [405, 'BAD_REQUEST', 'GET, HEAD, POST']);
    assert.match(method.json.message, /^this path takes GET, HEAD, POST only/);
  });

  test('a build given too little memory fails with a message; the server goes on answering with the build it had', async () => {
    const otherDir = tempDir();
    importFeed({ dataDir: otherDir, file: writeFile(otherDir, 'feed.csv', FEED) });
    const serving = runBuild({ dataDir: otherDir }).id;
    // 60 000 ranges: a build that needs tens of MiB of heap (a few ranges fit in 8).
    const many = Array.from({ length: 60_000 }, (_, i) => `91.${(i >> 8) & 255}.${i & 255}.${(i >> 16) * 4}/32,vpn,P${i % 997}`).join('\n');
    importFeed({ dataDir: otherDir, file: writeFile(otherDir, 'many.csv', `network,category,provider\n${many}\n`) });
    const lines: string[] = [];
    const other = await startTestService(
      { dataDir: otherDir, plansFile: plans, buildMemoryMib: 8 },
      jsonLogger((l) => void lines.push(l)),
    );
    try {
      const odb = openTestControlDb(otherDir);
      const auth = { Authorization: `Bearer ${createAdminToken(odb, 'ops', ['admin.write']).secret}` };
      odb.close();
      assert.equal((await request(other.adminPort, 'POST', '/admin/v1/builds', undefined, auth)).status, 202);
      await until(() => lines.some((l) => l.includes('build asked for failed')), 30_000, 'the build failed');
      const failed = JSON.parse(lines.find((l) => l.includes('build asked for failed'))!) as { reason: string };
      assert.match(
        failed.reason,
        /^the build ran out of its memory \(BUILD_MEMORY_MIB=8\) and stopped; the serving build is unchanged: raise BUILD_MEMORY_MIB$/,
      );
      assert.equal(other.holder.current?.buildId, serving);
      assert.equal((await get(other.port, '/81.7.3.20')).status, 200, 'lookups go on');
      // The lock went with the thread: a build can be asked for again at once.
      assert.equal((await request(other.adminPort, 'POST', '/admin/v1/builds', undefined, auth)).status, 202);
    } finally {
      await other.close();
    }
  });

  test('a refresh of the sources asked for fetches every source again, due or not', async () => {
    const dir = tempDir();
    const list = writeFile(dir, 'list.txt', '81.7.3.0/24\n');
    const sources = writeFile(dir, 'sources.json', JSON.stringify([{ name: 'local-list', path: list, format: 'list', category: 'vpn', max_age: '7d' }]));
    const otherDir = tempDir();
    const other = await startTestService({ dataDir: otherDir, plansFile: plans, sourcesFile: sources, sources: '' });
    try {
      const db = openTestControlDb(otherDir);
      const ops = createAdminToken(db, 'ops', ['admin.write']).secret;
      db.close();
      const auth = { Authorization: `Bearer ${ops}` };
      const fetched = async (): Promise<string | null> => (await get(other.adminPort, '/admin/v1/sources', auth)).json.sources[0].fetched_at;
      let first: string | null = null;
      await until(async () => (first = await fetched()) !== null, 30_000, 'the first refresh');
      // Asked again while the refresher is busy (409) until it starts (202).
      const startedEventually = async (p: string, what: string): Promise<void> => {
        let r = await request(other.adminPort, 'POST', p, undefined, auth);
        await until(
          async () => {
            if (r.status !== 202) r = await request(other.adminPort, 'POST', p, undefined, auth);
            return r.status === 202;
          },
          30_000,
          () => `${what} (${r.status} ${r.text})`,
        );
      };
      // Not due again for hours: only the request makes it fetch now.
      await startedEventually('/admin/v1/sources/refresh', 'the refresh started');
      await until(async () => ((await fetched()) ?? '') > first!, 30_000, 'fetched again');
      // While a build holds the data directory (here another process's), a refresh would find it
      // and fetch nothing: 409 with why, not a 202 that does nothing.
      await until(() => takeBuildLock(otherDir), 30_000, 'the build lock');
      try {
        const refused = await request(other.adminPort, 'POST', '/admin/v1/sources/refresh', undefined, auth);
        assert.deepEqual([refused.status, refused.json.rc], [409, 'CONFLICT']);
        assert.match(refused.json.message, /^a build is running on this data directory .*try again when it ends/);
      } finally {
        releaseBuildLock(otherDir);
      }
      await startedEventually('/admin/v1/sources/refresh', 'started again once the build ended');
      // One source by name: fetched again, audited with its name; an unknown name is 404.
      const before = (await fetched()) ?? '';
      await startedEventually('/admin/v1/sources/local-list/refresh', "one source's refresh started");
      await until(async () => ((await fetched()) ?? '') > before, 30_000, 'fetched again, alone');
      const unknown = await request(other.adminPort, 'POST', '/admin/v1/sources/no-such/refresh', undefined, auth);
      assert.deepEqual([unknown.status, unknown.json.rc], [404, 'NOT_FOUND']);
      assert.match(unknown.json.message, /^no source named "no-such" is configured here/);
      const audit = (await request(other.adminPort, 'GET', '/admin/v1/audit', undefined, auth)).json.entries as { action: string; target: string | null }[];
      assert.ok(
        audit.some((e) => e.action === 'source.refresh' && e.target === 'local-list'),
        'audited with its name',
      );
    } finally {
      await other.close();
    }
  });

  test('a source disabled is neither fetched nor built from until enabled; each build records what it changed; the log tail keeps warnings', async () => {
    const dir = tempDir();
    const vpn = writeFile(dir, 'vpn.txt', '81.7.3.0/24\n');
    const hosting = writeFile(dir, 'hosting.txt', '82.1.1.0/24\n');
    const sources = writeFile(
      dir,
      'sources.json',
      JSON.stringify([
        { name: 'vpn-list', path: vpn, format: 'list', category: 'vpn' },
        { name: 'hosting-list', path: hosting, format: 'list', category: 'hosting' },
      ]),
    );
    const otherDir = tempDir();
    const other = await startTestService({ dataDir: otherDir, plansFile: plans, sourcesFile: sources, sources: '' });
    try {
      const db = openTestControlDb(otherDir);
      const ops = createAdminToken(db, 'ops', ['admin.write']);
      db.close();
      const auth = { Authorization: `Bearer ${ops.secret}` };
      const call = (method: string, p: string): Promise<Reply> => request(other.adminPort, method, `/admin/v1${p}`, undefined, auth);
      const isVpn = async (): Promise<boolean> => (await get(other.port, '/81.7.3.20')).json.is_vpn === true;
      await until(isVpn, 30_000, 'the first build serves the VPN list');
      const first = other.holder.current!.buildId;
      // The log tail: the start's warning (no build yet) is there, newest first; errors only leaves it out.
      const tail = await call('GET', '/log');
      assert.equal(tail.status, 200);
      assert.ok(
        tail.json.lines.some((l: { level: string; msg: string }) => l.level === 'warn' && /^no index loaded: lookups answer 503/.test(l.msg)),
        JSON.stringify(tail.json),
      );
      assert.ok((await call('GET', '/log?level=error')).json.lines.every((l: { level: string }) => l.level === 'error'));
      assert.deepEqual([(await call('GET', '/log?level=info')).status, (await call('GET', '/log?since=1')).status], [400, 400]);

      const off = await call('POST', '/sources/vpn-list/disable');
      assert.equal(off.status, 200, off.text);
      assert.deepEqual([off.json.source, off.json.disabled, off.json.by], ['vpn-list', true, `admin:${ops.token.id}`]);
      assert.match(off.json.message, /^vpn-list disabled: it is no longer fetched, and a build without it follows/);
      // A build without it serves, unasked: the address answers no VPN, the hosting list still counts.
      await until(async () => !(await isVpn()), 30_000, 'a build without the disabled source');
      const second = other.holder.current!.buildId;
      assert.notEqual(second, first);
      const manifest = (await call('GET', `/builds/${second}`)).json;
      assert.deepEqual(manifest.disabled, ['vpn-list']);
      assert.deepEqual(manifest.ranges.v4, { hosting: 1 });
      assert.ok(!manifest.feeds.some((f: { name: string }) => f.name === 'vpn-list'));
      // What that build changed: the VPN range, lost; nothing else.
      const changes = await call('GET', `/builds/${second}/changes`);
      assert.equal(changes.status, 200, changes.text);
      assert.deepEqual([changes.json.from, changes.json.to, changes.json.ranges], [first, second, 1]);
      assert.deepEqual(changes.json.categories.vpn, { ranges: 1, gained: 0, lost: 1, changed: 0, ipv4_addresses: '256', ipv6_addresses: '0' });
      assert.deepEqual(
        changes.json.examples.map((e: { first: string; last: string; after: unknown }) => [e.first, e.last, e.after]),
        [['81.7.3.0', '81.7.3.255', null]],
      );
      const noneBefore = await call('GET', `/builds/${first}/changes`);
      assert.deepEqual([noneBefore.status, noneBefore.json.rc], [404, 'NOT_FOUND']);
      assert.match(noneBefore.json.message, /has no comparison: it was the first build here/);
      const row = (await call('GET', '/sources')).json.sources.find((x: { name: string }) => x.name === 'vpn-list');
      assert.deepEqual([row.state, row.next_at, row.disabled.by], ['disabled', null, `admin:${ops.token.id}`]);
      // Again: nothing changes, nothing audited. A refresh of it is refused with the way out.
      const again = await call('POST', '/sources/vpn-list/disable');
      assert.deepEqual([again.status, again.json.message], [200, 'vpn-list was already disabled: nothing changed']);
      const refresh = await call('POST', '/sources/vpn-list/refresh');
      assert.deepEqual([refresh.status, refresh.json.rc], [409, 'CONFLICT']);
      assert.match(refresh.json.message, /^vpn-list is disabled \(since .*\): enable it first \(POST \/admin\/v1\/sources\/vpn-list\/enable\)$/);
      assert.deepEqual((await call('POST', '/sources/nope/disable')).status, 404);

      const on = await call('POST', '/sources/vpn-list/enable');
      assert.deepEqual([on.status, on.json.disabled, on.json.since], [200, false, null]);
      await until(isVpn, 30_000, 'a build with it again');
      const audit = (await call('GET', '/audit')).json.entries as { action: string; target: string | null }[];
      assert.deepEqual(
        audit.filter((e) => e.target === 'vpn-list').map((e) => e.action),
        ['source.enable', 'source.disable'],
        'newest first, the repeated disable not audited',
      );
    } finally {
      await other.close();
    }
  });

  test('organisations searched by part of the name (any case, wildcards taken literally) or the start of the id', async () => {
    const made: Record<string, string> = {};
    for (const name of ['Search Alpha GmbH', 'search beta', '100% Gamma_Co', 'Delta'])
      made[name] = (await as(write, 'POST', '/organizations', { name, plan: 'free' })).json.id;
    const names = async (q: string): Promise<string[]> =>
      (await as(read, 'GET', `/organizations?q=${encodeURIComponent(q)}&limit=200`)).json.organizations.map((o: { name: string }) => o.name);
    assert.deepEqual(await names('SEARCH'), ['Search Alpha GmbH', 'search beta']);
    assert.deepEqual(await names('0%'), ['100% Gamma_Co']);
    assert.deepEqual(await names('a_c'), ['100% Gamma_Co']);
    assert.deepEqual(await names('%'), ['100% Gamma_Co'], 'a % is a character, not a wildcard');
    assert.deepEqual(await names(made.Delta.slice(0, 8)), ['Delta']);
    assert.deepEqual(await names(made.Delta.slice(4, 12)), [], 'the id from its start only');
    const paged = await as(read, 'GET', '/organizations?q=search&limit=1');
    assert.deepEqual([paged.json.organizations[0].name, typeof paged.json.next], ['Search Alpha GmbH', 'string']);
    const second = await as(read, 'GET', `/organizations?q=search&limit=1&after=${paged.json.next}`);
    assert.deepEqual(
      second.json.organizations.map((o: { name: string }) => o.name),
      ['search beta'],
    );
    for (const q of ['', 'x'.repeat(201)]) {
      const r = await as(read, 'GET', `/organizations?q=${q}`);
      assert.deepEqual([r.status, r.json.rc], [400, 'BAD_REQUEST']);
      assert.match(r.json.message, /q must be 1 to 200 characters/);
    }
  });

  test("what the console reads: the token's scopes, the plans, builds and feeds, each plan's answer; a damaged build is not served", async () => {
    assert.deepEqual((await as(read, 'GET', '/token')).json.scopes, ['admin.read']);
    assert.deepEqual((await as(write, 'GET', '/token')).json.scopes, ['admin.read', 'admin.write']);
    assert.deepEqual(
      (await as(read, 'GET', '/plans')).json.plans.map((p: { plan: string }) => p.plan),
      ['free', 'starter', 'scale', 'max'],
    );
    const feeds = (await as(read, 'GET', '/feeds')).json.feeds;
    assert.deepEqual(
      feeds.map((f: { name: string }) => f.name),
      ['feed'],
    );
    const answers = (await as(read, 'GET', '/answers/81.7.3.20')).json;
    const of = (plan: string) => answers.plans.find((p: { plan: string }) => p.plan === plan).answer;
    assert.equal(answers.build, svc.holder.current!.buildId);
    assert.deepEqual(answers.keyless.answer, { ip: '81.7.3.20', is_vpn: false });
    assert.equal(of('free').is_tor, undefined, 'free sees no tor flag');
    assert.equal(of('starter').is_tor, true);
    assert.deepEqual(of('max').tor, { provider: 'Tor Project', confidence: 'high', last_seen: '2026-11-02' });
    assert.equal((await as(read, 'GET', '/answers/not-an-ip')).status, 400);
    assert.equal((await request(svc.adminPort, 'GET', '/admin/v1/answers/81.7.3.20')).status, 401);

    // A second build whose index is damaged on disk: refused with 409, the serving build unchanged.
    const serving = svc.holder.current!.buildId;
    const damaged = runBuild({ dataDir, serve: false }).id;
    const builds = (await as(read, 'GET', '/builds')).json.builds;
    assert.deepEqual(
      builds.slice(0, 2).map((b: { id: string; current: boolean }) => [b.id, b.current]),
      [
        [damaged, false],
        [serving, true],
      ],
      'newest first, the serving one marked',
    );
    assert.equal((await as(read, 'GET', `/builds/${damaged}`)).json.id, damaged);
    const index = path.join(dataDir, 'builds', damaged, 'index.bin');
    const bytes = fs.readFileSync(index);
    bytes[bytes.length - 1] ^= 0xff;
    fs.writeFileSync(index, bytes);
    assert.equal((await as(read, 'POST', `/builds/${damaged}/serve`)).status, 403);
    const refused = await as(write, 'POST', `/builds/${damaged}/serve`);
    assert.deepEqual([refused.status, refused.json.rc], [409, 'CONFLICT']);
    assert.match(refused.json.message, /is damaged .*the serving build is unchanged/);
    assert.equal((await as(write, 'POST', '/builds/20990101-1/serve')).status, 404);
    assert.equal(svc.holder.current!.buildId, serving);

    // One check at a time (each reads a whole index into memory): a request whose body has not
    // come yet holds the turn; a second is refused with 429, and a client that goes frees it.
    const held = net.connect(svc.adminPort, '127.0.0.1');
    await new Promise((r) => held.once('connect', r));
    held.write(`POST /admin/v1/builds/${serving}/serve HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${write}\r\nContent-Length: 2\r\n\r\n`);
    await until(
      async () => (await as(write, 'POST', `/builds/${serving}/serve`)).status === 429,
      5_000,
      'the second request is refused while the first holds the turn',
    );
    const busy = await as(write, 'POST', `/builds/${serving}/serve`);
    assert.deepEqual([busy.status, busy.json.rc, busy.headers['retry-after']], [429, 'RATE_LIMITED', '1']);
    held.destroy();
    await until(async () => (await as(write, 'POST', `/builds/${serving}/serve`)).status === 200, 5_000, 'the turn is free once the first client has gone');
    // A body it does not take is refused, and a served build is in the audit log like a started one.
    const odd = await as(write, 'POST', `/builds/${serving}/serve`, { zzz: 1 });
    assert.deepEqual([odd.status, odd.json.rc], [400, 'BAD_REQUEST']);
    assert.match(odd.json.message, /unknown field "zzz"/);
    const audit = (await as(read, 'GET', '/audit')).json.entries as { action: string; target: string }[];
    assert.ok(
      audit.some((e) => e.action === 'build.serve' && e.target === serving),
      'build.serve audited',
    );
  });

  test('every input judged: a key already expired, a number sent as a string, a flag that is neither true nor false, a body a rotation does not take', async () => {
    const org = (await as(write, 'POST', '/organizations', { name: 'Judged Ltd', plan: 'free' })).json;
    const dead = await as(write, 'POST', `/organizations/${org.id}/keys`, { name: 'k', expires: '2020-01-01T00:00:00Z' });
    assert.deepEqual([dead.status, dead.json.rc], [400, 'BAD_REQUEST']);
    assert.match(dead.json.message, /^expires must be in the future: 2020-01-01T00:00:00.000Z has passed/);
    const five = await as(write, 'POST', `/organizations/${org.id}`, { hard_limit: '5' });
    assert.deepEqual([five.status, five.json.rc], [400, 'BAD_REQUEST']);
    assert.match(five.json.message, /^hard_limit must be a whole number, null, "none" or "default", not the string "5"/);
    assert.equal((await as(write, 'POST', `/organizations/${org.id}`, { hard_limit: 5 })).json.hard_limit, 5);
    for (const v of ['yes', '1', 'TRUE']) {
      const r = await as(read, 'GET', `/organizations?deleted=${v}`);
      assert.deepEqual([r.status, r.json.message], [400, `deleted must be true or false, not ${JSON.stringify(v)}`], v);
    }
    const k = (await as(write, 'POST', `/organizations/${org.id}/keys`, { name: 'k2' })).json;
    const rotate = await as(write, 'POST', `/keys/${k.id}/rotate`, { zzz: 1 });
    assert.deepEqual([rotate.status, rotate.json.rc], [400, 'BAD_REQUEST'], 'a 400 the document lists');
  });
});

describe("the overview's health", () => {
  const NOW = Date.UTC(2026, 10, 27, 12);
  const calm: HealthInput = {
    nowMs: NOW,
    ready: true,
    draining: false,
    build: { id: 'b1', builtAtMs: NOW - 3_600_000 },
    buildEveryS: 86_400,
    owed: { counters: 0, units: 0 },
    replica: null,
    replicaPollMs: 30_000,
  };
  const kinds = (h: Partial<HealthInput>): string[] => healthProblems({ ...calm, ...h }).map((p) => p.kind);

  test('nothing is wrong on a ready node with a fresh build and an accounting store that takes writes', () => {
    assert.deepEqual(healthProblems(calm), []);
  });

  test('each problem is named with where its detail is: readiness, an old build, accounting from memory, a replica behind or unread', () => {
    assert.deepEqual(healthProblems({ ...calm, ready: false, draining: true })[0], {
      kind: 'not_ready',
      message: 'Not ready: shutting down.',
      see: '#/overview',
    });
    // A day and its two hours of slack: old past them, not before.
    assert.deepEqual(kinds({ build: { id: 'b1', builtAtMs: NOW - 26 * 3_600_000 } }), []);
    assert.deepEqual(healthProblems({ ...calm, build: { id: 'b1', builtAtMs: NOW - 27 * 3_600_000 } }), [
      { kind: 'build_old', message: 'The serving build b1 was made 27 hours ago; one is due every 24 hours.', see: '#/data' },
    ]);
    assert.deepEqual(kinds({ build: { id: 'b1', builtAtMs: NOW - 90 * 86_400_000 }, buildEveryS: null }), [], 'no schedule, no age expected');
    // No build yet: what lookups answer then, as they answer it (503 while sources' first fetch runs).
    assert.match(healthProblems({ ...calm, ready: false, build: null }).at(0)!.message, /lookups answer 500 until one does/);
    assert.match(healthProblems({ ...calm, ready: false, build: null, sourcesConfigured: true }).at(0)!.message, /lookups answer 503 with Retry-After: 30/);
    assert.match(
      healthProblems({ ...calm, owed: { counters: 2, units: 340 } })[0].message,
      /^The accounting store refuses writes: 340 requests on 2 counters were answered from memory/,
    );
    const replica = { published: 'b2', checkedAt: new Date(NOW - 10_000), error: null };
    assert.deepEqual(kinds({ replica }), ['replica_behind']);
    assert.deepEqual(kinds({ replica: { ...replica, published: 'b1' } }), []);
    assert.deepEqual(kinds({ replica: { ...replica, checkedAt: new Date(NOW - 10 * 60_000) } }), ['replica_unchecked']);
    assert.deepEqual(kinds({ replica: { ...replica, error: 'the store refused: 403' } }), ['replica_unchecked']);
    assert.deepEqual(kinds({ replica: { published: null, checkedAt: null, error: null } }), ['replica_unchecked']);
  });
});

describe('the key activity log', () => {
  const T0 = Date.UTC(2026, 10, 27, 12);
  const tally = (keyId: string, orgId: string, requests: number, limited: number, refused: number, usedAtMs: number, usedFrom = '198.51.100.1'): KeyTally => ({
    keyId,
    orgId,
    requests,
    limited,
    refused,
    usedAtMs,
    usedFrom,
  });

  test('adds the front ends’ counts by key and organisation, most refused first, over whole ten-minute spans of the last day', () => {
    const log = new KeyActivity();
    log.add([tally('k1', 'o1', 100, 0, 0, T0), tally('k2', 'o1', 10, 8, 1, T0), tally('k3', 'o2', 5, 0, 3, T0)], T0);
    log.add([tally('k1', 'o1', 50, 2, 0, T0 + 5_000, '198.51.100.9')], T0 + 5_000);
    const hour = log.top(3_600_000, T0 + 60_000);
    assert.deepEqual(
      hour.keys.map((k) => [k.id, k.requests, k.limited, k.refused]),
      [
        ['k2', 10, 8, 1],
        ['k3', 5, 0, 3],
        ['k1', 150, 2, 0],
      ],
    );
    assert.deepEqual(
      hour.organizations.map((o) => [o.id, o.requests, o.limited + o.refused]),
      [
        ['o1', 160, 11],
        ['o2', 5, 3],
      ],
    );
    assert.deepEqual(log.lastUseOf('k1'), { atMs: T0 + 5_000, from: '198.51.100.9' });
    // A day later the counts are out of the hour's window and past the day's; the last use stays.
    assert.deepEqual(log.top(3_600_000, T0 + 2 * 3_600_000).keys, []);
    log.add([tally('k4', 'o3', 1, 0, 0, T0 + 25 * 3_600_000)], T0 + 25 * 3_600_000);
    assert.deepEqual(
      log.top(24 * 3_600_000, T0 + 25 * 3_600_000).keys.map((k) => k.id),
      ['k4'],
    );
    assert.equal(log.lastUseOf('k2')?.atMs, T0);
  });

  test('outlives a restart in its file', () => {
    const file = path.join(tempDir(), 'history', 'keys-test.json');
    const first = new KeyActivity(file);
    first.add([tally('k1', 'o1', 7, 1, 2, T0)], T0);
    first.save();
    const again = new KeyActivity(file);
    assert.deepEqual(again.top(3_600_000, T0).keys, [{ id: 'k1', org_id: 'o1', requests: 7, limited: 1, refused: 2 }]);
    assert.deepEqual(again.lastUseOf('k1'), { atMs: T0, from: '198.51.100.1' });
    fs.writeFileSync(file, '{not json');
    assert.deepEqual(new KeyActivity(file).top(3_600_000, T0).keys, [], 'a damaged file is started afresh');
    // JSON of another shape: checked whole against the file's schema, never half read.
    const warned: string[] = [];
    const log = { ...silentLogger, warn: (msg: string, fields?: Record<string, unknown>) => void warned.push(`${msg}: ${String(fields?.reason)}`) };
    for (const [doc, reason] of [
      [{ spans: 5, last_use: [] }, 'spans must be an array'],
      [
        { spans: [{ start: T0, keys: [{ id: 'k1', org_id: 'o1', requests: -1, limited: 0, refused: 0 }] }], last_use: [] },
        'spans[0].keys[0].requests must be an integer',
      ],
      [{ spans: [], last_use: [{ id: 'k1', at_ms: T0, from: '198.51.100.1', extra: 1 }] }, 'unknown field "last_use[0].extra"'],
    ] as const) {
      fs.writeFileSync(file, JSON.stringify(doc));
      const read = new KeyActivity(file, log as Logger);
      assert.deepEqual([read.top(3_600_000, T0).keys, read.lastUseOf('k1')], [[], null]);
      assert.ok(warned.at(-1)?.startsWith(`key activity not read back: starting afresh: ${reason}`), warned.at(-1));
    }
  });
});

describe('what the console shows, across a restart of the service', { skip: clockSkip() }, () => {
  test('the traffic history and the key activity come back from the data directory', async () => {
    const dataDir = tempDir();
    importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', FEED) });
    runBuild({ dataDir });
    const plans = plansFile(tempDir());
    const db = openTestControlDb(dataDir);
    const org = createOrganisation(db, loadPlans(plans), 'Restarted', 'scale');
    const key = createKey(db, { orgId: org.id, name: 'kept' });
    const token = createAdminToken(db, 'ops', ['admin.read']).secret;
    db.close();
    // The files are named by the admin port: the second start takes the first's.
    const adminPort = await freePort();
    const read = async (svc: Service, p: string): Promise<any> => (await get(svc.adminPort, p, { Authorization: `Bearer ${token}` })).json;

    const clock = new TestClock(true);
    const first = await startTestService({ dataDir, plansFile: plans, adminPort }, undefined, { clock });
    try {
      for (let i = 0; i < 5; i++) assert.equal((await get(first.port, '/81.7.3.17', { Authorization: `Bearer ${key.secret}` })).status, 200);
      // One period on: a traffic sample is taken and the front end hands its counts over.
      clock.advance(Math.max(HARVEST_MS, 10_000));
    } finally {
      await first.close();
    }

    const later = new TestClock(true);
    later.advance(Math.max(HARVEST_MS, 10_000) + 60_000); // restarted a minute after the last sample
    const second = await startTestService({ dataDir, plansFile: plans, adminPort }, undefined, { clock: later });
    try {
      const traffic = (await read(second, '/admin/v1/overview?window=1h')).traffic.samples as { requests_per_s: number }[];
      // 5 lookups over the period: 10 s moved, plus the real time the test took (a loaded
      // machine stretches it), so at most 0.5 a second. A server that lost its history has no
      // period with a lookup in it.
      assert.ok(
        traffic.some((s) => s.requests_per_s > 0.25 && s.requests_per_s <= 0.5),
        `the period of 5 lookups read back: ${JSON.stringify(traffic.map((s) => s.requests_per_s))}`,
      );
      const activity = await read(second, `/admin/v1/activity?window=1h&org_id=${org.id}`);
      assert.deepEqual(
        activity.keys.map((k: { name: string; requests: number; last_used_at: string | null }) => [k.name, k.requests, k.last_used_at !== null]),
        [['kept', 5, true]],
      );
    } finally {
      await second.close();
    }
  });
});
