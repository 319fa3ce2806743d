// Short-lived bearer tokens (POST /api/v1/auth/token): a key exchanged for a token that names
// the key, a subset of its scopes and an expiry, signed with HMAC-SHA256 under the data
// directory's token key. Everything else — organisation, plan, source ranges, whether the key
// still stands — is the key's current state, so a plan change or a revoked key reaches its
// tokens as fast as the key itself. A token is verified once per key-cache lifetime (auth.ts)
// and answered from the cache after that, as keys are.
//
// Form: ist_<token id>.<key id>.<expiry, seconds, base 36>.<scope bits>.<signature>, the ids
// and the signature in base64url: 71 characters of [A-Za-z0-9_.-], short because every
// request carries (and the key cache hashes) it.

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { SCOPES, type Scope } from './accounts.js';
import type { ControlDb } from './control-db.js';

export const TOKEN_TAG = 'ist_';
const KEY_FILE = 'token.key';
/** Signature bytes kept: 16, a 128-bit tag (RFC 2104 §5: at least half the hash, and 80 bits). */
const SIGNATURE_BYTES = 16;
export const DEFAULT_TOKEN_LIFETIME_S = 15 * 60;
/** Tokens are short-lived by design: a day at most, whatever the key's own expiry. */
export const MAX_TOKEN_LIFETIME_S = 24 * 60 * 60;

export interface TokenClaims {
  id: string;
  keyId: string;
  expiresMs: number;
  scopes: Scope[];
}

/**
 * The data directory's signing key: 32 random bytes, made once (O_EXCL, so two processes
 * starting together agree), readable by the owner only.
 */
export function tokenSigningKey(dataDir: string): Buffer {
  const file = path.join(dataDir, KEY_FILE);
  try {
    fs.writeFileSync(file, randomBytes(32), { flag: 'wx', mode: 0o600 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  // A writer racing us may not have written yet: wait for the whole key.
  for (let i = 0; ; i++) {
    const key = fs.readFileSync(file);
    if (key.length === 32) return key;
    if (i > 100) throw new Error(`${file}: not a token signing key (${key.length} bytes); delete it to make a new one (every token issued ends)`);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
  }
}

const scopeBits = (scopes: readonly Scope[]): number => scopes.reduce((bits, s) => bits | (1 << SCOPES.indexOf(s)), 0);
const scopesOf = (bits: number): Scope[] => SCOPES.filter((_, i) => bits & (1 << i));

function sign(key: Buffer, body: string): string {
  return createHmac('sha256', key).update(body).digest().subarray(0, SIGNATURE_BYTES).toString('base64url');
}

export function mintToken(signingKey: Buffer, keyId: string, scopes: readonly Scope[], expiresMs: number): { token: string; id: string } {
  const id = randomBytes(9).toString('base64url');
  const body = `${TOKEN_TAG}${id}.${Buffer.from(keyId.replace(/-/g, ''), 'hex').toString('base64url')}.${Math.floor(expiresMs / 1000).toString(36)}.${scopeBits(scopes)}`;
  return { token: `${body}.${sign(signingKey, body)}`, id };
}

/** The claims of a token signed with `signingKey`, or null (malformed, or not signed by us). */
export function verifyToken(signingKey: Buffer, token: string): TokenClaims | null {
  if (!token.startsWith(TOKEN_TAG)) return null;
  const dot = token.lastIndexOf('.');
  if (dot < 0) return null;
  const body = token.slice(0, dot);
  // Compared as text: base64url decoding would ignore trailing characters.
  const given = Buffer.from(token.slice(dot + 1), 'latin1');
  const expected = Buffer.from(sign(signingKey, body), 'latin1');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  const [id, key, exp, bits] = body.slice(TOKEN_TAG.length).split('.');
  if (!id || !key || !exp || bits === undefined || !/^\d+$/.test(bits)) return null;
  const hex = Buffer.from(key, 'base64url').toString('hex');
  if (hex.length !== 32) return null;
  const keyId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return { id, keyId, expiresMs: parseInt(exp, 36) * 1000, scopes: scopesOf(Number(bits)) };
}

/** Revokes a token until it would have expired (then the row is dropped: it could not be used anyway). */
export function revokeToken(db: ControlDb, claims: TokenClaims, nowMs: number): void {
  db.prepare('DELETE FROM revoked_tokens WHERE expires_at < ?').run(new Date(nowMs).toISOString());
  db.prepare('INSERT OR IGNORE INTO revoked_tokens (id, key_id, expires_at, revoked_at) VALUES (?, ?, ?, ?)').run(
    claims.id,
    claims.keyId,
    new Date(claims.expiresMs).toISOString(),
    new Date(nowMs).toISOString(),
  );
}

export function isTokenRevoked(db: ControlDb, id: string): boolean {
  return db.prepare('SELECT 1 AS x FROM revoked_tokens WHERE id = ?').get(id) !== undefined;
}
