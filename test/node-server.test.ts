// One suite per boundary, run against every server behind it: the HTTP suites, which run on
// the default server (uWS where it loads) in their own files, run here again on node:http.
// Servers started in this process (helpers.startTestService) and `ipsift serve` children both
// take HTTP_SERVER from the environment.

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
