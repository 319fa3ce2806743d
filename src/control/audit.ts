// The audit log (control database, table audit): every change an operator or a key makes to
// organisations, licences and keys — who, from where, what, when. Entries hold ids and the
// fields changed, never a secret (a key's prefix at most). Read back newest first.

import type { ControlDb } from './control-db.js';

/** Who acts: `cli:<OS user>`, `admin:<operator token id>` or `key:<API key id>`, and from where. */
export interface Actor {
  who: string;
  /** The client address, or `local` for the CLI. */
  source: string;
}

export interface AuditEntry {
  id: number;
  at: string;
  actor: string;
  source: string;
  action: string;
  org_id: string | null;
  target: string | null;
  detail: Record<string, unknown>;
}

/** As stored: the detail as JSON text. */
type AuditRow = Omit<AuditEntry, 'detail'> & { detail: string };

export function recordAudit(
  db: ControlDb,
  actor: Actor,
  action: string,
  orgId: string | null,
  target: string | null,
  detail: Record<string, unknown> = {},
): void {
  db.prepare('INSERT INTO audit (at, actor, source, action, org_id, target, detail) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
    new Date().toISOString(),
    actor.who,
    actor.source,
    action,
    orgId,
    target,
    JSON.stringify(detail),
  );
}

export interface AuditQuery {
  orgId?: string;
  /** Entries older than this id (paging back from the newest). */
  before?: number;
  limit: number;
}

export function listAudit(db: ControlDb, q: AuditQuery): AuditEntry[] {
  const where: string[] = [];
  const args: unknown[] = [];
  if (q.orgId !== undefined) where.push('org_id = ?'), args.push(q.orgId);
  if (q.before !== undefined) where.push('id < ?'), args.push(q.before);
  const sql = `SELECT * FROM audit ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`;
  return (db.prepare(sql).all(...args, q.limit) as AuditRow[]).map((r) => ({ ...r, detail: JSON.parse(r.detail) as Record<string, unknown> }));
}

/**
 * When the `n`th newest change an organisation's own keys made was made, or null when they
 * made fewer: the start of a window holding their last n changes (the operator's changes to
 * the organisation do not count; one read back along the organisation's index range).
 */
export function nthLatestKeyChangeAt(db: ControlDb, orgId: string, n: number): number | null {
  const r = db.prepare("SELECT at FROM audit WHERE org_id = ? AND actor LIKE 'key:%' ORDER BY id DESC LIMIT 1 OFFSET ?").get(orgId, n - 1) as
    | { at: string }
    | undefined;
  return r ? Date.parse(r.at) : null;
}
