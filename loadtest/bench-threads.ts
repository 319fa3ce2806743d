// `npm run bench:threads`: the front-end thread table alone (loadtest/threads.ts) on the bench's data.

import os from 'node:os';
import { out, prepareBuild, scaleKey } from './kit.js';
import { benchThreads } from './threads.js';

out(`ipsift bench of front-end threads — ${os.availableParallelism()} cores, Node ${process.version}, ${new Date().toISOString()}`);
const dataDir = await prepareBuild();
await benchThreads(dataDir, scaleKey(dataDir));
