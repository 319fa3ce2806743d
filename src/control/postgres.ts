// The control database in PostgreSQL (CONTROL_DB=postgres://…), behind the same SqlDatabase
// interface as SQLite, so every node of a cluster shares organisations, keys, licences,
// publications and download history, and every query of the code base runs unchanged.
//
// The interface is synchronous (it was written for SQLite, and the key cache, the gate and the
// CLI call it so); node-postgres is not. So the connection lives on a thread of its own and is
// called through a SyncCaller: a loopback query costs about a hundred microseconds, paid only
// on key-cache misses, key management, downloads and the 250 ms change poll.
//
// Statements are SQLite's: `?` and `@name` parameters become `$n` here. Every transaction
// takes one advisory lock, as SQLite's writers take its single write lock, so read-then-write
// sequences (account numbers, revocation counts) stay serial across nodes; the control plane
// writes rarely, and reads outside transactions never wait for it.

import { SyncCaller, SyncCallFailed } from '../bridge/sync-call.js';
import { Unavailable } from '../errors.js';
import { redactUrl } from '../log.js';
import type { PostgresOp } from './postgres-worker.js';
import type { SqlDatabase, SqlStatement } from './sqlite.js';

/** pg_advisory_xact_lock's key for write transactions ('ipsf'). */
const WRITE_LOCK = 0x69707366;

export interface PostgresOptions {
  url: string;
  /** Longest a query may take before the server counts as unavailable. */
  timeoutMs: number;
  /** Longest the first connection may take (the database is refused at start past it). */
  connectTimeoutMs?: number;
}

/** The control database cannot be reached now: requests that need it answer 503. */
export class ControlUnavailable extends Unavailable {
  constructor(what: string) {
    super('CONTROL_UNAVAILABLE', `control database in PostgreSQL: ${what}`);
  }
}

/** SQLSTATE classes that say the server, not the statement, is the trouble. */
const UNAVAILABLE_STATE = /^(08|53|57P|58)/;

/**
 * Whether a failed query means the server is unreachable: anything but the server's own
 * error about the statement (the worker passes on a SQLSTATE only for those).
 */
const serverFault = (e: SyncCallFailed): boolean => e.code === undefined || UNAVAILABLE_STATE.test(e.code);

interface Translated {
  text: string;
  /** The names of `@name` parameters in order; null when the statement uses `?`. */
  names: string[] | null;
}

/** SQLite's `?` and `@name` parameters as PostgreSQL's `$1, $2 …` (none inside '…' literals). */
export function translate(sql: string): Translated {
  let text = '';
  let n = 0;
  const names: string[] = [];
  const byName = new Map<string, number>();
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i];
    if (c === "'") {
      const end = sql.indexOf("'", i + 1);
      const stop = end < 0 ? sql.length : end + 1;
      text += sql.slice(i, stop);
      i = stop - 1;
    } else if (c === '?') {
      text += `$${++n}`;
    } else if (c === '@' && /[A-Za-z_]/.test(sql[i + 1] ?? '')) {
      let j = i + 1;
      while (j < sql.length && /\w/.test(sql[j])) j++;
      const name = sql.slice(i + 1, j);
      let at = byName.get(name);
      if (at === undefined) {
        names.push(name);
        byName.set(name, (at = names.length));
      }
      text += `$${at}`;
      i = j - 1;
    } else text += c;
  }
  if (n > 0 && names.length > 0) throw new Error('a statement mixes ? and @name parameters');
  return { text, names: names.length > 0 ? names : null };
}

function bind(t: Translated, params: unknown[]): unknown[] {
  const values = t.names === null ? params : t.names.map((k) => (params[0] as Record<string, unknown>)[k]);
  return values.map((v) => (v === undefined ? null : v));
}

export class PostgresDb implements SqlDatabase {
  readonly driver = 'postgres';
  private readonly bridge: SyncCaller<PostgresOp>;
  private readonly statements = new Map<string, SqlStatement>();
  private depth = 0;
  /** The connection's state is unknown (a timeout, a failed rollback): replace it first. */
  private resetDue = false;

  /** Connects; ControlUnavailable unless the server answers within the connect timeout. */
  constructor(private readonly options: PostgresOptions) {
    const connectTimeoutMs = options.connectTimeoutMs ?? 5000;
    this.bridge = new SyncCaller(new URL('./postgres-worker.js', import.meta.url), { url: options.url, connectTimeoutMs }, serverFault);
    try {
      this.bridge.call('query', ['SELECT 1', []], connectTimeoutMs + 1000);
    } catch (e) {
      void this.bridge.close();
      throw new ControlUnavailable(`${redactUrl(options.url)} cannot be used: ${(e as Error).message}`);
    }
  }

  private query(text: string, values: unknown[], timeoutMs = this.options.timeoutMs): { rows: Record<string, unknown>[]; rowCount: number } {
    try {
      if (this.resetDue) {
        this.bridge.call('reset', [], timeoutMs);
        this.resetDue = false;
      }
      return this.bridge.call('query', [text, values], timeoutMs) as { rows: Record<string, unknown>[]; rowCount: number };
    } catch (e) {
      // The statement's own failure (a constraint, a bug): reported as the driver's error.
      if (e instanceof SyncCallFailed) throw Object.assign(new Error(e.message), { code: e.code });
      this.resetDue = true;
      throw new ControlUnavailable((e as Error).message);
    }
  }

  prepare(sql: string): SqlStatement {
    let s = this.statements.get(sql);
    if (s === undefined) {
      const t = translate(sql);
      s = {
        run: (...p) => ({ changes: this.query(t.text, bind(t, p)).rowCount, lastInsertRowid: 0 }),
        get: (...p) => this.query(t.text, bind(t, p)).rows[0],
        all: (...p) => this.query(t.text, bind(t, p)).rows,
      };
      this.statements.set(sql, s);
    }
    return s;
  }

  exec(sql: string): void {
    this.query(sql, []);
  }

  transaction<T>(fn: () => T): T {
    if (this.depth > 0) return fn();
    this.query('BEGIN', []);
    this.depth++;
    try {
      this.query('SELECT pg_advisory_xact_lock($1)', [WRITE_LOCK]);
      const r = fn();
      this.query('COMMIT', []);
      return r;
    } catch (e) {
      try {
        this.query('ROLLBACK', []);
      } catch {
        this.resetDue = true; // a connection left inside a transaction is never used again
      }
      throw e;
    } finally {
      this.depth--;
    }
  }

  /** The change counter the control tables' triggers bump (schema.ts). */
  dataVersion(): number {
    return Number(this.query('SELECT v FROM control_version', []).rows[0]?.v ?? 0);
  }

  close(): void {
    try {
      this.bridge.call('close', [], this.options.timeoutMs);
    } catch {
      // unreachable: nothing to close gracefully
    }
    void this.bridge.close();
  }
}
