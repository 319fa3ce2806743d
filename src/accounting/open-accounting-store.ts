// The accounting store the configuration names (ACCOUNTING=lmdb|redis).

import type { AccountingConfig } from '../config.js';
import { LmdbAccountingStore } from './lmdb-store.js';
import { RedisAccountingStore } from './redis-store.js';
import type { AccountingStore } from './accounting-store.js';

/** `check`: verify the LMDB file first (once per process, at start). */
export function openAccountingStore(accounting: AccountingConfig, dataDir: string, check = false): AccountingStore {
  if (accounting.kind === 'redis') return new RedisAccountingStore(accounting);
  return new LmdbAccountingStore(dataDir, check);
}
