// The control plane's SQLite database (DATA_DIR/control.sqlite): organisations and API keys.
// WAL, so the CLI and servers on one data directory read while another writes; versioned
// migrations, applied in one transaction each at open.

import fs from 'node:fs';
import path from 'node:path';
import { openSqlite, sqliteCode, type SqlDatabase } from './sqlite.js';
import { IpsiftError, reasonOf } from '../errors.js';

export type ControlDb = SqlDatabase;

export const CONTROL_DB_FILE = 'control.sqlite';

const MIGRATIONS: readonly string[] = [
  // 1: organisations and keys
  `CREATE TABLE organisations (
     id TEXT PRIMARY KEY,
     name TEXT NOT NULL,
     plan TEXT NOT NULL,
     -- overage limit: 'default' follows the plan, 'none' is no limit, 'set' uses hard_limit
     hard_limit_mode TEXT NOT NULL DEFAULT 'default' CHECK (hard_limit_mode IN ('default', 'none', 'set')),
     hard_limit INTEGER,
     created_at TEXT NOT NULL
   );
   CREATE TABLE api_keys (
     id TEXT PRIMARY KEY,
     org_id TEXT NOT NULL REFERENCES organisations(id),
     name TEXT NOT NULL,
     key_prefix TEXT NOT NULL,
     secret_hash TEXT NOT NULL UNIQUE,
     scopes TEXT NOT NULL,
     allowed_cidrs TEXT NOT NULL,
     expires TEXT,
     revoked_at TEXT,
     created_at TEXT NOT NULL
   );
   CREATE INDEX api_keys_org ON api_keys(org_id);`,
  // 2: licences, published database artifacts, download history
  `CREATE TABLE licences (
     org_id TEXT NOT NULL REFERENCES organisations(id),
     base TEXT NOT NULL,
     license_type TEXT NOT NULL CHECK (license_type IN ('evaluation', 'subscription')),
     starts TEXT NOT NULL,
     expires TEXT NOT NULL,
     renews_at TEXT,
     notice_due_at TEXT,
     created_at TEXT NOT NULL,
     PRIMARY KEY (org_id, base)
   );
   CREATE TABLE publications (
     dataset_id TEXT NOT NULL,
     format TEXT NOT NULL,
     sample INTEGER NOT NULL,
     build_id TEXT NOT NULL,
     day TEXT NOT NULL,
     object_key TEXT NOT NULL,
     bytes INTEGER NOT NULL,
     checksums TEXT NOT NULL,
     published_at TEXT NOT NULL,
     PRIMARY KEY (dataset_id, format, sample, build_id)
   );
   CREATE TABLE downloads (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     org_id TEXT NOT NULL,
     dataset_id TEXT NOT NULL,
     format TEXT NOT NULL,
     sample INTEGER NOT NULL,
     outcome TEXT NOT NULL,
     bytes INTEGER NOT NULL,
     http_status INTEGER NOT NULL,
     apikey_id TEXT NOT NULL,
     client_ip TEXT NOT NULL,
     user_agent TEXT NOT NULL,
     created TEXT NOT NULL
   );
   CREATE INDEX downloads_org ON downloads(org_id, id);`,
  // 3: a numeric account id per organisation, for geoipupdate's AccountID (its Basic auth user),
  // numbered in the order the organisations were inserted
  `ALTER TABLE organisations ADD COLUMN account_id INTEGER;
   UPDATE organisations SET account_id = (SELECT COUNT(*) FROM organisations o WHERE o.rowid <= organisations.rowid);
   CREATE UNIQUE INDEX organisations_account ON organisations(account_id);`,
  // 4: the operator's API: its credentials, the audit log, deleted organisations (kept, so
  // their download history and audit entries still name them and their ids are never reused)
  `CREATE TABLE admin_tokens (
     id TEXT PRIMARY KEY,
     name TEXT NOT NULL,
     token_prefix TEXT NOT NULL,
     secret_hash TEXT NOT NULL UNIQUE,
     scopes TEXT NOT NULL,
     revoked_at TEXT,
     created_at TEXT NOT NULL
   );
   CREATE TABLE audit (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     at TEXT NOT NULL,
     actor TEXT NOT NULL,
     source TEXT NOT NULL,
     action TEXT NOT NULL,
     org_id TEXT,
     target TEXT,
     detail TEXT NOT NULL
   );
   CREATE INDEX audit_org ON audit(org_id, id);
   ALTER TABLE organisations ADD COLUMN deleted_at TEXT;`,
  // 5: short-lived tokens (signed, not stored): those revoked before their expiry, and each
  // key's token epoch (rotating the key, or too many revocations, ends all its tokens at once)
  `CREATE TABLE revoked_tokens (
     id TEXT PRIMARY KEY,
     key_id TEXT NOT NULL,
     expires_at TEXT NOT NULL,
     revoked_at TEXT NOT NULL
   );
   CREATE INDEX revoked_tokens_key ON revoked_tokens(key_id);
   ALTER TABLE api_keys ADD COLUMN token_epoch INTEGER NOT NULL DEFAULT 0;`,
];

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

/** Opens (creating and migrating) the control database; ControlDbError when it is damaged. */
export function openControlDb(dataDir: string): ControlDb {
  const file = path.join(dataDir, CONTROL_DB_FILE);
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
  if (created) fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
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
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)');
  db.transaction(() => {
    const current = (db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null }).v ?? 0;
    if (current > MIGRATIONS.length) throw new IpsiftError('STORE_NEWER', `${file}: control database is at schema ${current}, newer than this ipsift (${MIGRATIONS.length}); run the newer ipsift`);
    for (let v = current + 1; v <= MIGRATIONS.length; v++) {
      db.exec(MIGRATIONS[v - 1]);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(v, new Date().toISOString());
    }
  }, true);
  return db;
}

/** A number that changes whenever another connection commits (PRAGMA data_version). */
export function dataVersion(db: ControlDb): number {
  return db.dataVersion();
}
