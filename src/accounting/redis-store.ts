// Accounting counters in Redis (ACCOUNTING=redis), shared by every node of a cluster.
//
// The Meter calls its store synchronously, once per lease (a tenth of a second of a key's
// traffic), never per request; keeping that contract keeps the gate, the leases and the
// degraded mode exactly as they are on LMDB. So this store is a synchronous facade: each call
// goes to a thread that owns the Redis connection (redis-worker.ts) through a SyncCaller (a
// loopback round trip is about 50 µs, a lease's worth of requests). A call that gets no answer
// within REDIS_TIMEOUT_MS throws, and for the next second every call throws at once (the
// SyncCaller's fail-fast), while the Meter counts in memory (its grace period).

import { SyncCaller } from '../bridge/sync-call.js';
export { FAIL_FAST_MS as RETRY_MS } from '../bridge/sync-call.js';
import { Unavailable } from '../errors.js';
import { redactUrl } from '../log.js';
import type { AccountingStore } from './accounting-store.js';
import type { RedisOp } from './redis-worker.js';

export interface RedisStoreOptions {
  url: string;
  /** Prefix of every key (several deployments may share one Redis). */
  prefix: string;
  /** Longest a call waits for Redis before the store counts as unavailable. */
  timeoutMs: number;
  /** Longest the first connection may take (the store is refused at start past it). */
  connectTimeoutMs?: number;
}

export class RedisUnavailable extends Unavailable {
  constructor(what: string) {
    super('REDIS_UNAVAILABLE', `accounting in Redis: ${what}`);
  }
}

export class RedisAccountingStore implements AccountingStore {
  private readonly bridge: SyncCaller<RedisOp>;

  /** Connects, and throws RedisUnavailable unless the server answers within the connect timeout. */
  constructor(private readonly options: RedisStoreOptions) {
    const connectTimeoutMs = options.connectTimeoutMs ?? 5000;
    this.bridge = new SyncCaller(new URL('./redis-worker.js', import.meta.url), { url: options.url, prefix: options.prefix, connectTimeoutMs });
    try {
      this.bridge.call('ping', [''], connectTimeoutMs);
    } catch (e) {
      void this.bridge.close();
      throw new RedisUnavailable(`${redactUrl(options.url)} cannot be used: ${(e as Error).message}`);
    }
  }

  /** Every failure of a Redis call counts as Redis unreachable (the worker's scripts do not fail otherwise). */
  private call(op: RedisOp, args: (string | number)[]): unknown {
    try {
      return this.bridge.call(op, args, this.options.timeoutMs);
    } catch (e) {
      throw new RedisUnavailable((e as Error).message);
    }
  }

  spent(counter: string): number {
    return this.call('spent', [counter]) as number;
  }

  reserve(counter: string, need: number, extra: number, limit: number | null): { granted: number; spent: number } {
    const [granted, spent] = this.call('reserve', [counter, need, extra, limit ?? -1]) as [number, number];
    return { granted, spent };
  }

  release(counter: string, units: number): void {
    if (units > 0) this.call('release', [counter, units]);
  }

  /** The bucket's time is Redis's own clock (see redis-worker.ts); `nowMs` is not sent. */
  takeTokens(bucket: string, want: number, perSecond: number, burst: number): { granted: number; left: number } {
    const [granted, left] = this.call('take', [bucket, want, perSecond, burst]) as [number, string];
    return { granted, left: Number(left) };
  }

  /** Nothing to do: every key is written with its expiry. */
  prune(): number {
    return 0;
  }

  async close(): Promise<void> {
    try {
      this.call('quit', ['']);
    } catch {
      // already unreachable: nothing to close gracefully
    }
    await this.bridge.close();
  }
}
