// Organisations and API keys in the control database. Secrets are 192 random bits, shown
// once, stored only as their SHA-256 (a secret with that much entropy needs no slow hash);
// a key is found by the hash of what the client presents, through a unique index.

import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { parseNetwork } from '../net/network.js';
import type { ControlDb } from './control-db.js';
import type { Plan, Plans } from '../model/plans.js';
import { IpsiftError } from '../errors.js';

import { SCOPES, type Scope } from '../wire/scopes.js';
export { SCOPES, type Scope };

const SECRET_TAG = 'isk_';
/** Characters of the key shown as key_prefix: the tag and 8 of the random part. */
const PREFIX_LENGTH = SECRET_TAG.length + 8;

export class AccountError extends IpsiftError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ACCOUNT', message, options);
  }
}

export interface Organisation {
  id: string;
  /** A number for clients that want one (geoipupdate's AccountID); unique, never reused. */
  accountId: number;
  name: string;
  plan: string;
  /** 'default' follows the plan; 'none' is no limit; 'set' is hard_limit. */
  hardLimitMode: 'default' | 'none' | 'set';
  hardLimit: number | null;
  createdAt: string;
  /** Deleted organisations are kept (history and audit name them), their keys revoked. */
  deletedAt: string | null;
}

export interface ApiKey {
  id: string;
  orgId: string;
  name: string;
  keyPrefix: string;
  scopes: Scope[];
  allowedCidrs: string[];
  expires: string | null;
  revokedAt: string | null;
  createdAt: string;
  /** The generation of its short-lived tokens (tokens.ts): a token signed under another is void. */
  tokenEpoch: number;
}

interface OrgRow {
  id: string;
  account_id: number;
  name: string;
  plan: string;
  hard_limit_mode: Organisation['hardLimitMode'];
  hard_limit: number | null;
  created_at: string;
  deleted_at: string | null;
}

interface KeyRow {
  id: string;
  org_id: string;
  name: string;
  key_prefix: string;
  scopes: string;
  allowed_cidrs: string;
  expires: string | null;
  revoked_at: string | null;
  created_at: string;
  token_epoch: number;
}

const orgOf = (r: OrgRow): Organisation => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  plan: r.plan,
  hardLimitMode: r.hard_limit_mode,
  hardLimit: r.hard_limit,
  createdAt: r.created_at,
  deletedAt: r.deleted_at,
});

const keyOf = (r: KeyRow): ApiKey => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  keyPrefix: r.key_prefix,
  scopes: JSON.parse(r.scopes) as Scope[],
  allowedCidrs: JSON.parse(r.allowed_cidrs) as string[],
  expires: r.expires,
  revokedAt: r.revoked_at,
  createdAt: r.created_at,
  tokenEpoch: r.token_epoch,
});

/** The same key with other scopes (a spread keeps keyOf's property order: one object shape). */
export const withScopes = (k: ApiKey, scopes: Scope[]): ApiKey => ({ ...k, scopes });

