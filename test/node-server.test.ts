// One suite per boundary, run against every server behind it: the HTTP suites, which run on
// the runtime's default server (uWS where it loads, Bun.serve on Bun) in their own files, run
// here again on node:http. Servers started in this process (helpers.startTestService) and
// `ipsift serve` children both take HTTP_SERVER from the environment. Where node:http already
// is the default (Node 22/24), this file has nothing to add.

import { test } from 'node:test';
import { openServer } from '../src/http/server/open.js';
import { runningAgainOn } from './again.js';

if ((await openServer('auto', { keepAliveTimeoutMs: 1000 })).server.kind !== 'node') {
  process.env.HTTP_SERVER = 'node';
  runningAgainOn('server');
  await import('./http.test.js');
  await import('./hardening.test.js');
  await import('./fuzz.test.js');
  await import('./database.test.js');
  await import('./accounts.test.js');
  await import('./deploy.test.js');
  await import('./resilience.test.js');
  await import('./geoipupdate.test.js');
  await import('./openapi.test.js');
  // Not again here, for their checks are not the server's: accounting.test (the meters and
  // stores behind the answers; the answer a meter defers is http-server.test's, on every
  // server), s3.test (the object store), operator-api.test (the admin API's logic: its routes
  // and answers on this server are walked by openapi.test above).
} else {
  test('the HTTP suites on node:http', { skip: "node:http is this runtime's default server: every suite already ran on it" }, () => {});
}
