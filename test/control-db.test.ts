// The control database's boundary: one suite, run against SQLite (the data directory's file)
// and PostgreSQL (a fresh database), then what only a shared server can do: nodes starting and
// writing together, changes reaching other nodes' key caches, and the server going away.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { after, describe, test } from 'node:test';
import { AUTH_POLL_MS, KeyCache, KeyLookupsThrottled, POSTGRES_LOOKUPS_PER_S } from '../src/control/auth.js';
import { ERRORS } from '../src/wire/errors.js';
import {
  createKey,
  createOrganisation,
  deleteOrganisation,
  findKeyBySecret,
  getKey,
  listKeys,
  listOrganisations,
  revokeKey,
  rotateKey,
  setHardLimit,
  setPlan,
} from '../src/control/accounts.js';
import { listAudit, recordAudit } from '../src/control/audit.js';
import { openControlDb, type ControlDb } from '../src/control/control-db.js';
import { ControlUnavailable, PostgresDb, translate } from '../src/control/postgres.js';
import { openSqlite, type SqlDatabase } from '../src/control/sqlite.js';
import { loadPlans } from '../src/model/plans.js';
import { isTokenRevoked, revokeToken } from '../src/control/tokens.js';
import { grantLicence, listLicences, revokeLicence } from '../src/control/licences.js';
import { IpsiftError } from '../src/errors.js';
import { runBuild } from '../src/build/build.js';
import { importFeed } from '../src/feeds/import.js';
import { openApiDocument } from '../src/api/public/openapi.js';
import type { ControlDbConfig } from '../src/config.js';
import { get, plansFile, PROJECT_ROOT, request, startTestService, tempDir, until, writeFile } from './helpers.js';
import { TestClock } from './test-clock.js';
import { dropDatabases, freshControlDb, startPostgresRelay } from './postgres-server.js';
import { controlDbFile } from '../src/data-dir.js';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const { default: Ajv2020 } = require('ajv/dist/2020') as typeof import('ajv/dist/2020.js');
const ajv = new Ajv2020({ strict: false });
ajv.addSchema(openApiDocument(), 'openapi');
/** Whether a body is what the OpenAPI document says an operation answers with a status. */
const documented = (p: string, method: string, status: number, body: unknown): boolean =>
  ajv.compile({ $ref: `openapi#/paths/${p.replace(/\//g, '~1')}/${method}/responses/${status}/content/application~1json/schema` })(body) as boolean;
after(() => dropDatabases());

const BACKENDS: [string, () => ControlDbConfig][] = [
  ['SQLite', () => null],
  ['PostgreSQL', () => freshControlDb()],
];

