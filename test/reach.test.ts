// One customer's reach: what a key holder can make the service hold and do (keys capped and
// their changes rate-limited, every list paged), what reaches an operator's terminal (names
// checked at input, escaped at output), and refusals that say what is wrong.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { createKey, createOrganisation } from '../src/control/accounts.js';
import { createAdminToken } from '../src/control/admin-tokens.js';
import { loadPlans } from '../src/model/plans.js';
import { listLimit } from '../src/control/operator.js';
import { jsonLogger } from '../src/log.js';
import type { Service } from '../src/service.js';
import { PROJECT_ROOT, get, openTestControlDb, publishedDataDir, request, startTestService, testStoreEnv, type PublishedDataDir } from './helpers.js';

const run = promisify(execFile);

describe("one customer's reach", () => {
  let d: PublishedDataDir;
  let svc: Service;
  let manager: string;
  let lookupOnly: string;
  let operator: string;
  let orgId: string;
  const MAX_KEYS = 6;
  const CHANGES_PER_MIN = 9;

  const auth = (key: string): Record<string, string> => ({ Authorization: `Bearer ${key}` });
  const createKeyCall = (body: unknown, key = manager) =>
    request(svc.port, 'POST', '/api/v1/iam/apikeys', typeof body === 'string' ? body : JSON.stringify(body), {
      ...auth(key),
      'Content-Type': 'application/json',
    });

  before(async () => {
    // Keys: [0] manages keys and downloads, [1] can only look up.
    d = await publishedDataDir([{ scopes: ['apikeys.manage', 'db.download'] }, { scopes: [] }]);
    [manager, lookupOnly] = d.keys;
    const db = openTestControlDb(d.dataDir);
    try {
      operator = createAdminToken(db, 'ops', ['admin.write']).secret;
      orgId = (db.prepare('SELECT id FROM organisations').get() as { id: string }).id;
    } finally {
      db.close();
    }
    svc = await startTestService({ dataDir: d.dataDir, plansFile: d.plans, maxKeysPerOrg: MAX_KEYS, keyChangesPerMinute: CHANGES_PER_MIN });
  });
  after(async () => svc?.close());

  test("a key without db.download is told which scope it lacks, with the contract's 401 and rc", async () => {
    const r = await get(svc.port, '/api/v1/database/list', auth(lookupOnly));
    assert.equal(r.status, 401);
    assert.equal(r.json.rc, 'UNAUTHORIZED');
    assert.match(r.json.message, /lacks the db\.download scope/);
    const wrong = await get(svc.port, '/api/v1/database/list', auth('isk_wrong'));
    assert.deepEqual([wrong.status, wrong.json.rc, wrong.json.message], [401, 'UNAUTHORIZED', 'invalid API key']);
    const none = await get(svc.port, '/api/v1/database/download?id=vpn_v1&format=csvgz');
    assert.deepEqual([none.status, none.json.rc], [401, 'UNAUTHORIZED']);
    assert.match(none.json.message, /db\.download scope is required/);
    // geoipupdate's endpoint says the same, behind its Basic challenge.
    const account = (await get(svc.port, '/api/v1/account/me', auth(lookupOnly))).json;
    const db = openTestControlDb(d.dataDir);
    const accountId = (db.prepare('SELECT account_id FROM organisations WHERE id = ?').get(account.org_id) as { account_id: number }).account_id;
    db.close();
    const basic = `Basic ${Buffer.from(`${accountId}:${lookupOnly}`).toString('base64')}`;
    const geo = await get(svc.port, '/geoip/databases/vpn_v1/update', { Authorization: basic });
    assert.equal(geo.status, 401);
    assert.match(geo.json.message, /lacks the db\.download scope/);
  });

  test('a key-creation body that is wrong says what is wrong', async () => {
    const cases: [unknown, RegExp][] = [
      ['{', /JSON object/],
      [[], /JSON object/],
      [{}, /name is required/],
      [{ name: 'x', allowed_scopes: 'db.download' }, /allowed_scopes must be an array/],
      [{ name: 'x', allowed_scopes: ['db.upload'] }, /^allowed_scopes\[0\] must be one of db\.download, apikeys\.manage, changes\.read, not "db\.upload"$/],
      [{ name: 'x', scopes: ['db.download'] }, /^unknown field "scopes": this body takes name, allowed_scopes, allowed_cidrs, expires$/],
      [{ name: 'x', lifetime_s: 5 }, /^unknown field "lifetime_s"/],
      // A field name of the client's length comes back cut short.
      [{ name: 'x', ['y'.repeat(300)]: 1 }, /^unknown field "y{80}": this body takes/],
      [{ name: 'x', allowed_cidrs: ['nope'] }, /not a CIDR/],
      [{ name: 'x', expires: 'tomorrow' }, /ISO 8601/],
      [{ name: 'x'.repeat(201) }, /1 to 200 characters/],
    ];
    for (const [body, message] of cases) {
      const r = await createKeyCall(body);
      assert.deepEqual([r.status, r.json.rc], [400, 'BAD_REQUEST'], JSON.stringify(body));
      assert.match(r.json.message, message, JSON.stringify(body));
    }
  });

  test('names with control or bidirectional characters are refused, keys and organisations alike', async () => {
    const forged = 'ci\u001b]0;owned\u0007\u001b[2J\nFAKE key line';
    for (const name of [forged, 'tab\there', 'csi\u009b2J', 'bidi\u202eevil']) {
      const r = await createKeyCall({ name });
      assert.equal(r.status, 400, JSON.stringify(name));
      assert.match(r.json.message, /control, invisible or bidirectional/);
    }
    const org = await request(svc.adminPort, 'POST', '/admin/v1/organizations', JSON.stringify({ name: forged, plan: 'max' }), auth(operator));
    assert.deepEqual([org.status, org.json.rc], [400, 'BAD_REQUEST']);
    assert.match(org.json.message, /control, invisible or bidirectional/);
    const long = await request(svc.adminPort, 'POST', '/admin/v1/organizations', JSON.stringify({ name: 'o'.repeat(201), plan: 'max' }), auth(operator));
    assert.match(long.json.message, /1 to 200 characters/, 'one length limit for both');
  });

  test('KEY_CHANGES_PER_MIN is exact when two front-end threads race on one SQLite database', async () => {
    const db = openTestControlDb(d.dataDir);
    let racer: string;
    let target: string;
    try {
      const o = createOrganisation(db, loadPlans(d.plans), 'Racing Co', 'max');
      racer = createKey(db, { orgId: o.id, name: 'racer', scopes: ['apikeys.manage'] }).secret;
      target = createKey(db, { orgId: o.id, name: 'target' }).key.id;
    } finally {
      db.close();
    }
    const two = await startTestService({ dataDir: d.dataDir, plansFile: d.plans, frontendThreads: 2, keyChangesPerMinute: 60 });
    try {
      // New connections, all at once: the kernel spreads them over both threads.
      const statuses = await Promise.all(
        Array.from({ length: 300 }, () => request(two.port, 'POST', `/api/v1/iam/apikeys/${target}/rotate`, undefined, auth(racer)).then((r) => r.status)),
      );
      assert.deepEqual(
        [statuses.filter((s) => s === 200).length, statuses.filter((s) => s === 429).length],
        [60, 240],
        `statuses: ${[...new Set(statuses)].join(', ')}`,
      );
    } finally {
      await two.close();
    }
  });

  test('names that would mislead are refused or normalised: lone surrogates, invisible characters, lookalike spaces and compositions', async () => {
    // Another organisation's manager: the keys made here leave this suite's limits alone.
    const setup = openTestControlDb(d.dataDir);
    let own: string;
    try {
      const o = createOrganisation(setup, loadPlans(d.plans), 'Names Co', 'max');
      own = createKey(setup, { orgId: o.id, name: 'm', scopes: ['apikeys.manage'] }).secret;
    } finally {
      setup.close();
    }
    const createKeyCall = (body: unknown) =>
      request(svc.port, 'POST', '/api/v1/iam/apikeys', typeof body === 'string' ? body : JSON.stringify(body), {
        ...auth(own),
        'Content-Type': 'application/json',
      });
    // Raw JSON text: a lone surrogate cannot be written from a JavaScript string through JSON.stringify.
    const lone = await createKeyCall('{"name":"ab\\ud800cd"}');
    assert.deepEqual([lone.status, lone.json.message], [400, "a key's name is not well-formed Unicode (a lone surrogate U+D800 at 2)"]);
    const invisible: [string, string][] = [
      ['zero\u200bwidth', 'U+200B'],
      ['join\u200der', 'U+200D'],
      ['\ufeffbom', 'U+FEFF'],
      ['tag\u{e0041}ged', 'U+E0041'],
      ['mark\u200eltr', 'U+200E'],
      ['soft\u00adhyphen', 'U+00AD'],
      ['filler\u3164', 'U+3164'],
      ['private\ue000use', 'U+E000'],
      // Default-ignorable code points that are not format characters, and a blank that draws nothing.
      ['ac\u034fme', 'U+034F'],
      ['acme\ufe0f', 'U+FE0F'],
      ['ac\u2800me', 'U+2800'],
    ];
    for (const [name, code] of invisible) {
      const r = await createKeyCall({ name });
      assert.equal(r.status, 400, JSON.stringify(name));
      assert.match(
        r.json.message,
        new RegExp(`^a key's name may not hold control, invisible or bidirectional characters \\(${code.replace('+', '\\+')} at \\d+\\)$`),
        JSON.stringify(name),
      );
    }
    // Bytes that are not UTF-8 are refused, not stored as U+FFFD.
    const raw = await request(svc.port, 'POST', '/api/v1/iam/apikeys', Buffer.from([...Buffer.from('{"name":"ab'), 0xff, 0xfe, ...Buffer.from('"}')]), {
      ...auth(own),
      'Content-Type': 'application/json',
    });
    assert.deepEqual([raw.status, raw.json.message], [400, 'body is not UTF-8: send JSON text encoded as UTF-8']);
    // Decomposed é (e + U+0301) and a no-break space: stored composed, with a plain space, trimmed.
    const made = await createKeyCall({ name: '  Cafe\u0301\u00a0ci ' });
    assert.equal(made.status, 201, made.text);
    assert.equal(made.json.name, 'Caf\u00e9 ci');
    const org = await request(svc.adminPort, 'POST', '/admin/v1/organizations', JSON.stringify({ name: '\u3000Acme\u2003Ltd', plan: 'max' }), auth(operator));
    assert.deepEqual([org.status, org.json.name], [201, 'Acme Ltd']);
    const db = openTestControlDb(d.dataDir);
    try {
      assert.throws(() => createAdminToken(db, 'ops\u2060x', ['admin.read']), /invisible/);
      assert.equal(createAdminToken(db, ' ops ', ['admin.read']).token.name, 'ops');
    } finally {
      db.close();
    }
  });

  test("a name stored before the check prints escaped in the operator's terminal", async () => {
    const db = openTestControlDb(d.dataDir);
    try {
      // As an older version let it in: straight into the table.
      db.prepare("UPDATE api_keys SET name = ? WHERE name = 'k1'").run('ci\u001b]0;owned\u0007\u001b[2J\nFAKE key line\u009b\u202e');
    } finally {
      db.close();
    }
    const { stdout } = await run(process.execPath, [path.join(PROJECT_ROOT, 'dist/src/cli.js'), 'org', 'show', orgId], {
      env: { ...process.env, ...testStoreEnv(d.dataDir) },
    });
    assert.doesNotMatch(stdout, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/, 'no control character reaches the terminal');
    assert.ok(stdout.includes('ci\\u001b]0;owned\\u0007\\u001b[2J\\u000aFAKE key line\\u009b\\u202e'), stdout);
    assert.ok(!/^FAKE/m.test(stdout), 'no forged line');
  });

  test('log lines carry no character a terminal acts on, whatever a client put in a path', () => {
    const lines: string[] = [];
    jsonLogger((l) => lines.push(l)).info('request', { path: '/a\u009b2J\u202eb\u001b[2J\u2028' });
    assert.doesNotMatch(lines[0], /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e]/);
    assert.equal((JSON.parse(lines[0]) as { path: string }).path, '/a\u009b2J\u202eb\u001b[2J\u2028', 'the JSON reads back the same');
  });

  test('keys are capped per organisation, and key changes are rate-limited', async () => {
    // Two keys exist; the cap is MAX_KEYS live keys.
    const made: string[] = [];
    for (let i = 0; i < MAX_KEYS - 2; i++) {
      const r = await createKeyCall({ name: `churn-${i}` });
      assert.equal(r.status, 201);
      made.push(r.json.id);
    }
    const over = await createKeyCall({ name: 'one-too-many' });
    assert.deepEqual([over.status, over.json.rc], [409, 'KEY_LIMIT']);
    assert.match(over.json.message, /revoke keys/);
    // A revoked key frees its place.
    assert.equal((await request(svc.port, 'DELETE', `/api/v1/iam/apikeys/${made[0]}`, undefined, auth(manager))).status, 200);
    assert.equal((await createKeyCall({ name: 'in-its-place' })).status, 201);
    // Changes so far this minute: 4 creates, 1 revoke, 1 create; the limit is CHANGES_PER_MIN.
    for (let i = 1; i < 4; i++) assert.equal((await request(svc.port, 'DELETE', `/api/v1/iam/apikeys/${made[i]}`, undefined, auth(manager))).status, 200);
    const throttled = await createKeyCall({ name: 'too-fast' });
    assert.deepEqual([throttled.status, throttled.json.rc], [429, 'RATE_LIMITED']);
    assert.ok(Number(throttled.headers['retry-after']) >= 1 && Number(throttled.headers['retry-after']) <= 60);
    assert.match(throttled.json.message, /KEY_CHANGES_PER_MIN/);
    const rotate = await request(svc.port, 'POST', `/api/v1/iam/apikeys/${made[3]}/rotate`, undefined, auth(manager));
    assert.equal(rotate.status, 400, 'a revoked key is refused before the throttle');
    // The operator's API obeys the cap too, and says so.
    const db = openTestControlDb(d.dataDir);
    try {
      const plans = loadPlans(d.plans);
      const other = createOrganisation(db, plans, 'Other', 'max');
      for (let i = 0; i < MAX_KEYS; i++) createKey(db, { orgId: other.id, name: `o${i}` });
      const r = await request(svc.adminPort, 'POST', `/admin/v1/organizations/${other.id}/keys`, JSON.stringify({ name: 'over' }), auth(operator));
      assert.deepEqual([r.status, r.json.rc], [409, 'CONFLICT']);
      assert.match(r.json.message, /MAX_KEYS_PER_ORG/);
    } finally {
      db.close();
    }
  });

  test("a key list's cursor is one of the caller's own keys: another organisation's id is refused as an unknown one is", async () => {
    const db = openTestControlDb(d.dataDir);
    let foreign: string;
    try {
      const other = createOrganisation(db, loadPlans(d.plans), 'Cursor Other', 'max');
      foreign = createKey(db, { orgId: other.id, name: 'theirs' }).key.id;
    } finally {
      db.close();
    }
    const unknown = await get(svc.port, '/api/v1/iam/apikeys?after=00000000-0000-0000-0000-000000000000', auth(manager));
    const theirs = await get(svc.port, `/api/v1/iam/apikeys?after=${foreign}`, auth(manager));
    assert.deepEqual(
      [theirs.status, theirs.json],
      [400, { rc: 'BAD_REQUEST', message: "after must be the next of an earlier page of this organisation's keys" }],
    );
    assert.deepEqual([unknown.status, unknown.json], [theirs.status, theirs.json], 'the same answer: no oracle for ids or creation order');
    const admin = await get(svc.adminPort, `/admin/v1/organizations/${orgId}/keys?after=${foreign}`, auth(operator));
    assert.deepEqual([admin.status, admin.json.rc], [400, 'BAD_REQUEST']);
    const own = (await get(svc.port, '/api/v1/iam/apikeys?limit=1', auth(manager))).json.next;
    if (own) assert.equal((await get(svc.port, `/api/v1/iam/apikeys?after=${own}`, auth(manager))).status, 200);
  });

  test('every list is paged with one limit rule: the public key list and the admin organisation and key lists', async () => {
    const keys: string[] = [];
    let after = '';
    for (;;) {
      const r = await get(svc.port, `/api/v1/iam/apikeys?limit=2${after ? `&after=${after}` : ''}`, auth(manager));
      assert.equal(r.status, 200);
      assert.ok(r.json.apikeys.length <= 2);
      keys.push(...r.json.apikeys.map((k: { id: string }) => k.id));
      if (r.json.next === null) break;
      after = r.json.next;
    }
    const all = await get(svc.port, '/api/v1/iam/apikeys?limit=200', auth(manager));
    assert.deepEqual(
      keys,
      all.json.apikeys.map((k: { id: string }) => k.id),
    );
    assert.equal(new Set(keys).size, keys.length);
    assert.equal(all.json.next, null);
    const orgs = await get(svc.adminPort, '/admin/v1/organizations?limit=1', auth(operator));
    assert.deepEqual([orgs.status, orgs.json.organizations.length, typeof orgs.json.next], [200, 1, 'string']);
    const page2 = await get(svc.adminPort, `/admin/v1/organizations?limit=1&after=${orgs.json.next}`, auth(operator));
    assert.notEqual(page2.json.organizations[0].id, orgs.json.organizations[0].id);
    const adminKeys = await get(svc.adminPort, `/admin/v1/organizations/${orgId}/keys?limit=1`, auth(operator));
    assert.deepEqual([adminKeys.json.apikeys.length, typeof adminKeys.json.next], [1, 'string']);
    // One rule: any whole number from 1 is taken, at most 200; anything else is refused, everywhere.
    for (const big of ['201', '10000', '1000000000', '99999999999999999999']) {
      for (const p of [`/api/v1/iam/apikeys?limit=${big}`, `/api/v1/database/downloads?limit=${big}`])
        assert.equal((await get(svc.port, p, auth(manager))).status, 200, p);
      for (const p of [`/admin/v1/audit?limit=${big}`, '/admin/v1/organizations?limit=' + big])
        assert.equal((await get(svc.adminPort, p, auth(operator))).status, 200, p);
    }
    for (const bad of ['0', '-1', '1e9', '2.5', 'ten']) {
      const r = await get(svc.port, `/api/v1/iam/apikeys?limit=${bad}`, auth(manager));
      assert.deepEqual([r.status, r.json.rc], [400, 'BAD_REQUEST'], bad);
      assert.match(r.json.message, /whole number/);
      assert.equal((await get(svc.adminPort, `/admin/v1/audit?limit=${bad}`, auth(operator))).status, 400, bad);
      assert.equal((await get(svc.port, `/api/v1/database/downloads?limit=${bad}`, auth(manager))).status, 400, bad);
    }
    assert.deepEqual([listLimit(null), listLimit('7'), listLimit('201'), listLimit('1' + '0'.repeat(30))], [50, 7, 200, 200]);
    // The CLI reads --limit by the same rule.
    const audit = (limit: string) =>
      run(process.execPath, [path.join(PROJECT_ROOT, 'dist/src/cli.js'), 'audit', '--limit', limit, '--json'], {
        env: { ...process.env, ...testStoreEnv(d.dataDir) },
      }).then(
        () => 0,
        (e: { code: number }) => e.code,
      );
    assert.deepEqual([await audit('500'), await audit('0')], [0, 2]);
  });

  test('key lists have a budget per organisation: a flood of pages is refused at once, with Retry-After', async () => {
    const statuses: number[] = [];
    let retry = '';
    for (let i = 0; i < 140; i++) {
      const r = await get(svc.port, '/api/v1/iam/apikeys?limit=200', auth(manager));
      statuses.push(r.status);
      if (r.status === 429) {
        retry = String(r.headers['retry-after']);
        assert.equal(r.json.rc, 'RATE_LIMITED');
      }
    }
    // The budget (100 at once, 20 a second) is the organisation's, shared with the pages above.
    const served = statuses.filter((s) => s === 200).length;
    assert.ok(served >= 1 && served <= 125, statuses.join(' '));
    assert.ok(statuses.includes(429), 'the budget held');
    assert.ok(Number(retry) >= 1);
  });

  test('the OpenAPI document is compressed once per coding, then served from memory, on both ports', async () => {
    const calls = { br: 0, gzip: 0 };
    const { brotliCompressSync, gzipSync } = zlib;
    zlib.brotliCompressSync = ((...a: Parameters<typeof brotliCompressSync>) => (calls.br++, brotliCompressSync(...a))) as typeof brotliCompressSync;
    zlib.gzipSync = ((...a: Parameters<typeof gzipSync>) => (calls.gzip++, gzipSync(...a))) as typeof gzipSync;
    try {
      const bodies: Record<string, Set<string>> = { br: new Set(), gzip: new Set() };
      for (let i = 0; i < 20; i++) {
        for (const coding of ['br', 'gzip'] as const) {
          for (const [port, p] of [
            [svc.port, '/api/v1/openapi.json'],
            [svc.adminPort, '/openapi.json'],
          ] as const) {
            const r = await get(port, p, { 'Accept-Encoding': coding });
            assert.deepEqual([r.status, r.headers['content-encoding']], [200, coding]);
            bodies[coding].add(r.text);
          }
        }
      }
      assert.ok(calls.br <= 1 && calls.gzip <= 1, `compressed ${calls.br} (br) and ${calls.gzip} (gzip) times for 40 answers each`);
      assert.equal(bodies.br.size, 1);
      const plain = await get(svc.port, '/api/v1/openapi.json');
      assert.equal(plain.headers['content-encoding'], undefined);
      assert.equal(JSON.parse(plain.text).openapi, '3.1.0');
    } finally {
      zlib.brotliCompressSync = brotliCompressSync;
      zlib.gzipSync = gzipSync;
    }
  });
});
