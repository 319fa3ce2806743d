// Shared counters in LMDB (DATA_DIR/accounting.lmdb): allowance spent per window and token
// buckets, for every thread and process on the node. Each change is one synchronous write
// transaction, so it is atomic across processes (LMDB's writer lock); callers lease units in
// blocks (see meter.ts), so a transaction is made per lease, not per request.
//
// Durability: commits are not fsynced (noSync). A crashed or killed process loses nothing
// it committed — the pages are in the OS cache — only a machine crash can lose the last
// seconds of counts.

import fs from 'node:fs';
import { open, type RootDatabase } from 'lmdb';
import { checkAccountingFile } from './check-store.js';
import { IpsiftError } from '../errors.js';
import { grantFor, type AccountingStore } from './accounting-store.js';
import { accountingDir } from '../data-dir.js';

/**
 * Writes stop while the disk has less free space than this: LMDB does not survive ENOSPC (it
 * prints to stdout and then corrupts its heap: malloc aborts the process), so the store never
 * lets a write meet a full disk. The Meter counts in memory meanwhile (degraded mode).
 */
export const MIN_FREE_BYTES = 32 * 1024 * 1024;

/** The store refuses writes: the disk is (nearly) full. */
export class DiskFullError extends IpsiftError {
  constructor(dir: string, free: number) {
    super(
      'DISK_FULL',
      `${dir}: ${Math.floor(free / 1048576)} MiB free, under the ${MIN_FREE_BYTES / 1048576} MiB accounting needs to write safely; free some space`,
    );
  }
}

type Bucket = [tokens: number, atMs: number];

export class LmdbAccountingStore implements AccountingStore {
  private readonly db: RootDatabase<number | Bucket, string>;
  private readonly dir: string;

  /** Opens the data directory's store; `check`: verify the file first (once per process, at start). */
  constructor(dataDir: string, check = false) {
    const file = accountingDir(dataDir);
    this.dir = dataDir;
    if (check) checkAccountingFile(file);
    this.db = open<number | Bucket, string>({ path: file, noSync: true, cache: false });
    // Keyless clients' addresses are in the keys: personal data, readable by the owner only.
    for (const f of [file, `${file}-lock`]) {
      try {
        fs.chmodSync(f, 0o600);
      } catch {
        // another user's file: left as it is
      }
    }
  }

  /** Throws DiskFullError unless a write can safely go ahead (a statfs: about 2 µs). */
  private writable(): void {
    const s = fs.statfsSync(this.dir);
    const free = s.bavail * s.bsize;
    if (free < MIN_FREE_BYTES) throw new DiskFullError(this.dir, free);
  }

  spent(counter: string): number {
    return (this.db.get(counter) as number | undefined) ?? 0;
  }

  reserve(counter: string, need: number, extra: number, limit: number | null): { granted: number; spent: number } {
    this.writable();
    return this.db.transactionSync(() => {
      const spent = (this.db.get(counter) as number | undefined) ?? 0;
      const granted = grantFor(spent, need, extra, limit);
      if (granted > 0) this.db.putSync(counter, spent + granted);
      return { granted, spent: spent + granted };
    });
  }

  release(counter: string, units: number): void {
    if (units <= 0) return;
    this.writable();
    this.db.transactionSync(() => {
      const spent = (this.db.get(counter) as number | undefined) ?? 0;
      this.db.putSync(counter, Math.max(0, spent - units));
    });
  }

  takeTokens(bucket: string, want: number, perSecond: number, burst: number, nowMs: number): { granted: number; left: number } {
    this.writable();
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

  /** A bounded number of keys per write transaction, so that writers never wait long. */
  prune(dayBefore: string, monthBefore: string, bucketIdleMs: number, nowMs: number): number {
    this.writable();
    let n = this.removeWhere({ start: 'd:', end: `d:${dayBefore}` }, () => true);
    n += this.removeWhere({ start: 'm:', end: `m:${monthBefore}` }, () => true);
    n += this.removeWhere({ start: 'r:', end: 'r;' }, (v) => Array.isArray(v) && nowMs - v[1] >= bucketIdleMs);
    return n;
  }

  private removeWhere(range: { start: string; end: string }, stale: (v: number | Bucket) => boolean): number {
    const CHUNK = 1000;
    let n = 0;
    let start = range.start;
    for (;;) {
      let last: string | null = null;
      let seen = 0;
      this.db.transactionSync(() => {
        for (const { key, value } of this.db.getRange({ start, end: range.end, limit: CHUNK })) {
          last = key;
          seen++;
          if (stale(value)) {
            this.db.removeSync(key);
            n++;
          }
        }
      });
      if (seen < CHUNK || last === null) return n;
      start = `${last as string}\u0000`;
    }
  }

  close(): Promise<void> {
    return this.db.close();
  }
}