for (const [name, config] of BACKENDS) {
  describe(`control database: ${name}`, () => {
    const dir = tempDir();
    const plans = loadPlans(plansFile(dir));
    const control = config();
    const open = (): ControlDb => openControlDb(dir, control);

    test('migrations: applied once, again a no-op; a newer schema is refused by name', () => {
      const db = open();
      const v = db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number };
      assert.equal(v.v, 7);
      db.close();
      const again = open();
      assert.equal((again.prepare('SELECT COUNT(*) AS n FROM schema_migrations').get() as { n: number }).n, 7);
      again.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(99, 'later');
      again.close();
      assert.throws(open, (e: unknown) => e instanceof IpsiftError && e.code === 'STORE_NEWER' && /schema 99, newer than this ipsift \(7\)/.test(e.message));
      const fix = openControlDbUnchecked(dir, control);
      fix.prepare('DELETE FROM schema_migrations WHERE version = ?').run(99);
      fix.close();
    });

    test('organisations, keys, licences, tokens and the audit log: every operation, numbers as numbers', () => {
      const db = open();
      try {
        const a = createOrganisation(db, plans, 'Alpha', 'starter');
        const b = createOrganisation(db, plans, 'Beta', 'scale');
        assert.deepEqual([a.accountId, b.accountId], [1, 2]);
        assert.equal(typeof a.accountId, 'number');
        assert.equal(setPlan(db, plans, a.id, 'max').plan, 'max');
        assert.equal(setHardLimit(db, a.id, 5000).hardLimit, 5000);
        const k = createKey(db, { orgId: a.id, name: 'main', scopes: ['db.download'], allowedCidrs: ['10.0.0.0/8'] });
        assert.deepEqual(findKeyBySecret(db, k.secret), k.key);
        assert.equal(findKeyBySecret(db, 'ips_nothing'), null);
        const rotated = rotateKey(db, k.key.id);
        assert.equal(findKeyBySecret(db, k.secret), null);
        assert.equal(findKeyBySecret(db, rotated.secret)?.tokenEpoch, 1);
        const claims = { id: 'tok1', keyId: k.key.id, expiresMs: Date.now() + 60_000 };
        assert.equal(revokeToken(db, claims, Date.now()), 'token');
        assert.equal(revokeToken(db, claims, Date.now()), 'token'); // twice: still one row
        assert.equal(isTokenRevoked(db, 'tok1'), true);
        assert.ok(revokeKey(db, k.key.id).revokedAt);
        assert.deepEqual(
          listKeys(db, a.id).map((x) => x.id),
          [k.key.id],
        );
        grantLicence(db, { orgId: a.id, base: 'vpn', licenceType: 'evaluation', starts: '2026-01-01', expires: '2027-01-01' }, ['vpn']);
        grantLicence(db, { orgId: a.id, base: 'vpn', licenceType: 'subscription', starts: '2026-01-01', expires: '2028-01-01' }, ['vpn']);
        assert.deepEqual(
          listLicences(db, a.id).map((l) => [l.base, l.licenceType, l.expires]),
          [['vpn', 'subscription', '2028-01-01T00:00:00.000Z']],
        );
        recordAudit(db, { who: 'test', source: 'cli' }, 'org.create', a.id, a.id, { name: 'Alpha' });
        recordAudit(db, { who: 'test', source: 'cli' }, 'org.create', b.id, b.id, { name: 'Beta' });
        const entries = listAudit(db, { limit: 10 });
        assert.deepEqual(
          entries.map((e) => e.org_id),
          [b.id, a.id],
        );
        assert.deepEqual(
          listAudit(db, { limit: 10, before: entries[0].id }).map((e) => e.org_id),
          [a.id],
        );
        const gone = deleteOrganisation(db, b.id);
        assert.equal(gone.org.deletedAt !== null, true);
        assert.equal(revokeLicence(db, a.id, 'vpn'), true);
        assert.equal(revokeLicence(db, a.id, 'vpn'), false);
        assert.deepEqual(
          listOrganisations(db).map((o) => o.name),
          ['Alpha', 'Beta'],
        );
        assert.equal(getKey(db, 'no such id'), null);
      } finally {
        db.close();
      }
    });

    test('a failed transaction leaves nothing behind, and the connection goes on', () => {
      const db = open();
      try {
        const before = listOrganisations(db).length;
        assert.throws(() =>
          db.transaction(() => {
            createOrganisation(db, plans, 'Doomed', 'free');
            db.prepare('INSERT INTO organisations (id, name, plan, created_at) VALUES (?, ?, ?, ?)').run(listOrganisations(db)[0].id, 'dup', 'free', 'x');
          }),
        );
        assert.equal(listOrganisations(db).length, before);
        assert.equal(createOrganisation(db, plans, 'After', 'free').name, 'After');
      } finally {
        db.close();
      }
    });

    test("another connection's change moves dataVersion, and a key cache drops within its poll", async () => {
      const mine = open();
      const other = open();
      try {
        const org = createOrganisation(other, plans, 'Cached', 'max');
        const k = createKey(other, { orgId: org.id, name: 'k' });
        const clock = new TestClock(true);
        const cache = new KeyCache(mine, plans, undefined, undefined, clock);
        try {
          const v = mine.dataVersion();
          assert.ok('key' in cache.resolve(k.secret, clock.now()));
          assert.equal(mine.dataVersion(), v, 'reading changed the version');
          revokeKey(other, k.key.id);
          assert.notEqual(mine.dataVersion(), v);
          // Until the cache polls, it answers from what it holds; its poll, AUTH_POLL_MS on, drops it.
          assert.ok('key' in cache.resolve(k.secret, clock.now()), 'read before the poll');
          clock.advance(AUTH_POLL_MS);
          assert.ok('message' in cache.resolve(k.secret, clock.now()), 'the poll did not drop the revoked key');
        } finally {
          cache.close();
        }
      } finally {
        mine.close();
        other.close();
      }
    });
  });
}

