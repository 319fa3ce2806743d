// The in-process lookup loop of the bench: batches of 1000, parsed all, then searched all.

import type { RangeIndex } from '../src/index/range-index.js';
import type { AddressBatch } from '../src/lookup/address-batch.js';
import { MAX_BATCH_ADDRESSES } from '../src/lookup/batch.js';

/** Looks every address up; returns a checksum of the records so nothing is optimised away. */
export function lookupAll(addresses: readonly string[], index: RangeIndex, batch: AddressBatch): number {
  let sum = 0;
  for (let at = 0; at < addresses.length; at += MAX_BATCH_ADDRESSES) {
    batch.clear();
    const end = Math.min(addresses.length, at + MAX_BATCH_ADDRESSES);
    for (let i = at; i < end; i++) batch.add(addresses[i]);
    batch.resolve(index);
    for (let i = 0; i < batch.count; i++) sum += batch.records[i];
  }
  return sum;
}
