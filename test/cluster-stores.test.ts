// One suite per boundary, run against every store behind it: the suites that exercise the
// control plane and the accounting through the server (keys, plans, quotas and their headers,
// tokens, the operator's API, downloads and their history, geoipupdate, OpenAPI) run here
// again on a cluster node's stores: the control database in PostgreSQL (a fresh database per
// data directory) and the counters in Redis (a redis-server of this file's own, a key prefix
// per data directory); see helpers.testControlDb and testAccounting. Not the hardening suite
// and the fuzzing: their faults are the HTTP server's and the files' (test/again.ts).

import assert from 'node:assert/strict';
import { createClient } from '@redis/client';
import { after, test } from 'node:test';
import { databasesMade, dropDatabases } from './postgres-server.js';
import { REDIS_SERVER, startRedis, type TestRedis } from './redis-server.js';
import { runningAgainOn } from './again.js';

process.env.IPSIFT_TEST_CONTROL = 'postgres';
runningAgainOn('stores');
let redis: TestRedis | null = null;
if (REDIS_SERVER !== null) {
  redis = await startRedis();
  process.env.IPSIFT_TEST_REDIS = redis.url;
  after(() => redis?.kill());
}
after(() => dropDatabases());
await import('./accounts.test.js');
await import('./tokens.test.js');
await import('./operator-api.test.js');
await import('./database.test.js');
await import('./geoipupdate.test.js');
await import('./openapi.test.js');

test('the suites above ran on the cluster stores: databases of their own in PostgreSQL, counters in Redis', async () => {
  assert.ok(databasesMade() >= 6, `${databasesMade()} PostgreSQL databases made`);
  if (redis === null) return;
  const client = createClient({ url: redis.url });
  await client.connect();
  try {
    const counters = await client.keys(`t${process.pid}.*:m:*`);
    assert.ok(counters.length > 0, 'no monthly counter in Redis');
  } finally {
    await client.close();
  }
});
