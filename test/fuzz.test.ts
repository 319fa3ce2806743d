// The seeded fuzzer (fuzz.ts) against a real server with keys, licences and published files:
// no crash, no undocumented status, no 5xx, no handler failure, no HEAD body.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createKey, createOrganisation } from '../src/accounts/accounts.js';
import { openControlDb } from '../src/accounts/control-db.js';
import { loadPlans } from '../src/accounts/plans.js';
import { runBuild } from '../src/build/build.js';
import { grantLicence } from '../src/catalogue/licences.js';
import { publishExports } from '../src/catalogue/publish.js';
import { importFeed } from '../src/feeds/import.js';
import type { Service } from '../src/service.js';
import { LocalStore } from '../src/store/local-store.js';
import { fuzz } from './fuzz.js';
import { get, plansFile, startTestService, tempDir, writeFile } from './helpers.js';

const FEED = `network,category,provider,last_seen
81.7.3.0/24,vpn,ExampleVPN,2026-11-01
2a01:4f8:c012::/48,hosting,Hoster,2026-10-01
${Array.from({ length: 30 }, (_, i) => `82.${2 * i}.0.0/16,vpn,ExampleVPN,2026-11-01`).join('\n')}
`;

describe('fuzzing every route', () => {
  let svc: Service;
  const keys: string[] = [];
  const links: string[] = [];

  before(async () => {
    const dataDir = tempDir();
    importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', FEED) });
    const build = runBuild({ dataDir });
    const file = plansFile(dataDir);
    const db = openControlDb(dataDir);
    const org = createOrganisation(db, loadPlans(file), 'Fuzz', 'max');
    for (const scopes of [['db.download', 'apikeys.manage'], ['db.download'], [], ['apikeys.manage']]) keys.push(createKey(db, { orgId: org.id, name: 'k', scopes }).secret);
    keys.push(createKey(db, { orgId: org.id, name: 'fenced', scopes: ['db.download'], allowedCidrs: ['10.0.0.0/8'] }).secret);
    keys.push('isk_unknown', '');
    grantLicence(db, { orgId: org.id, base: 'vpn', licenseType: 'evaluation', starts: '2026-01-01', expires: '2099-01-01' }, ['vpn']);
    const store = new LocalStore(dataDir);
    await publishExports(db, store, dataDir, build.id);
    db.close();
    links.push(store.signedUrl(`vpn_v1/${build.id}/vpn_v1.csv.gz`, Date.now() + 600_000, 'vpn_v1.csv.gz', ''));
    svc = await startTestService({ dataDir, plansFile: file });
  });
  after(() => svc.close());

  test('4 000 seeded requests: documented statuses only, no 5xx, no handler failure, no HEAD body', async (t) => {
    const r = await fuzz(svc.port, keys, 20261122, 4000, 8, links);
    t.diagnostic(`fuzz: ${r.requests} requests, statuses ${JSON.stringify([...r.byStatus].sort((a, b) => a[0] - b[0]))}`);
    assert.deepEqual(r.problems.slice(0, 10), []);
    assert.deepEqual(r.unanswered.slice(0, 5), []);
    assert.equal(svc.metrics.handlerFailures, 0);
    for (const status of [200, 201, 206, 302, 400, 401, 403, 404, 405, 413]) assert.ok(r.byStatus.has(status), `the fuzzer never reached ${status}`);
    assert.equal((await get(svc.port, '/81.7.3.9')).status, 200, 'the server still answers');
  });
});
