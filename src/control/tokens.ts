// Short-lived bearer tokens (POST /api/v1/auth/token): a key exchanged for a token that names
// the key, a subset of its scopes and an expiry, signed with HMAC-SHA256 under the data
// directory's token key. Everything else — organisation, plan, source ranges, whether the key
// still stands — is the key's current state, so a plan change or a revoked key reaches its
// tokens as fast as the key itself. A token is verified once per key-cache lifetime (auth.ts)
// and answered from the cache after that, as keys are.
//
// Form: ist_<token id>.<key id>.<expiry, seconds, base 36>.<scope bits>.<signature>, the ids
// and the signature in base64url: 71 characters of [A-Za-z0-9_.-], short because every
// request carries (and the key cache hashes) it. The signature also covers the key's token
// epoch, so rotating the key ends its tokens without storing them.

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import { SCOPES, type Scope } from './accounts.js';
import type { ControlDb } from './control-db.js';
import { tokenKeyFile } from '../data-dir.js';

export const TOKEN_TAG = 'ist_';
/** Signature bytes kept: 16, a 128-bit tag (RFC 2104 §5: at least half the hash, and 80 bits). */
const SIGNATURE_BYTES = 16;
/** Tokens are short-lived by design: a day at most, whatever the key's own expiry (the request body's schema holds the numbers). */
export { DEFAULT_TOKEN_LIFETIME_S, MAX_TOKEN_LIFETIME_S } from '../wire/request-bodies.js';

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
  const file = tokenKeyFile(dataDir);
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

/** The signature binds the token's text to its key's token epoch, which is not in the text. */
function sign(signingKey: Buffer, body: string, epoch: number): string {
  return createHmac('sha256', signingKey).update(`${body}.${epoch}`).digest().subarray(0, SIGNATURE_BYTES).toString('base64url');
}

export function mintToken(
  signingKey: Buffer,
  key: { id: string; tokenEpoch: number },
  scopes: readonly Scope[],
  expiresMs: number,
): { token: string; id: string } {
  const id = randomBytes(9).toString('base64url');
  const body = `${TOKEN_TAG}${id}.${Buffer.from(key.id.replace(/-/g, ''), 'hex').toString('base64url')}.${Math.floor(expiresMs / 1000).toString(36)}.${scopeBits(scopes)}`;
  return { token: `${body}.${sign(signingKey, body, key.tokenEpoch)}`, id };
}

/** What a token says, not yet verified (its key must be read first: see tokenSigned). */
export interface ReadToken extends TokenClaims {
  body: string;
  signature: string;
}

/** The claims a token states, or null when it is not of our form. */
export function readToken(token: string): ReadToken | null {
  if (!token.startsWith(TOKEN_TAG)) return null;
  const dot = token.lastIndexOf('.');
  if (dot < 0) return null;
  const body = token.slice(0, dot);
  const [id, key, exp, bits] = body.slice(TOKEN_TAG.length).split('.');
  if (!id || !key || !exp || bits === undefined || !/^\d+$/.test(bits)) return null;
  const hex = Buffer.from(key, 'base64url').toString('hex');
  if (hex.length !== 32) return null;
  const keyId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return { id, keyId, expiresMs: parseInt(exp, 36) * 1000, scopes: scopesOf(Number(bits)), body, signature: token.slice(dot + 1) };
}

/** Whether we signed the token for its key at the key's current token epoch. */
export function tokenSigned(signingKey: Buffer, t: ReadToken, epoch: number): boolean {
  // Compared as text: base64url decoding would ignore trailing characters.
  const given = Buffer.from(t.signature, 'latin1');
  const expected = Buffer.from(sign(signingKey, t.body, epoch), 'latin1');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * Revocations a key may have stored at once (until their tokens would have expired). One more
 * ends every token of the key instead (a new epoch), so what one key can make the control
 * database hold stays bounded however many tokens it mints and revokes.
 */
export const MAX_REVOKED_PER_KEY = 1000;

/** Revokes a token until it would have expired; past MAX_REVOKED_PER_KEY, every token of its key. */
export function revokeToken(db: ControlDb, claims: Pick<TokenClaims, 'id' | 'keyId' | 'expiresMs'>, nowMs: number): 'token' | 'every token of the key' {
  return db.transaction(() => {
    db.prepare('DELETE FROM revoked_tokens WHERE expires_at < ?').run(new Date(nowMs).toISOString());
    const held = (db.prepare('SELECT COUNT(*) AS n FROM revoked_tokens WHERE key_id = ?').get(claims.keyId) as { n: number }).n;
    if (held >= MAX_REVOKED_PER_KEY) {
      db.prepare('UPDATE api_keys SET token_epoch = token_epoch + 1 WHERE id = ?').run(claims.keyId);
      db.prepare('DELETE FROM revoked_tokens WHERE key_id = ?').run(claims.keyId);
      return 'every token of the key';
    }
    db.prepare('INSERT INTO revoked_tokens (id, key_id, expires_at, revoked_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING').run(
      claims.id,
      claims.keyId,
      new Date(claims.expiresMs).toISOString(),
      new Date(nowMs).toISOString(),
    );
    return 'token';
  }, true);
}

export function isTokenRevoked(db: ControlDb, id: string): boolean {
  return db.prepare('SELECT 1 AS x FROM revoked_tokens WHERE id = ?').get(id) !== undefined;
}
