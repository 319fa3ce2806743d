// Accounting counters in Redis (ACCOUNTING=redis), shared by every node of a cluster.
//
// Every call goes to a thread that owns the Redis connection (redis-worker.ts). On the request
// path the Meter uses the calls that do not block (LatentCounters): it refills leases ahead of
// need and a request whose lease is empty waits without holding its thread (latent-meter.ts). The
// blocking calls (a SyncCaller: the thread waits in Atomics.wait) are left to what is not a
// lookup: usage reads, pages of the key list, leases written back at shutdown. A blocking call
// that gets no answer within REDIS_TIMEOUT_MS throws, and for the next second every blocking
// call throws at once (the SyncCaller's fail-fast), while the Meter counts in memory.

import { SyncCaller } from '../bridge/sync-call.js';
export { FAIL_FAST_MS as RETRY_MS } from '../bridge/sync-call.js';
import { Unavailable } from '../errors.js';
import { redactUrl } from '../log.js';
import type { AccountingStore, LatentCounters, StoreFailure } from './accounting-store.js';
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

const NOTHING_RESERVED = Object.freeze({ granted: 0, spent: 0 });
const NO_TOKENS = Object.freeze({ granted: 0, left: 0 });

export class RedisUnavailable extends Unavailable {
  constructor(what: string) {
    super('REDIS_UNAVAILABLE', `accounting in Redis: ${what}`);
  }
}

export class RedisAccountingStore implements AccountingStore, LatentCounters {
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

  get timeoutMs(): number {
    return this.options.timeoutMs;
  }

  reserveLater(
    counter: string,
    need: number,
    extra: number,
    limit: number | null,
    done: (failure: StoreFailure | null, r: { granted: number; spent: number }) => void,
  ): void {
    this.bridge.later('reserve', [counter, need, extra, limit ?? -1], (error, value) => {
      if (error !== null) return done(error, NOTHING_RESERVED);
      const [granted, spent] = value as [number, number];
      done(null, { granted, spent });
    });
  }

  takeTokensLater(
    bucket: string,
    want: number,
    perSecond: number,
    burst: number,
    done: (failure: StoreFailure | null, r: { granted: number; left: number }) => void,
  ): void {
    this.bridge.later('take', [bucket, want, perSecond, burst], (error, value) => {
      if (error !== null) return done(error, NO_TOKENS);
      const [granted, left] = value as [number, string];
      done(null, { granted, left: Number(left) });
    });
  }

  deliver(): void {
    this.bridge.deliver();
  }

  releaseLater(counter: string, units: number): void {
    if (units > 0) this.bridge.later('release', [counter, units], () => {});
  }

  addLater(counters: string[], units: number[], done: (failure: StoreFailure | null, totals: number[]) => void): void {
    this.bridge.later('add', [counters, units], (error, value) => done(error, error === null ? (value as number[]) : []));
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