/** The public view of a key (API listings and the CLI's --json): never the secret. */
export function keyJson(k: ApiKey): Record<string, unknown> {
  return {
    id: k.id,
    org_id: k.orgId,
    name: k.name,
    key_prefix: k.keyPrefix,
    allowed_cidrs: k.allowedCidrs,
    allowed_scopes: k.scopes,
    expires: k.expires,
    revoked_at: k.revokedAt,
    created_at: k.createdAt,
  };
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

function newSecret(): string {
  return SECRET_TAG + randomBytes(24).toString('base64url');
}

/** The overage limit in force: the organisation's own, or its plan's default. */
export function effectiveHardLimit(org: Organisation, plan: Plan): number | null {
  if (org.hardLimitMode === 'set') return org.hardLimit;
  if (org.hardLimitMode === 'none') return null;
  return plan.defaultHardLimit;
}

export function planOf(plans: Plans, org: Organisation): Plan {
  const plan = plans.byKey.get(org.plan);
  if (!plan) throw new AccountError(`organisation ${org.id} is on plan ${org.plan}, which the plans file ${plans.file} does not define`);
  return plan;
}

function checkPlan(plans: Plans, plan: string): void {
  if (!plans.byKey.has(plan)) throw new AccountError(`unknown plan ${JSON.stringify(plan)}: one of ${[...plans.byKey.keys()].join(', ')}`);
}

/** The longest name of an organisation or a key, in UTF-16 units. */
export const MAX_NAME_LENGTH = 200;

/**
 * Characters no name may hold, for they are not seen or act on what is: controls (C0, C1,
 * DEL: an escape sequence in a key name could clear an operator's screen or forge a line of
 * output), format characters (zero-width spaces and joiners, the byte-order mark, soft
 * hyphens, bidirectional marks, overrides and isolates, tag characters: two names that look
 * the same could differ by one), line and paragraph separators, surrogates, private-use and
 * unassigned code points; every default-ignorable code point (the combining grapheme joiner,
 * variation selectors: "ac\u034Fme" looks like "acme"), and the blank Braille pattern, which
 * draws nothing.
 */
export const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\u115f\u1160\u3164\uffa0\u2800]/u;

/** A lone surrogate: text that is not Unicode at all (it would be stored as U+FFFD). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const codePoint = (c: string): string => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * A name checked and normalised: what customers and operators name alike obeys one rule.
 * Normalised to NFC, every kind of space as U+0020, no space at either end, so that names
 * which look the same are the same; refused when not well-formed Unicode or holding a
 * character no one would see (UNPRINTABLE). Callers store the name this returns.
 */
export function checkName(what: 'an organisation' | 'a key' | 'an operator token', name: unknown): string {
  if (typeof name !== 'string') throw new AccountError(`${what} needs a name of 1 to ${MAX_NAME_LENGTH} characters`);
  const lone = LONE_SURROGATE.exec(name);
  if (lone) throw new AccountError(`${what}'s name is not well-formed Unicode (a lone surrogate ${codePoint(lone[0])} at ${lone.index})`);
  const bad = UNPRINTABLE.exec(name);
  if (bad) throw new AccountError(`${what}'s name may not hold control, invisible or bidirectional characters (${codePoint(bad[0])} at ${bad.index})`);
  const normal = name
    .normalize('NFC')
    .replace(/\p{Zs}/gu, ' ')
    .trim();
  if (normal === '' || normal.length > MAX_NAME_LENGTH) throw new AccountError(`${what} needs a name of 1 to ${MAX_NAME_LENGTH} characters`);
  return normal;
}

export function createOrganisation(db: ControlDb, plans: Plans, given: string, plan: string): Organisation {
  const name = checkName('an organisation', given);
  checkPlan(plans, plan);
  const row = { id: randomUUID(), name, plan, hard_limit_mode: 'default', hard_limit: null, created_at: new Date().toISOString() };
  // MAX + 1 under the write lock (SQLite's, or the cluster's on PostgreSQL, whose statements
  // alone would let two nodes read the same MAX): no two organisations take the same number.
  db.transaction(() => {
    db.prepare(
      `INSERT INTO organisations (id, account_id, name, plan, hard_limit_mode, hard_limit, created_at)
       VALUES (@id, (SELECT COALESCE(MAX(account_id), 0) + 1 FROM organisations), @name, @plan, @hard_limit_mode, @hard_limit, @created_at)`,
    ).run(row);
  }, true);
  return mustGetOrganisation(db, row.id);
}

export function listOrganisations(db: ControlDb): Organisation[] {
  return (db.prepare('SELECT * FROM organisations ORDER BY account_id').all() as OrgRow[]).map(orgOf);
}

export function getOrganisation(db: ControlDb, id: string): Organisation | null {
  const row = db.prepare('SELECT * FROM organisations WHERE id = ?').get(id) as OrgRow | undefined;
  return row ? orgOf(row) : null;
}

