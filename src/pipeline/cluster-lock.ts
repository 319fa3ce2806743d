// The daily build's lock across a cluster (ACCOUNTING=redis: the nodes already share a Redis).
// The data directory's lock file keeps processes on one machine from building twice; this
// keeps builder nodes on different machines from doing so: one holds `build-lock` while it
// builds (SET NX with an expiry, so a builder that dies frees it), and a finished run marks
// the day done, so a builder that arrives later the same day skips it.

import { randomBytes } from 'node:crypto';
import os from 'node:os';

/** Longest a build may hold the lock (a dead holder's lock frees itself after this). */
const LOCK_MS = 6 * 3_600_000;
/** A day marked done is remembered this long (past the day itself). */
const DONE_S = 2 * 86_400;

// Deleted only by its holder: a lock that expired and was taken by another stays theirs.
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

/** What this needs of a client (raw commands). */
interface Client {
  connect(): Promise<unknown>;
  close(): Promise<void>;
  on(event: 'error', listener: (e: unknown) => void): unknown;
  sendCommand(args: string[]): Promise<unknown>;
}

export type LockOutcome = { taken: true } | { taken: false; reason: string };

export class ClusterBuildLock {
  private readonly token = `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

  constructor(
    private readonly url: string,
    private readonly prefix: string,
  ) {}

  private async with<T>(fn: (c: Client) => Promise<T>): Promise<T> {
    // Loaded here, not with the module: the front end's thread would otherwise hold the Redis
    // client's code (about 1 MB of its heap) on every node, Redis or not.
    const { createClient } = await import('@redis/client');
    const client: Client = createClient({ url: this.url, disableOfflineQueue: true, socket: { connectTimeout: 5000, reconnectStrategy: false } });
    client.on('error', () => {});
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.close().catch(() => {});
    }
  }

  /** Takes the lock for `day` (YYYY-MM-DD), unless another node holds it or the day is done. */
  take(day: string): Promise<LockOutcome> {
    return this.with(async (c) => {
      const done = await c.sendCommand(['GET', `${this.prefix}build-done:${day}`]);
      if (done !== null) return { taken: false, reason: `build ${String(done)} was published today by another node` };
      const set = await c.sendCommand(['SET', `${this.prefix}build-lock`, this.token, 'NX', 'PX', String(LOCK_MS)]);
      if (set === null) return { taken: false, reason: `another node is building (${String(await c.sendCommand(['GET', `${this.prefix}build-lock`]))})` };
      return { taken: true };
    });
  }

  /** Frees the lock; with `built`, marks the day done first. */
  release(day: string, built: string | null): Promise<void> {
    return this.with(async (c) => {
      if (built !== null) await c.sendCommand(['SET', `${this.prefix}build-done:${day}`, built, 'EX', String(DONE_S)]);
      await c.sendCommand(['EVAL', RELEASE, '1', `${this.prefix}build-lock`, this.token]);
    });
  }
}
