// The control plane's database: organisations, keys, licences, publications, download history.
// SQLite by default (DATA_DIR/control.sqlite, WAL, so the CLI and servers on one data
// directory read while another writes), or PostgreSQL for a cluster (CONTROL_DB); versioned
// migrations, the same numbers in both, applied in one transaction at open.

import fs from 'node:fs';
import path from 'node:path';
import { openSqlite, sqliteCode, type SqlDatabase } from './sqlite.js';
import { PostgresDb } from './postgres.js';
import { redactUrl } from '../log.js';
import { controlMigrations } from './schema.js';
import { IpsiftError, reasonOf } from '../errors.js';
import type { ControlDbConfig } from '../config.js';
import { makeDirectory } from '../files.js';
import { controlDbFile } from '../data-dir.js';

export type ControlDb = SqlDatabase;

/** The control database cannot be opened as one: named with the fix, for a one-line report. */
export class ControlDbError extends IpsiftError {
  constructor(file: string, cause: unknown) {
    super(
      'STORE_CORRUPT',
      `${file}: not a readable ipsift control database (${reasonOf(cause)}); stop every ipsift on this data directory, then restore the file from a backup, or move it aside to start with no organisations or keys`,
      { cause },
    );
  }
}

/**
 * Opens (creating and migrating) the control database; ControlDbError when the SQLite file is
 * damaged, ControlUnavailable when PostgreSQL cannot be reached.
 */
export function openControlDb(dataDir: string, control: ControlDbConfig = null): ControlDb {
  if (control !== null) return migrate(new PostgresDb(control), controlMigrations('postgres'), redactUrl(control.url));
  const file = controlDbFile(dataDir);
  try {
    return open(file);
  } catch (e) {
    if (e instanceof IpsiftError) throw e;
    if (/^SQLITE_(NOTADB|CORRUPT|CANTOPEN|IOERR)/.test(sqliteCode(e))) throw new ControlDbError(file, e);
    throw e;
  }
}

function open(file: string): ControlDb {
  // Organisations, keys and download history (client addresses): readable by the owner only.
  const created = !fs.existsSync(file);
  // A fresh data directory (the CLI before any serve or import): made, not a stack trace.
  if (created) makeDirectory(path.dirname(file), 0o700);
  if (created) fs.closeSync(fs.openSync(file, 'a', 0o600));
  const db = openSqlite(file);
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      fs.chmodSync(f, 0o600);
    } catch {
      // not there (yet), or another user's
    }
  }
  // busy_timeout first: setting WAL mode itself may wait for another process's lock.
  db.exec('PRAGMA busy_timeout = 5000');
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA foreign_keys = ON');
  db.exec('PRAGMA synchronous = NORMAL');
  return migrate(db, controlMigrations('sqlite'), file);
}

/** Applies the migrations the database lacks, in one write transaction (nodes starting together wait their turn). */
function migrate(db: ControlDb, migrations: readonly string[], name: string): ControlDb {
  try {
    db.transaction(() => {
      db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)');
      const current = (db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null }).v ?? 0;
      if (current > migrations.length)
        throw new IpsiftError(
          'STORE_NEWER',
          `${name}: control database is at schema ${current}, newer than this ipsift (${migrations.length}); run the newer ipsift`,
        );
      for (let v = current + 1; v <= migrations.length; v++) {
        db.exec(migrations[v - 1]);
        db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(v, new Date().toISOString());
      }
    }, true);
  } catch (e) {
    db.close();
    throw e;
  }
  return db;
}

/** A number that changes whenever another connection commits (PRAGMA data_version). */
export function dataVersion(db: ControlDb): number {
  return db.dataVersion();
}
