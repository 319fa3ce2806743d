// One suite per boundary, run against every server behind it: the HTTP suites, which run on
// the default server (uWS where it loads) in their own files, run here again on node:http.
// Servers started in this process (helpers.startTestService) and `ipsift serve` children both
// take HTTP_SERVER from the environment. Where uWS does not load (Node 22/24), the default
// already is node:http and this file has nothing to add.

import { test } from 'node:test';
import { loadNativeUws } from '../src/http/server/uws.js';

if ('uws' in loadNativeUws()) {
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
} else {
  test('the HTTP suites on node:http', { skip: 'uWS does not load on this runtime: every suite already ran on node:http' }, () => {});
}
