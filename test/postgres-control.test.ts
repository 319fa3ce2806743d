// One suite per boundary, run against every store behind it: the suites that exercise the
// control plane through the server (keys, plans, tokens, the operator's API, downloads and
// their history, geoipupdate, OpenAPI, fuzzing every route) run here again with the control
// database in PostgreSQL, a fresh database per data directory (helpers.testControlDb). The
// hardening suite is not among them: its faults are the HTTP server's and the files', and it
// is the longest (36 s a runtime).

import { after } from 'node:test';
import { dropDatabases } from './postgres-server.js';

process.env.IPSIFT_TEST_CONTROL = 'postgres';
after(() => dropDatabases());
await import('./accounts.test.js');
await import('./tokens.test.js');
await import('./operator-api.test.js');
await import('./database.test.js');
await import('./geoipupdate.test.js');
await import('./openapi.test.js');
await import('./fuzz.test.js');
