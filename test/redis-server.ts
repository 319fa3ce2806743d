// A redis-server of the test's own on a free loopback port: tests may kill and restart it (the
// machine's own Redis is left alone). With `dir`, it keeps an append-only file there, as an
// operator's accounting Redis should (counts survive its restart); without, nothing on disk.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { freePort, killChild, until } from './helpers.js';

export const REDIS_SERVER = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((p) => spawnSync(p, ['--version']).status === 0) ?? null;

export interface TestRedis {
  url: string;
  port: number;
  /** Stops the server (SIGKILL: what a crash looks like to clients). */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty, unless it keeps an append-only file). */
  start(): Promise<void>;
  /** CLIENT PAUSE: every client's commands wait `ms` (a stalled Redis: a fork, a failover). */
  pause(ms: number): Promise<void>;
  /** Ends a pause before its time. */
  unpause(): Promise<void>;
  /** Whether it answers a PING now (not while paused). */
  answers(): Promise<boolean>;
}

const answers = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.write('PING\r\n'));
    // A server with a password answers NOAUTH: up, all the same.
    s.once('data', (d) => (s.destroy(), resolve(/^(\+PONG|-NOAUTH)/.test(d.toString()))));
    s.once('error', () => resolve(false));
  });

/** One command on a connection of its own, answered +OK. */
const command = (port: number, line: string): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(`${line}\r\n`));
    s.once('data', (d) => (s.destroy(), d.toString().startsWith('+OK') ? resolve() : reject(new Error(d.toString()))));
    s.once('error', reject);
  });

/** `password`: the server asks for it (requirepass), and `url` carries it. */
export async function startRedis(dir?: string, options: { password?: string } = {}): Promise<TestRedis> {
  if (REDIS_SERVER === null) throw new Error('redis-server is not installed (Debian: apt-get install redis-server)');
  const port = await freePort();
  let child: ChildProcess | null = null;
  const r: TestRedis = {
    url: `redis://${options.password ? `:${options.password}@` : ''}127.0.0.1:${port}`,
    port,
    async kill() {
      const c = child;
      child = null;
      await killChild(c);
    },
    async start() {
      // appendfsync always: a kill -9 (what the tests do) loses nothing written. With everysec a
      // write may wait behind a background fsync after its reply has gone (one lease lost, once, on Bun).
      const keep = dir === undefined ? ['--appendonly', 'no'] : ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir];
      const auth = options.password ? ['--requirepass', options.password] : [];
      child = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...keep, ...auth, '--daemonize', 'no', '--logfile', ''], {
        stdio: 'ignore',
      });
      await until(() => answers(port), 5_000, `redis-server answering on port ${port}`);
    },
    pause: (ms) => command(port, `CLIENT PAUSE ${ms} ALL`),
    unpause: () => command(port, 'CLIENT UNPAUSE'),
    answers: () => answers(port),
  };
  await r.start();
  return r;
}
