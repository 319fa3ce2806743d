// The seeded fuzzer (fuzz.ts) against a real server with keys, licences and published files:
// no crash, no undocumented status, no 5xx, no handler failure, no HEAD body.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Service } from '../src/service.js';
import { fuzz, operatorTargets } from './fuzz.js';
import { createAdminToken } from '../src/control/admin-tokens.js';
import { Operator } from '../src/control/operator.js';
import { loadPlans } from '../src/model/plans.js';
import { jsonLogger } from '../src/log.js';
import { get, openTestControlDb, publishedDataDir, request, startTestService } from './helpers.js';
import { againOn } from './again.js';

// What a parser lets through: the HTTP server's, again on node:http.
describe('fuzzing every route', againOn('server'), () => {
  let svc: Service;
  const keys: string[] = [];
  const links: string[] = [];
  /** Short-lived tokens (kept apart from keys: the first run's seeded sequence stays as it was). */
  const tokens: string[] = [];
  const operatorTokens: string[] = [];
  let ids = { org: '', key: '' };
  /** The service's warnings and errors: a problem's assertion shows them (a handler failure's reason and stack). */
  const logged: string[] = [];
  const failures = (problems: readonly string[]): string =>
    `${problems.join('\n')}\nthe service logged:\n${
      logged
        .filter((l) => /"level":"(warn|error)"/.test(l))
        .slice(-10)
        .join('') || '(nothing)'
    }`;

  before(async () => {
    const d = await publishedDataDir([
      { scopes: ['db.download', 'apikeys.manage'] },
      { scopes: ['db.download'] },
      { scopes: [] },
      { scopes: ['apikeys.manage'] },
      { scopes: ['db.download'], allowedCidrs: ['10.0.0.0/8'] },
    ]);
    keys.push(...d.keys, 'isk_unknown', '');
    links.push(d.link);
    svc = await startTestService(
      { dataDir: d.dataDir, plansFile: d.plans },
      jsonLogger((l) => void logged.push(l)),
    );
    // A short-lived token of the first key, and one cut short.
    const token = (await request(svc.port, 'POST', '/api/v1/auth/token', '{}', { Authorization: `Bearer ${d.keys[0]}` })).json.token as string;
    tokens.push(token, token.slice(0, -3), `${token.slice(0, -1)}A`);
    const db = openTestControlDb(d.dataDir);
    try {
      operatorTokens.push(
        createAdminToken(db, 'fuzz', ['admin.write']).secret,
        createAdminToken(db, 'fuzz-read', ['admin.read']).secret,
        'iat_unknown',
        keys[0],
        '',
      );
      const op = new Operator({ db, plans: loadPlans(d.plans), bases: [], spent: () => 0, maxKeysPerOrg: 1000 }, { who: 'test', source: 'local' });
      const org = op.createOrganisation('Fuzzed', 'free');
      ids = { org: String(org.id), key: String(op.createKey(String(org.id), { name: 'fuzzed' }).id) };
    } finally {
      db.close();
    }
  });
  after(() => svc.close());

  test('4 000 seeded requests: documented statuses only, no 5xx, no handler failure, no HEAD body', async (t) => {
    const r = await fuzz(svc.port, keys, 20261122, 4000, 8, links);
    t.diagnostic(`fuzz: ${r.requests} requests, statuses ${JSON.stringify([...r.byStatus].sort((a, b) => a[0] - b[0]))}`);
    assert.deepEqual(r.problems.slice(0, 10), [], failures(r.problems.slice(0, 10)));
    assert.deepEqual(r.unanswered.slice(0, 5), []);
    assert.equal(svc.metrics.handlerFailures, 0);
    for (const status of [200, 201, 206, 302, 400, 401, 403, 404, 405, 413]) assert.ok(r.byStatus.has(status), `the fuzzer never reached ${status}`);
    assert.equal((await get(svc.port, '/81.7.3.9')).status, 200, 'the server still answers');
  });

  test('1 000 seeded requests with short-lived tokens among the credentials: documented statuses only, no 5xx', async (t) => {
    const before = svc.metrics.handlerFailures;
    const r = await fuzz(svc.port, [...tokens, ...keys.slice(0, 2)], 20261125, 1000, 4, links);
    t.diagnostic(`token fuzz: ${r.requests} requests, statuses ${JSON.stringify([...r.byStatus].sort((a, b) => a[0] - b[0]))}`);
    assert.deepEqual(r.problems.slice(0, 10), [], failures(r.problems.slice(0, 10)));
    assert.deepEqual(r.unanswered.slice(0, 5), []);
    assert.equal(svc.metrics.handlerFailures, before);
    assert.ok(![...r.byStatus.keys()].some((s) => s >= 500), 'no 5xx');
    assert.ok(r.byStatus.has(200) && r.byStatus.has(401));
  });

  test('2 000 seeded requests on the operator API (admin port): documented statuses only, no 5xx (no handler failure)', async (t) => {
    const r = await fuzz(svc.adminPort, operatorTokens, 20261124, 2000, 4, [], operatorTargets(ids));
    t.diagnostic(`operator fuzz: ${r.requests} requests, statuses ${JSON.stringify([...r.byStatus].sort((a, b) => a[0] - b[0]))}`);
    assert.deepEqual(r.problems.slice(0, 10), [], failures(r.problems.slice(0, 10)));
    assert.deepEqual(r.unanswered.slice(0, 5), []);
    // A handler failure answers 500 (the admin port counts its own): none may appear.
    assert.ok(![...r.byStatus.keys()].some((s) => s >= 500), 'no 5xx');
    for (const status of [200, 201, 400, 401, 403, 404, 405]) assert.ok(r.byStatus.has(status), `the fuzzer never reached ${status}`);
    assert.equal((await get(svc.adminPort, '/healthz')).status, 200, 'the admin port still answers');
  });
});
