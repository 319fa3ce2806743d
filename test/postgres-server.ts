// PostgreSQL for the tests: the machine's server (127.0.0.1:5432, trust auth, database test;
// IPSIFT_TEST_POSTGRES overrides), one fresh database per data directory under test, dropped
// when the process ends. Made through the control database's own synchronous driver, so a
// test's synchronous setup can ask for one.

import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { PostgresDb } from '../src/control/postgres.js';
import type { ControlDbConfig } from '../src/config.js';
import { freePort, killChild, PROJECT_ROOT } from './helpers.js';

export const POSTGRES_URL = process.env.IPSIFT_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';

const made: string[] = [];

function admin<T>(fn: (db: PostgresDb) => T): T {
  const db = new PostgresDb({ url: POSTGRES_URL, timeoutMs: 30_000 });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** A new empty database; its URL. */
export function freshDatabase(): string {
  const name = `ipsift_t_${process.pid}_${made.length}_${Date.now().toString(36)}`;
  admin((db) => db.exec(`CREATE DATABASE ${name}`));
  made.push(name);
  const u = new URL(POSTGRES_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

/** A control-database configuration on a new database. */
export function freshControlDb(timeoutMs = 10_000): NonNullable<ControlDbConfig> {
  return { url: freshDatabase(), timeoutMs };
}

/** How many databases this process has made (and not yet dropped). */
export function databasesMade(): number {
  return made.length;
}

/** Drops every database this process made (connections still open are ended). */
export function dropDatabases(): void {
  if (made.length === 0) return;
  admin((db) => {
    for (const name of made.splice(0)) db.exec(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
}

export interface PostgresRelay {
  /** POSTGRES_URL's database through the relay. */
  url(database: string): string;
  /** The server goes away: every connection through the relay drops, new ones are refused. */
  stop(): Promise<void>;
  /** The server is back (on the same port). */
  start(): Promise<void>;
}

/** A relay to the machine's PostgreSQL on a port of its own (test/fixtures/tcp-proxy.ts). */
export async function startPostgresRelay(): Promise<PostgresRelay> {
  const port = await freePort();
  const target = Number(new URL(POSTGRES_URL).port || 5432);
  let child: ChildProcess | null = null;
  const relay: PostgresRelay = {
    url(database) {
      const u = new URL(POSTGRES_URL);
      u.port = String(port);
      u.pathname = `/${new URL(database).pathname.slice(1)}`;
      return u.toString();
    },
    async stop() {
      const c = child;
      child = null;
      await killChild(c);
    },
    async start() {
      const c = spawn(process.execPath, [path.join(PROJECT_ROOT, 'dist/test/fixtures/tcp-proxy.js'), String(port), String(target)], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      child = c;
      await new Promise<void>((resolve, reject) => {
        c.stdout!.once('data', () => resolve());
        c.once('exit', (code) => reject(new Error(`the relay exited (${code})`)));
      });
    },
  };
  await relay.start();
  return relay;
}
