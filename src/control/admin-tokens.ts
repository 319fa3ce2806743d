// Operator credentials for the admin API (api/admin/operator.ts): secrets made by
// `ipsift admin token create`, shown once and stored as their SHA-256 like API keys, with a
// scope — admin.read (GET) or admin.write (everything) — revocable, and ending by themselves
// where made with an expiry. Kept apart from API keys: a customer's key can never become an
// operator's, whatever its scopes.

import { randomBytes, randomUUID } from 'node:crypto';
import { AccountError, checkFutureExpiry, checkName, expiryOf, hashSecret } from './accounts.js';
import type { ControlDb } from './control-db.js';

export const ADMIN_SCOPES = ['admin.read', 'admin.write'] as const;
export type AdminScope = (typeof ADMIN_SCOPES)[number];

const TAG = 'iat_';
const PREFIX_LENGTH = TAG.length + 8;

export interface AdminToken {
  id: string;
  name: string;
  tokenPrefix: string;
  scopes: AdminScope[];
  revokedAt: string | null;
  createdAt: string;
  /** When it stops working by itself (null: never). */
  expiresAt: string | null;
}

interface Row {
  id: string;
  name: string;
  token_prefix: string;
  scopes: string;
  revoked_at: string | null;
  created_at: string;
  expires_at: string | null;
}

const tokenOf = (r: Row): AdminToken => ({
  id: r.id,
  name: r.name,
  tokenPrefix: r.token_prefix,
  scopes: JSON.parse(r.scopes) as AdminScope[],
  revokedAt: r.revoked_at,
  createdAt: r.created_at,
  expiresAt: r.expires_at ?? null,
});

export function adminTokenJson(t: AdminToken): Record<string, unknown> {
  return {
    id: t.id,
    name: t.name,
    token_prefix: t.tokenPrefix,
    scopes: t.scopes,
    revoked_at: t.revokedAt,
    created_at: t.createdAt,
    expires_at: t.expiresAt,
  };
}

/** Creates a token (ending at `expires`, an ISO 8601 time, where given); the secret is returned here and never again. */
export function createAdminToken(
  db: ControlDb,
  given: string,
  scopes: readonly string[],
  expires: string | null = null,
  nowMs = Date.now(),
): { token: AdminToken; secret: string } {
  const name = checkName('an operator token', given);
  const expiresAt = expiryOf(expires);
  checkFutureExpiry(expiresAt, nowMs);
  if (scopes.length === 0) throw new AccountError(`an operator token needs a scope: ${ADMIN_SCOPES.join(' or ')}`);
  for (const s of scopes)
    if (!(ADMIN_SCOPES as readonly string[]).includes(s)) throw new AccountError(`unknown scope ${JSON.stringify(s)}: one of ${ADMIN_SCOPES.join(', ')}`);
  // admin.write implies admin.read: an operator who may change things may read them.
  const granted: AdminScope[] = scopes.includes('admin.write') ? ['admin.read', 'admin.write'] : ['admin.read'];
  const secret = TAG + randomBytes(24).toString('base64url');
  const row: Row = {
    id: randomUUID(),
    name,
    token_prefix: secret.slice(0, PREFIX_LENGTH),
    scopes: JSON.stringify(granted),
    revoked_at: null,
    created_at: new Date(nowMs).toISOString(),
    expires_at: expiresAt,
  };
  db.prepare('INSERT INTO admin_tokens (id, name, token_prefix, secret_hash, scopes, revoked_at, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
    row.id,
    row.name,
    row.token_prefix,
    hashSecret(secret),
    row.scopes,
    row.revoked_at,
    row.created_at,
    row.expires_at,
  );
  return { token: tokenOf(row), secret };
}

export function listAdminTokens(db: ControlDb): AdminToken[] {
  return (db.prepare('SELECT * FROM admin_tokens ORDER BY created_at, id').all() as Row[]).map(tokenOf);
}

export function revokeAdminToken(db: ControlDb, id: string): AdminToken {
  if (!db.prepare('SELECT id FROM admin_tokens WHERE id = ?').get(id)) throw new AccountError(`no operator token ${id}`);
  db.prepare('UPDATE admin_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?').run(new Date().toISOString(), id);
  return tokenOf(db.prepare('SELECT * FROM admin_tokens WHERE id = ?').get(id) as Row);
}

/** Whether a token works at nowMs: not revoked, not past its expiry. */
export const isLive = (t: AdminToken, nowMs: number): boolean => t.revokedAt === null && (t.expiresAt === null || Date.parse(t.expiresAt) > nowMs);

/** The live token a secret belongs to; null for an unknown, revoked or expired one. */
export function findAdminToken(db: ControlDb, secret: string, nowMs = Date.now()): AdminToken | null {
  if (!secret.startsWith(TAG)) return null;
  const row = db.prepare('SELECT * FROM admin_tokens WHERE secret_hash = ?').get(hashSecret(secret)) as Row | undefined;
  const token = row ? tokenOf(row) : null;
  return token && isLive(token, nowMs) ? token : null;
}

/** The live admin.write tokens but `except`: none left means revoking `except` locks the admin API's writes out. */
export function otherLiveWriters(db: ControlDb, except: string, nowMs = Date.now()): AdminToken[] {
  return listAdminTokens(db).filter((t) => t.id !== except && t.scopes.includes('admin.write') && isLive(t, nowMs));
}
