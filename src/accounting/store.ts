// Shared counters in LMDB (DATA_DIR/accounting.lmdb): allowance spent per window and token
// buckets, for every thread and process on the node. Each change is one synchronous write
// transaction, so it is atomic across processes (LMDB's writer lock); callers lease units in
// blocks (see meter.ts), so a transaction is made per lease, not per request.
//
// Durability: commits are not fsynced (noSync). A crashed or killed process loses nothing
// it committed — the pages are in the OS cache — only a machine crash can lose the last
// seconds of counts.

import path from 'node:path';
import { open, type RootDatabase } from 'lmdb';

export const ACCOUNTING_DIR = 'accounting.lmdb';

type Bucket = [tokens: number, atMs: number];

export class AccountingStore {
  private readonly db: RootDatabase<number | Bucket, string>;

  constructor(dataDir: string) {
    this.db = open<number | Bucket, string>({ path: path.join(dataDir, ACCOUNTING_DIR), noSync: true, cache: false });
  }

  /** Units spent (granted) on a counter. */
  spent(counter: string): number {
    return (this.db.get(counter) as number | undefined) ?? 0;
  }

  /**
   * Grants `need` units plus up to `extra` more, never taking the counter past `limit`
   * (null: no limit). Near the limit the extra shrinks, so few units sit unused in leases.
   * Returns the units granted and the counter after the grant.
   */
  reserve(counter: string, need: number, extra: number, limit: number | null): { granted: number; spent: number } {
    return this.db.transactionSync(() => {
      const spent = (this.db.get(counter) as number | undefined) ?? 0;
      let granted: number;
      if (limit === null) granted = need + extra;
      else {
        const room = Math.max(0, limit - spent);
        granted = Math.min(room, need + Math.min(extra, Math.floor(Math.max(0, room - need) / 16)));
      }
      if (granted > 0) this.db.putSync(counter, spent + granted);
      return { granted, spent: spent + granted };
    });
  }

  /** Gives back units granted but not used. */
  release(counter: string, units: number): void {
    if (units <= 0) return;
    this.db.transactionSync(() => {
      const spent = (this.db.get(counter) as number | undefined) ?? 0;
      this.db.putSync(counter, Math.max(0, spent - units));
    });
  }

  /**
   * Takes up to `want` whole tokens from a token bucket (rate per second, capacity burst).
   * Returns the tokens granted and those left in the bucket after the grant.
   */
  takeTokens(bucket: string, want: number, perSecond: number, burst: number, nowMs: number): { granted: number; left: number } {
    return this.db.transactionSync(() => {
      const b = this.db.get(bucket) as Bucket | undefined;
      let tokens = burst;
      if (b) tokens = Math.min(burst, b[0] + (Math.max(0, nowMs - b[1]) / 1000) * perSecond);
      const granted = Math.max(0, Math.min(want, Math.floor(tokens)));
      tokens -= granted;
      this.db.putSync(bucket, [tokens, nowMs]);
      return { granted, left: tokens };
    });
  }

  /** Deletes counters whose key starts with `prefix` and sorts before `before` (old windows). */
  prune(prefix: string, before: string): number {
    let n = 0;
    this.db.transactionSync(() => {
      for (const key of this.db.getKeys({ start: prefix, end: before })) {
        if (!key.startsWith(prefix)) break;
        this.db.removeSync(key);
        n++;
      }
    });
    return n;
  }

  close(): Promise<void> {
    return this.db.close();
  }
}
