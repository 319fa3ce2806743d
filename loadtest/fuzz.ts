// The long fuzz run (npm run fuzz [requests] [seed]): the suite's seeded fuzzer, for longer,
// against a server with keys, a licence and published files. Prints the outcomes and exits 1
// on any problem.

import { createKey, createOrganisation } from '../src/accounts/accounts.js';
import { openControlDb } from '../src/accounts/control-db.js';
import { loadPlans } from '../src/accounts/plans.js';
import { runBuild } from '../src/build/build.js';
import { grantLicence } from '../src/catalogue/licences.js';
import { publishExports } from '../src/catalogue/publish.js';
import { importFeed } from '../src/feeds/import.js';
import { LocalStore } from '../src/store/local-store.js';
import { fuzz } from '../test/fuzz.js';
import { get, plansFile, startTestService, tempDir, writeFile } from '../test/helpers.js';

const requests = Number(process.argv[2] ?? 200_000);
const seed = Number(process.argv[3] ?? Date.now() % 1_000_000);
const dataDir = tempDir();
const rows = Array.from({ length: 30 }, (_, i) => `82.${2 * i}.0.0/16,vpn,ExampleVPN,2026-11-01`).join('\n');
importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', `network,category,provider,last_seen\n81.7.3.0/24,vpn,ExampleVPN,2026-11-01\n${rows}\n`) });
const build = runBuild({ dataDir });
const file = plansFile(dataDir);
const db = openControlDb(dataDir);
const org = createOrganisation(db, loadPlans(file), 'Fuzz', 'max');
const keys = [['db.download', 'apikeys.manage'], ['db.download'], [], ['apikeys.manage']].map((scopes) => createKey(db, { orgId: org.id, name: 'k', scopes }).secret);
keys.push('isk_unknown', '');
grantLicence(db, { orgId: org.id, base: 'vpn', licenseType: 'evaluation', starts: '2026-01-01', expires: '2099-01-01' }, ['vpn']);
const store = new LocalStore(dataDir);
await publishExports(db, store, dataDir, build.id);
db.close();
const links = [store.signedUrl(`vpn_v1/${build.id}/vpn_v1.csv.gz`, Date.now() + 3_600_000, 'vpn_v1.csv.gz', '')];
const svc = await startTestService({ dataDir, plansFile: file });
const started = Date.now();
const r = await fuzz(svc.port, keys, seed, requests, 16, links);
const alive = (await get(svc.port, '/81.7.3.9')).status === 200;
console.log(`fuzz: seed ${seed}, ${r.requests} requests in ${((Date.now() - started) / 1000).toFixed(1)} s; statuses ${JSON.stringify([...r.byStatus].sort((a, b) => a[0] - b[0]))}; problems ${r.problems.length}; unanswered ${r.unanswered.length}; handler failures ${svc.metrics.handlerFailures}; server alive ${alive}; RSS ${Math.round(process.memoryUsage().rss / 1048576)} MiB`);
for (const p of [...r.problems, ...r.unanswered].slice(0, 10)) console.log(`  ${p.split('\r\n')[0]}`);
await svc.close();
process.exit(r.problems.length || r.unanswered.length || svc.metrics.handlerFailures || !alive ? 1 : 0);
