// The long fuzz run (npm run fuzz [requests] [seed]): the suite's seeded fuzzer, for longer,
// against a server with keys, a licence and published files. Prints the outcomes and exits 1
// on any problem.

import { fuzz } from '../test/fuzz.js';
import { get, publishedDataDir, startTestService } from '../test/helpers.js';

const requests = Number(process.argv[2] ?? 200_000);
const seed = Number(process.argv[3] ?? Date.now() % 1_000_000);
const d = await publishedDataDir([{ scopes: ['db.download', 'apikeys.manage'] }, { scopes: ['db.download'] }, { scopes: [] }, { scopes: ['apikeys.manage'] }]);
const keys = [...d.keys, 'isk_unknown', ''];
const links = [d.link];
const svc = await startTestService({ dataDir: d.dataDir, plansFile: d.plans });
const started = Date.now();
const r = await fuzz(svc.port, keys, seed, requests, 16, links);
const alive = (await get(svc.port, '/81.7.3.9')).status === 200;
console.log(
  `fuzz: seed ${seed}, ${r.requests} requests in ${((Date.now() - started) / 1000).toFixed(1)} s; statuses ${JSON.stringify([...r.byStatus].sort((a, b) => a[0] - b[0]))}; problems ${r.problems.length}; unanswered ${r.unanswered.length}; handler failures ${svc.metrics.handlerFailures}; server alive ${alive}; RSS ${Math.round(process.memoryUsage().rss / 1048576)} MiB`,
);
for (const p of [...r.problems, ...r.unanswered].slice(0, 10)) console.log(`  ${p.split('\r\n')[0]}`);
await svc.close();
process.exit(r.problems.length || r.unanswered.length || svc.metrics.handlerFailures || !alive ? 1 : 0);