function mustGetOrganisation(db: ControlDb, id: string): Organisation {
  const org = getOrganisation(db, id);
  if (!org) throw new AccountError(`no organisation ${id}`);
  if (org.deletedAt) throw new AccountError(`organisation ${id} was deleted at ${org.deletedAt}`);
  return org;
}

/**
 * Deletes an organisation: its keys are revoked and its licences end, at once and together;
 * the row stays, marked, so that its download history and audit entries keep their subject
 * and its ids (and account number) are never given to another. Returns what was ended.
 */
export function deleteOrganisation(db: ControlDb, id: string): { org: Organisation; keysRevoked: number; licencesEnded: number } {
  return db.transaction(() => {
    mustGetOrganisation(db, id);
    const now = new Date().toISOString();
    const keys = db.prepare('UPDATE api_keys SET revoked_at = ? WHERE org_id = ? AND revoked_at IS NULL').run(now, id).changes;
    const licences = db.prepare('DELETE FROM licences WHERE org_id = ?').run(id).changes;
    db.prepare('UPDATE organisations SET deleted_at = ? WHERE id = ?').run(now, id);
    return { org: getOrganisation(db, id)!, keysRevoked: Number(keys), licencesEnded: Number(licences) };
  }, true);
}

export function setPlan(db: ControlDb, plans: Plans, id: string, plan: string): Organisation {
  checkPlan(plans, plan);
  mustGetOrganisation(db, id);
  db.prepare('UPDATE organisations SET plan = ? WHERE id = ?').run(plan, id);
  return mustGetOrganisation(db, id);
}

/** A number sets the limit; null removes it (overage allowed); 'default' follows the plan. */
export function setHardLimit(db: ControlDb, id: string, limit: number | null | 'default'): Organisation {
  mustGetOrganisation(db, id);
  if (typeof limit === 'number' && (!Number.isSafeInteger(limit) || limit < 0)) throw new AccountError('an overage limit is an integer ≥ 0');
  const mode = limit === 'default' ? 'default' : limit === null ? 'none' : 'set';
  db.prepare('UPDATE organisations SET hard_limit_mode = ?, hard_limit = ? WHERE id = ?').run(mode, typeof limit === 'number' ? limit : null, id);
  return mustGetOrganisation(db, id);
}

export interface NewKey {
  orgId: string;
  name: string;
  scopes?: readonly string[];
  allowedCidrs?: readonly string[];
  /** ISO 8601 date-time, or null for never. */
  expires?: string | null;
}

/**
 * Refuses an expiry given for a new key that has already passed: the key would be made dead,
 * a mistake its holder finds only when it fails. (Existing keys are judged by their expiry as usual.)
 */
export function checkFutureExpiry(expires: string | null | undefined, nowMs: number): void {
  if (expires === undefined || expires === null) return;
  const t = Date.parse(expires);
  if (!Number.isNaN(t) && t <= nowMs) throw new AccountError(`expires must be in the future: ${new Date(t).toISOString()} has passed`);
}

/** Validated scopes, CIDRs (normalised text) and expiry; throws AccountError with the reason. */
export function checkKeyFields(k: Omit<NewKey, 'orgId'>): { name: string; scopes: Scope[]; cidrs: string[]; expires: string | null } {
  const name = checkName('a key', k.name);
  const scopes: Scope[] = [];
  for (const s of k.scopes ?? []) {
    if (!(SCOPES as readonly string[]).includes(s)) throw new AccountError(`unknown scope ${JSON.stringify(s)}: one of ${SCOPES.join(', ')}`);
    if (!scopes.includes(s as Scope)) scopes.push(s as Scope);
  }
  const cidrs: string[] = [];
  for (const c of k.allowedCidrs ?? []) {
    if (typeof c !== 'string' || !c.includes('/')) throw new AccountError(`not a CIDR: ${JSON.stringify(c)}`);
    const r = parseNetwork(c);
    if (!r.ok) throw new AccountError(`not a CIDR: ${JSON.stringify(c)} (${r.reason})`);
    cidrs.push(c.trim());
  }
  return { name, scopes, cidrs, expires: expiryOf(k.expires) };
}

