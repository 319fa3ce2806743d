// `npm run bench:runtimes`: the per-runtime table alone (loadtest/runtimes.ts) on the bench's data.

import os from 'node:os';
import { out, prepareBuild, scaleKey } from './kit.js';
import { benchRuntimes } from './runtimes.js';

out(`ipsift bench per runtime — ${os.cpus().length} cores, ${new Date().toISOString()}`);
const dataDir = await prepareBuild();
await benchRuntimes(dataDir, scaleKey(dataDir));
