// One suite per boundary, run against every server behind it: the HTTP suites, which run on
// the runtime's default server (uWS where it loads, Bun.serve on Bun) in their own files, run
// here again on node:http. Servers started in this process (helpers.startTestService) and
// `ipsift serve` children both take HTTP_SERVER from the environment. Where node:http already
// is the default (Node 22/24), this file has nothing to add.

import { test } from 'node:test';
import { openServer } from '../src/http/server/open.js';

if ((await openServer('auto', { keepAliveTimeoutMs: 1000 })).server.kind !== 'node') {
  process.env.HTTP_SERVER = 'node';
  await import('./http.test.js');
  await import('./hardening.test.js');
  await import('./fuzz.test.js');
  await import('./database.test.js');
  await import('./accounts.test.js');
  await import('./accounting.test.js');
  await import('./deploy.test.js');
  await import('./resilience.test.js');
  await import('./s3.test.js');
  await import('./geoipupdate.test.js');
  await import('./openapi.test.js');
  await import('./operator-api.test.js');
} else {
  test('the HTTP suites on node:http', { skip: "node:http is this runtime's default server: every suite already ran on it" }, () => {});
}