/** An expiry as given (ISO 8601 date-time, or null/absent for never), normalised; refused when it is not one. */
export function expiryOf(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  const t = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(t))
    throw new AccountError(`expires must be an ISO 8601 date-time: ${JSON.stringify(value)}`);
  return new Date(t).toISOString();
}

/** An organisation holds as many live keys as it may: one more is refused until one is revoked. */
export class KeyLimitError extends AccountError {
  constructor(readonly limit: number) {
    super(`this organisation holds ${limit} live keys, the most it may (MAX_KEYS_PER_ORG): revoke keys it no longer uses first`);
  }
}

/** Keys neither revoked nor expired at `nowIso`. */
export function liveKeyCount(db: ControlDb, orgId: string, nowIso: string): number {
  const r = db
    .prepare('SELECT count(*) AS n FROM api_keys WHERE org_id = ? AND revoked_at IS NULL AND (expires IS NULL OR expires > ?)')
    .get(orgId, nowIso) as { n: number | string };
  return Number(r.n);
}

/**
 * Creates a key; the secret is returned here and never again. With `maxLive`, refused
 * (KeyLimitError) when the organisation already holds that many live keys; the count and the
 * insert are one write transaction, so two threads or nodes cannot both take the last place.
 */
export function createKey(db: ControlDb, k: NewKey, maxLive = Infinity): { key: ApiKey; secret: string } {
  if (maxLive === Infinity) return insertKey(db, k);
  return db.transaction(() => {
    if (liveKeyCount(db, k.orgId, new Date().toISOString()) >= maxLive) throw new KeyLimitError(maxLive);
    return insertKey(db, k);
  }, true);
}

function insertKey(db: ControlDb, k: NewKey): { key: ApiKey; secret: string } {
  mustGetOrganisation(db, k.orgId);
  const f = checkKeyFields(k);
  const secret = newSecret();
  const row: KeyRow & { secret_hash: string } = {
    id: randomUUID(),
    org_id: k.orgId,
    name: f.name,
    key_prefix: secret.slice(0, PREFIX_LENGTH),
    secret_hash: hashSecret(secret),
    scopes: JSON.stringify(f.scopes),
    allowed_cidrs: JSON.stringify(f.cidrs),
    expires: f.expires,
    revoked_at: null,
    created_at: new Date().toISOString(),
    token_epoch: 0,
  };
  db.prepare(
    `INSERT INTO api_keys (id, org_id, name, key_prefix, secret_hash, scopes, allowed_cidrs, expires, revoked_at, created_at, token_epoch)
     VALUES (@id, @org_id, @name, @key_prefix, @secret_hash, @scopes, @allowed_cidrs, @expires, @revoked_at, @created_at, @token_epoch)`,
  ).run(row);
  return { key: keyOf(row), secret };
}

export function listKeys(db: ControlDb, orgId?: string): ApiKey[] {
  const rows = orgId
    ? (db.prepare('SELECT * FROM api_keys WHERE org_id = ? ORDER BY created_at, id').all(orgId) as KeyRow[])
    : (db.prepare('SELECT * FROM api_keys ORDER BY created_at, id').all() as KeyRow[]);
  return rows.map(keyOf);
}

/** One page of a listing: its items, and the cursor of the next page (null: this is the last). */
export interface Page<T> {
  items: T[];
  next: string | null;
}

/** Why a key list's cursor was refused: one answer whether the id is unknown or another organisation's. */
export const KEY_CURSOR_RULE = "after must be the next of an earlier page of this organisation's keys";

/**
 * A page of an organisation's keys, oldest first. The cursor must be one of the organisation's
 * own keys (AccountError otherwise): another's would tell its creation time and order.
 */
