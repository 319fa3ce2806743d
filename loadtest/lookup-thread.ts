// A bench thread: batched lookups over the shared index, as a batch worker does them.
// Started by bench.ts with the index's SharedArrayBuffer; answers with its elapsed time.

import { parentPort, workerData } from 'node:worker_threads';
import { RangeIndex } from '../src/index/range-index.js';
import { AddressBatch } from '../src/lookup/address-batch.js';
import { MAX_BATCH_ADDRESSES } from '../src/lookup/batch.js';
import { lookupAll } from './lookup-all.js';

interface Job {
  shared: SharedArrayBuffer;
  addresses: string[];
  rounds: number;
}

const { shared, addresses, rounds } = workerData as Job;
const index = new RangeIndex(new Uint8Array(shared), { trusted: true });
const batch = new AddressBatch(MAX_BATCH_ADDRESSES);

lookupAll(addresses, index, batch); // warm-up
parentPort!.postMessage('ready');
parentPort!.once('message', () => {
  const t = performance.now();
  let sum = 0;
  for (let r = 0; r < rounds; r++) sum += lookupAll(addresses, index, batch);
  parentPort!.postMessage({ ms: performance.now() - t, sum });
});
