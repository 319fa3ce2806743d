// The control plane's SQLite database (DATA_DIR/control.sqlite): organisations and API keys.
// WAL, so the CLI and servers on one data directory read while another writes; versioned
// migrations, applied in one transaction each at open.

import path from 'node:path';
import Database from 'better-sqlite3';

export type ControlDb = Database.Database;

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
];

export function openControlDb(dataDir: string): ControlDb {
  const db = new Database(path.join(dataDir, CONTROL_DB_FILE));
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)');
  const migrate = db.transaction(() => {
    const current = (db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null }).v ?? 0;
    if (current > MIGRATIONS.length) throw new Error(`control database is at schema ${current}, newer than this ipsift (${MIGRATIONS.length})`);
    for (let v = current + 1; v <= MIGRATIONS.length; v++) {
      db.exec(MIGRATIONS[v - 1]);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(v, new Date().toISOString());
    }
  });
  migrate.immediate();
  return db;
}

/** A number that changes whenever another connection commits (PRAGMA data_version). */
export function dataVersion(db: ControlDb): number {
  return db.pragma('data_version', { simple: true }) as number;
}
