// The seeded fuzzer (fuzz.ts) against a real server with keys, licences and published files:
// no crash, no undocumented status, no 5xx, no handler failure, no HEAD body.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Service } from '../src/service.js';
import { fuzz } from './fuzz.js';
import { get, publishedDataDir, startTestService } from './helpers.js';


describe('fuzzing every route', () => {
  let svc: Service;
  const keys: string[] = [];
  const links: string[] = [];

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
    svc = await startTestService({ dataDir: d.dataDir, plansFile: d.plans });
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
