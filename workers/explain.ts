// Explain thread: reads every imported feed for one address (src/build/explain.ts) off the
// admin port's event loop, which is the lookup thread's too.

import { parentPort, workerData } from 'node:worker_threads';
import { explainAddress } from '../src/build/explain.js';

const { dataDir, ip } = workerData as { dataDir: string; ip: string };
parentPort!.postMessage(explainAddress(dataDir, ip));
