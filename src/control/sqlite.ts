// The SQL boundary: the control database (control-db.ts) speaks to this small interface,
// with PostgreSQL (postgres.ts) for a cluster, or one of three SQLite drivers: better-sqlite3
// where its native build loads (Node 20 here), node:sqlite on Node 22.5+ and 24
// (better-sqlite3 has no binary for their ABIs without a compiler), bun:sqlite on Bun. Same
// schema, same migrations, same SQL.

import { createRequire } from 'node:module';
import { Unavailable } from '../errors.js';

export interface SqlStatement {
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  /** The first row (a plain object), or undefined. */
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

export interface SqlDatabase {
  readonly driver: SqlDriver;
  prepare(sql: string): SqlStatement;
  exec(sql: string): void;
  /** fn inside BEGIN … COMMIT (ROLLBACK when it throws); `immediate` takes the write lock first. */
  transaction<T>(fn: () => T, immediate?: boolean): T;
  /** Changes when another connection commits (SQLite: PRAGMA data_version). */
  dataVersion(): number;
  close(): void;
}

export type SqliteDriver = 'better-sqlite3' | 'node:sqlite' | 'bun:sqlite';
export type SqlDriver = SqliteDriver | 'postgres';

const require = createRequire(import.meta.url);

interface RawStatement {
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  /** bun:sqlite's: a database closes only once its statements are finalized. */
  finalize?(): void;
}
interface RawDatabase {
  prepare(sql: string): RawStatement;
  exec(sql: string): unknown;
  close(): void;
}

/** SQLite's primary result codes by number (node:sqlite reports numbers: `errcode`). */
const RESULT_CODES: Record<number, string> = {
  5: 'BUSY',
  8: 'READONLY',
  10: 'IOERR',
  11: 'CORRUPT',
  13: 'FULL',
  14: 'CANTOPEN',
  19: 'CONSTRAINT',
  26: 'NOTADB',
};

/**
 * The SQLite result code of a driver's error, as better-sqlite3 and bun:sqlite name it
 * (`SQLITE_NOTADB`, `SQLITE_CONSTRAINT_UNIQUE` …), whichever driver threw it; '' for others.
 */
export function sqliteCode(e: unknown): string {
  const err = e as { code?: unknown; errcode?: unknown };
  if (typeof err.code === 'string' && err.code.startsWith('SQLITE_')) return err.code;
  if (typeof err.errcode === 'number') {
    const name = RESULT_CODES[err.errcode & 0xff];
    return name ? `SQLITE_${name}` : `SQLITE_${err.errcode}`;
  }
  return '';
}

/** Rows as plain objects (node:sqlite makes them with a null prototype). */
const plain = (row: unknown): unknown => (row && typeof row === 'object' && Object.getPrototypeOf(row) === null ? { ...row } : row);

/** A driver's database behind the interface; statements are cached by text. */
class Sqlite implements SqlDatabase {
  private readonly statements = new Map<string, SqlStatement>();
  private readonly raw: RawStatement[] = [];
  private depth = 0;

  constructor(
    private readonly db: RawDatabase,
    readonly driver: SqliteDriver,
    /** bun:sqlite binds named parameters by their prefixed name: `@id` for `{ id }`. */
    private readonly prefixNames = false,
  ) {}

  prepare(sql: string): SqlStatement {
    let s = this.statements.get(sql);
    if (s === undefined) {
      const raw = this.db.prepare(sql);
      this.raw.push(raw);
      const bind = this.prefixNames ? prefixed : (p: unknown[]) => p;
      s = {
        run: (...p) => raw.run(...bind(p)),
        get: (...p) => plain(raw.get(...bind(p)) ?? undefined),
        all: (...p) => raw.all(...bind(p)).map(plain),
      };
      this.statements.set(sql, s);
    }
    return s;
  }

  exec(sql: string): void {
    this.db.exec(sql);
  }

  transaction<T>(fn: () => T, immediate = false): T {
    // Nested calls join the outer transaction.
    if (this.depth > 0) return fn();
    this.db.exec(immediate ? 'BEGIN IMMEDIATE' : 'BEGIN');
    this.depth++;
    try {
      const r = fn();
      this.db.exec('COMMIT');
      return r;
    } catch (e) {
      // SQLite may have rolled back by itself (SQLITE_FULL, SQLITE_IOERR): a ROLLBACK then fails
      // with "no transaction is active" and would hide the error that matters.
      try {
        this.db.exec('ROLLBACK');
      } catch {
        // already rolled back by SQLite itself
      }
      // A full disk is the server's condition, not the request's fault: told as temporary (503).
      if (sqliteCode(e).startsWith('SQLITE_FULL'))
        throw new Unavailable('CONTROL_FULL', 'the control database cannot be written: the disk is full (SQLITE_FULL); free space on it', { cause: e });
      throw e;
    } finally {
      this.depth--;
    }
  }

  dataVersion(): number {
    return Number((this.prepare('PRAGMA data_version').get() as { data_version: number }).data_version);
  }

  close(): void {
    // bun:sqlite keeps a database with live statements open (and its WAL beside it) after close().
    for (const r of this.raw) r.finalize?.();
    this.raw.length = 0;
    this.statements.clear();
    this.db.close();
  }
}

/** `{ id: 1 }` → `{ '@id': 1 }` for a driver that wants the prefix in the key. */
function prefixed(params: unknown[]): unknown[] {
  const [first, ...rest] = params;
  if (params.length !== 1 || first === null || typeof first !== 'object' || Array.isArray(first)) return params;
  return [Object.fromEntries(Object.entries(first).map(([k, v]) => [`@${k}`, v])), ...rest];
}

type Open = (file: string) => SqlDatabase;

/**
 * The first driver this runtime loads (probed on an in-memory database, so that a problem
 * with the file itself is reported as such, not as a missing driver), or why none does.
 */
function driver(): Open {
  const reasons: string[] = [];
  const candidates: [SqliteDriver, () => Open][] = [
    [
      'bun:sqlite',
      () => {
        if (typeof (globalThis as { Bun?: unknown }).Bun === 'undefined') throw new Error('not on Bun');
        const { Database } = require('bun:sqlite') as { Database: new (file: string, o?: { create: boolean }) => RawDatabase };
        return (file) => new Sqlite(new Database(file, { create: true }), 'bun:sqlite', true);
      },
    ],
    [
      'better-sqlite3',
      () => {
        const Better = require('better-sqlite3') as new (file: string) => RawDatabase;
        return (file) => new Sqlite(new Better(file), 'better-sqlite3');
      },
    ],
    [
      'node:sqlite',
      () => {
        const { DatabaseSync } = require('node:sqlite') as { DatabaseSync: new (file: string) => RawDatabase };
        return (file) => new Sqlite(new DatabaseSync(file), 'node:sqlite');
      },
    ],
  ];
  for (const [name, load] of candidates) {
    try {
      const open = load();
      open(':memory:').close();
      return open;
    } catch (e) {
      reasons.push(`${name}: ${(e instanceof Error ? e.message : String(e)).split('\n')[0]}`);
    }
  }
  throw new Error(`no SQLite driver loads on this runtime (${reasons.join('; ')})`);
}

let opener: Open | null = null;

export function openSqlite(file: string): SqlDatabase {
  return (opener ??= driver())(file);
}