/** The database as it is, without the migration check (to undo the newer-schema test). */
function openControlDbUnchecked(dir: string, control: ControlDbConfig): SqlDatabase {
  return control === null ? openSqlite(controlDbFile(dir)) : new PostgresDb(control);
}

describe('control database: PostgreSQL shared by nodes', () => {
  test('SQLite statements as PostgreSQL: ? and @name parameters numbered, quoted text untouched', () => {
    assert.deepEqual(translate("SELECT * FROM t WHERE a = ? AND b = '?' AND c = ?"), {
      text: "SELECT * FROM t WHERE a = $1 AND b = '?' AND c = $2",
      names: null,
    });
    assert.deepEqual(translate('INSERT INTO t VALUES (@id, @name, @id)'), { text: 'INSERT INTO t VALUES ($1, $2, $1)', names: ['id', 'name'] });
  });

  test('three processes starting on a new database at once: one schema, and 60 organisations numbered 1 to 60', async () => {
    const control = freshControlDb();
    const script = `
      import { openControlDb } from '${PROJECT_ROOT}/dist/src/control/control-db.js';
      import { createOrganisation } from '${PROJECT_ROOT}/dist/src/control/accounts.js';
      import { loadPlans } from '${PROJECT_ROOT}/dist/src/model/plans.js';
      const db = openControlDb('/nonexistent', { url: process.env.U, timeoutMs: 10000 });
      const plans = loadPlans('${plansFile(tempDir())}');
      for (let i = 0; i < 20; i++) createOrganisation(db, plans, 'n' + i, 'free');
      db.close();`;
    const file = writeFile(tempDir(), 'node.mjs', script);
    await Promise.all([0, 1, 2].map(() => run(process.execPath, [file], { env: { ...process.env, U: control.url } })));
    const db = openControlDb(tempDir(), control);
    try {
      const ids = listOrganisations(db)
        .map((o) => o.accountId)
        .sort((x, y) => x - y);
      assert.deepEqual(
        ids,
        Array.from({ length: 60 }, (_, i) => i + 1),
      );
      assert.equal((db.prepare('SELECT COUNT(*) AS n FROM schema_migrations').get() as { n: number }).n, 7);
    } finally {
      db.close();
    }
  });

  test('a flood of made-up keys: past 1 000 uncached lookups a second a thread, misses answer 503 while cached keys go on', () => {
    const dir = tempDir();
    const plans = loadPlans(plansFile(dir));
    const db = openControlDb(dir, freshControlDb());
    const cache = new KeyCache(db, plans);
    try {
      const org = createOrganisation(db, plans, 'Flooded', 'max');
      const { secret } = createKey(db, { orgId: org.id, name: 'k' });
      const now = Date.now();
      assert.ok('key' in cache.resolve(secret, now));
      let refused = 0;
      for (let i = 0; i < 1200; i++) {
        try {
          assert.equal(cache.resolve(`isk_madeup${i}`, now), ERRORS.keyInvalid);
        } catch (e) {
          assert.ok(e instanceof KeyLookupsThrottled);
          refused++;
        }
      }
      assert.equal(refused, 1200 - POSTGRES_LOOKUPS_PER_S + 1); // the real key took one lookup
      assert.ok('key' in cache.resolve(secret, now), 'a cached key was refused');
      assert.equal(cache.resolve('isk_madeup0', now), ERRORS.keyInvalid, 'a refusal is cached too');
      assert.equal(cache.resolve('isk_later', now + 100), ERRORS.keyInvalid, 'the budget refills');
    } finally {
      cache.close();
      db.close();
    }
  });

  test('an unreachable server is refused at start, by name, without its password', () => {
    assert.throws(
      () => openControlDb(tempDir(), { url: 'postgres://ipsift:hunter2@127.0.0.1:1/none', timeoutMs: 500 }),
      (e: unknown) => e instanceof ControlUnavailable && /127\.0\.0\.1:1/.test(e.message) && !e.message.includes('hunter2'),
    );
  });

  test('the server gone: cached keys answer for CONTROL_GRACE_S, new keys and key management 503 with Retry-After; back, all answer', async () => {
    const relay = await startPostgresRelay();
    after(() => relay.stop());
    const base = freshControlDb();
    const control = { url: relay.url(base.url), timeoutMs: 1000 };
    const dataDir = tempDir();
    importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', 'network,category,provider\n81.7.3.0/24,vpn,ExampleVPN\n') });
    runBuild({ dataDir });
    const plans = plansFile(dataDir);
    const db = openControlDb(dataDir, control);
    const org = createOrganisation(db, loadPlans(plans), 'Outage', 'max');
    const [cached, uncached] = [0, 1].map(() => createKey(db, { orgId: org.id, name: 'k', scopes: ['apikeys.manage'] }).secret);
    db.close();
    const lines: { level: string; msg: string }[] = [];
    const keep = (level: string) => (msg: string) => void lines.push({ level, msg });
    const svc = await startTestService(
      { dataDir, plansFile: plans, controlDb: control, controlGraceMs: 3000 },
      { info: keep('info'), warn: keep('warn'), error: keep('error') },
    );
    const auth = (k: string) => ({ authorization: `Bearer ${k}` });
    try {
      assert.equal((await get(svc.port, '/8.8.8.8', auth(cached))).status, 200);
      await relay.stop();
      const t = Date.now();
      assert.equal((await get(svc.port, '/8.8.8.8', auth(cached))).status, 200, 'a cached key stopped working at once');
      const fresh = await get(svc.port, '/8.8.8.8', auth(uncached));
      assert.equal(fresh.status, 503);
      assert.equal(fresh.headers['retry-after'], '1');
      assert.deepEqual(fresh.json, { error: 'service temporarily unavailable' });
      assert.ok(documented('/{ip}', 'get', 503, fresh.json));
      const manage = await request(svc.port, 'POST', '/api/v1/iam/apikeys', JSON.stringify({ name: 'new' }), {
        ...auth(cached),
        'content-type': 'application/json',
      });
      assert.equal(manage.status, 503);
      assert.deepEqual(manage.json, { rc: 'INTERNAL' });
      assert.ok(documented('/api/v1/iam/apikeys', 'post', 503, manage.json));
      const list = await get(svc.port, '/api/v1/database/list', auth(uncached));
      assert.deepEqual([list.status, list.json, list.headers['retry-after']], [503, { rc: 'INTERNAL' }, '1']);
      assert.ok(documented('/api/v1/database/list', 'get', 503, list.json));
      assert.equal(manage.headers['retry-after'], '1');
      // Past the grace period the cache is gone: the cached key too meets the outage.
      await until(async () => (await get(svc.port, '/8.8.8.8', auth(cached))).status !== 200, 6_000, 'the cached key gone after the grace period');
      assert.ok(Date.now() - t >= 2500, `the cache went after ${Date.now() - t} ms, before its grace period`);
      assert.equal((await get(svc.port, '/8.8.8.8', auth(cached))).status, 503);
      assert.equal((await get(svc.port, '/8.8.8.8')).status, 200, 'keyless lookups need no control database');
      // The outage's 503s are expected answers: no handler failure, no error line per request,
      // one warning a while.
      assert.equal(svc.metrics.handlerFailures, 0);
      assert.deepEqual(
        lines.filter((l) => l.level === 'error' && l.msg === 'request handler failed'),
        [],
      );
      const warned = lines.filter((l) => l.level === 'warn' && /unreachable: answering 503/.test(l.msg));
      assert.ok(warned.length >= 1 && warned.length <= 5, `${warned.length} warnings`);
      await relay.start();
      for (const k of [cached, uncached]) {
        await until(async () => (await get(svc.port, '/8.8.8.8', auth(k))).status === 200, 5_000, 'the server came back, the key did not');
      }
      const made = await request(svc.port, 'POST', '/api/v1/iam/apikeys', JSON.stringify({ name: 'new' }), {
        ...auth(cached),
        'content-type': 'application/json',
      });
      assert.equal(made.status, 201);
    } finally {
      await svc.close();
      await relay.stop();
    }
  });
});