export function pageKeys(db: ControlDb, orgId: string, limit: number, after?: string): Page<ApiKey> {
  // The cursor's place, then one range of the (org_id, created_at, id) index: a page reads
  // its own rows only, however many keys the organisation holds.
  let rows: KeyRow[];
  if (after === undefined) rows = db.prepare('SELECT * FROM api_keys WHERE org_id = ? ORDER BY created_at, id LIMIT ?').all(orgId, limit + 1) as KeyRow[];
  else {
    const from = db.prepare('SELECT created_at FROM api_keys WHERE id = ? AND org_id = ?').get(after, orgId) as { created_at: string } | undefined;
    if (from === undefined) throw new AccountError(KEY_CURSOR_RULE);
    rows = db
      .prepare('SELECT * FROM api_keys WHERE org_id = ? AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?')
      .all(orgId, from.created_at, after, limit + 1) as KeyRow[];
  }
  const items = rows.slice(0, limit).map(keyOf);
  return { items, next: rows.length > limit ? items[items.length - 1].id : null };
}

/** A LIKE pattern's text taken literally ('!' is the escape character of the statements below). */
const likeText = (s: string): string => s.replace(/[!%_]/g, '!$&');

/**
 * A page of organisations in account-number order; `search`: only those whose name holds it
 * (any case) or whose id begins with it.
 */
export function pageOrganisations(db: ControlDb, limit: number, after = 0, includeDeleted = false, search: string | null = null): Page<Organisation> {
  const matching = search === null ? '' : "AND (lower(name) LIKE ? ESCAPE '!' OR id LIKE ? ESCAPE '!')";
  const terms = search === null ? [] : [`%${likeText(search.toLowerCase())}%`, `${likeText(search.toLowerCase())}%`];
  const rows = db
    .prepare(`SELECT * FROM organisations WHERE account_id > ? ${includeDeleted ? '' : 'AND deleted_at IS NULL'} ${matching} ORDER BY account_id LIMIT ?`)
    .all(after, ...terms, limit + 1) as OrgRow[];
  const items = rows.slice(0, limit).map(orgOf);
  return { items, next: rows.length > limit ? String(items[items.length - 1].accountId) : null };
}

export function getKey(db: ControlDb, id: string): ApiKey | null {
  const row = db.prepare('SELECT * FROM api_keys WHERE id = ?').get(id) as KeyRow | undefined;
  return row ? keyOf(row) : null;
}

export function findKeyBySecret(db: ControlDb, secret: string): ApiKey | null {
  const row = db.prepare('SELECT * FROM api_keys WHERE secret_hash = ?').get(hashSecret(secret)) as KeyRow | undefined;
  return row ? keyOf(row) : null;
}

export function revokeKey(db: ControlDb, id: string): ApiKey {
  if (!getKey(db, id)) throw new AccountError(`no API key ${id}`);
  db.prepare('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?').run(new Date().toISOString(), id);
  return getKey(db, id)!;
}

/** A new secret for the key; the old one stops working. Revoked keys cannot be rotated. */
export function rotateKey(db: ControlDb, id: string): { key: ApiKey; secret: string } {
  const key = getKey(db, id);
  if (!key) throw new AccountError(`no API key ${id}`);
  if (key.revokedAt) throw new AccountError(`API key ${id} is revoked`);
  const secret = newSecret();
  // A new secret ends the key's short-lived tokens too (a new token epoch); the revocations
  // kept for them are void with them.
  db.transaction(() => {
    db.prepare('UPDATE api_keys SET secret_hash = ?, key_prefix = ?, token_epoch = token_epoch + 1 WHERE id = ?').run(
      hashSecret(secret),
      secret.slice(0, PREFIX_LENGTH),
      id,
    );
    db.prepare('DELETE FROM revoked_tokens WHERE key_id = ?').run(id);
  }, true);
  return { key: getKey(db, id)!, secret };
}
