// The operator's service layer: every change to organisations, licences and keys that the CLI
// (cli/accounts.ts) and the admin API (api/admin/operator.ts) make goes through here, so that
// neither can do what the other cannot — the same validation, the same answers (the CLI's
// --json is the API's body) and one audit entry per change.

import {
  AccountError,
  createKey,
  createOrganisation,
  deleteOrganisation,
  effectiveHardLimit,
  getKey,
  getOrganisation,
  keyJson,
  listKeys,
  listOrganisations,
  planOf,
  revokeKey,
  rotateKey,
  setHardLimit,
  checkFutureExpiry,
  setPlan,
  pageKeys,
  pageOrganisations,
  KeyLimitError,
  type Organisation,
} from './accounts.js';
import { adminTokenJson, createAdminToken, isLive, listAdminTokens, otherLiveWriters, revokeAdminToken } from './admin-tokens.js';
import { listAudit, recordAudit, type Actor, type AuditEntry } from './audit.js';
import { downloadHistory } from './downloads.js';
import type { ControlDb } from './control-db.js';
import type { Plans } from '../model/plans.js';
import { grantLicence, listLicences, revokeLicence, standingOf, type Grant, type Licence } from './licences.js';
import { WindowClock, orgCounter } from '../accounting/windows.js';
import { IpsiftError } from '../errors.js';

/** The longest organisation search (`q`) taken. */
const MAX_SEARCH = 200;

/** What went wrong, as the admin API's result code: the request (400), its subject (404), or its state (409). */
export type OperatorRc = 'BAD_REQUEST' | 'NOT_FOUND' | 'CONFLICT';

export class OperatorError extends IpsiftError {
  constructor(
    readonly rc: OperatorRc,
    message: string,
  ) {
    super('ACCOUNT', message);
  }
}

export interface OperatorDeps {
  db: ControlDb;
  plans: Plans;
  /** Database bases a licence may name (CATALOGUE_FILE). */
  bases: readonly string[];
  /** Units spent on an accounting counter (the accounting store of the data directory). */
  spent: (counter: string) => number;
  /** The most live keys an organisation may hold (MAX_KEYS_PER_ORG). */
  maxKeysPerOrg: number;
}

export interface KeyFields {
  name: string;
  scopes?: readonly string[];
  allowedCidrs?: readonly string[];
  expires?: string | null;
}

export const DEFAULT_LIST_LIMIT = 50;
export const MAX_LIST_LIMIT = 200;

/**
 * A listing's `limit` query parameter, one rule for every list: DEFAULT_LIST_LIMIT when
 * absent; any whole number from 1 up, taken as at most MAX_LIST_LIMIT (a client asking for
 * more gets a full page); null for anything else (0, a sign, a fraction, an exponent).
 */
export function listLimit(raw: string | null): number | null {
  if (raw === null) return DEFAULT_LIST_LIMIT;
  if (!/^[1-9]\d*$/.test(raw)) return null;
  return raw.length > 3 ? MAX_LIST_LIMIT : Math.min(MAX_LIST_LIMIT, Number(raw));
}

/** What listLimit refuses, said once for the API and the CLI. */
export const LIMIT_RULE = `limit must be a whole number from 1 (pages hold at most ${MAX_LIST_LIMIT})`;

export function licenceJson(l: Licence): Record<string, unknown> {
  return {
    org_id: l.orgId,
    base: l.base,
    license_type: l.licenceType,
    starts: l.starts,
    expires: l.expires,
    renews_at: l.renewsAt,
    notice_due_at: l.noticeDueAt,
    standing: standingOf(l, Date.now()),
  };
}

export class Operator {
  constructor(
    private readonly deps: OperatorDeps,
    private readonly actor: Actor,
  ) {}

  private get db(): ControlDb {
    return this.deps.db;
  }

  orgJson(org: Organisation): Record<string, unknown> {
    const plan = planOf(this.deps.plans, org);
    return {
      id: org.id,
      account_id: org.accountId,
      name: org.name,
      plan: org.plan,
      tier: plan.tier,
      quota: plan.quota,
      hard_limit: effectiveHardLimit(org, plan),
      created_at: org.createdAt,
      ...(org.deletedAt ? { deleted_at: org.deletedAt } : {}),
    };
  }

  /** A live organisation, or NOT_FOUND (unknown or deleted). */
  private org(id: string): Organisation {
    const org = getOrganisation(this.db, id);
    if (!org || org.deletedAt) throw new OperatorError('NOT_FOUND', `no organisation ${id}`);
    return org;
  }

  /**
   * Runs a change and its audit entry in one transaction (both or neither); AccountErrors of
   * the lower layer are the request's fault. Changes made inside one another join the outer.
   */
  change<T>(fn: () => T): T {
    try {
      return this.db.transaction(fn, true);
    } catch (e) {
      if (e instanceof KeyLimitError) throw new OperatorError('CONFLICT', e.message);
      if (e instanceof AccountError) throw new OperatorError('BAD_REQUEST', e.message);
      throw e;
    }
  }

  private audit(action: string, orgId: string | null, target: string | null, detail: Record<string, unknown> = {}): void {
    recordAudit(this.db, this.actor, action, orgId, target, detail);
  }

  createOrganisation(name: unknown, plan: unknown): Record<string, unknown> {
    if (typeof name !== 'string' || typeof plan !== 'string') throw new OperatorError('BAD_REQUEST', 'an organisation needs a name and a plan (strings)');
    const org = this.change(() => {
      const o = createOrganisation(this.db, this.deps.plans, name, plan);
      this.audit('org.create', o.id, o.id, { name, plan });
      return o;
    });
    return this.orgJson(org);
  }

  listOrganisations(includeDeleted = false): Record<string, unknown>[] {
    return listOrganisations(this.db)
      .filter((o) => includeDeleted || !o.deletedAt)
      .map((o) => this.orgJson(o));
  }

  /** One page of organisations in account-number order; `after` is the last page's `next`. */
  pageOrganisations(
    limit: number,
    after: string | null,
    includeDeleted = false,
    search: string | null = null,
  ): { organizations: Record<string, unknown>[]; next: string | null } {
    if (after !== null && !/^[1-9]\d{0,15}$/.test(after))
      throw new OperatorError('BAD_REQUEST', 'after must be the next cursor of the page before (an account number)');
    if (search !== null && (search === '' || search.length > MAX_SEARCH))
      throw new OperatorError('BAD_REQUEST', `q must be 1 to ${MAX_SEARCH} characters: part of a name, or the start of an id`);
    const page = pageOrganisations(this.db, limit, after === null ? 0 : Number(after), includeDeleted, search);
    return { organizations: page.items.map((o) => this.orgJson(o)), next: page.next };
  }

  /** One page of an organisation's keys, oldest first; `after` is the last page's `next`. */
  pageKeys(orgId: string, limit: number, after: string | null): { apikeys: Record<string, unknown>[]; next: string | null } {
    this.org(orgId);
    let page: ReturnType<typeof pageKeys>;
    try {
      page = pageKeys(this.db, orgId, limit, after ?? undefined);
    } catch (e) {
      if (e instanceof AccountError) throw new OperatorError('BAD_REQUEST', e.message);
      throw e;
    }
    return { apikeys: page.items.map(keyJson), next: page.next };
  }

  /** The organisation with its first MAX_LIST_LIMIT keys; keys_next pages on (pageKeys). */
  showOrganisation(id: string): Record<string, unknown> {
    const org = this.org(id);
    const page = pageKeys(this.db, org.id, MAX_LIST_LIMIT);
    return { ...this.orgJson(org), keys: page.items.map(keyJson), keys_next: page.next };
  }

  setPlan(id: string, plan: unknown): Record<string, unknown> {
    const before = this.org(id);
    if (typeof plan !== 'string') throw new OperatorError('BAD_REQUEST', 'plan must be a string');
    const org = this.change(() => {
      const o = setPlan(this.db, this.deps.plans, id, plan);
      this.audit('org.plan', id, id, { from: before.plan, to: plan });
      return o;
    });
    return this.orgJson(org);
  }

  /** `limit`: a whole number, null or 'none' (no limit), or 'default' (the plan's). */
  setHardLimit(id: string, limit: unknown): Record<string, unknown> {
    this.org(id);
    let v: number | null | 'default';
    if (limit === 'default') v = 'default';
    else if (limit === null || limit === 'none') v = null;
    else if (typeof limit === 'number' && Number.isSafeInteger(limit) && limit >= 0) v = limit;
    else if (typeof limit === 'string' && /^\d{1,15}$/.test(limit)) v = Number(limit);
    else throw new OperatorError('BAD_REQUEST', 'the overage limit is a whole number ≥ 0, none (null) or default');
    const org = this.change(() => {
      const o = setHardLimit(this.db, id, v);
      this.audit('org.hard_limit', id, id, { hard_limit: v === null ? 'none' : v });
      return o;
    });
    return this.orgJson(org);
  }

  deleteOrganisation(id: string): Record<string, unknown> {
    this.org(id);
    const r = this.change(() => {
      const d = deleteOrganisation(this.db, id);
      this.audit('org.delete', id, id, { keys_revoked: d.keysRevoked, licences_ended: d.licencesEnded });
      return d;
    });
    return { ...this.orgJson(r.org), keys_revoked: r.keysRevoked, licences_ended: r.licencesEnded };
  }

  createKey(orgId: string, f: KeyFields): Record<string, unknown> {
    this.org(orgId);
    try {
      checkFutureExpiry(f.expires, Date.now());
    } catch (e) {
      throw new OperatorError('BAD_REQUEST', (e as Error).message);
    }
    const { key, secret } = this.change(() => {
      const made = createKey(this.db, { orgId, ...f }, this.deps.maxKeysPerOrg);
      this.audit('key.create', orgId, made.key.id, {
        name: made.key.name,
        key_prefix: made.key.keyPrefix,
        scopes: made.key.scopes,
        allowed_cidrs: made.key.allowedCidrs,
        expires: made.key.expires,
      });
      return made;
    });
    return { ...keyJson(key), key: secret };
  }

  listKeys(orgId?: string): Record<string, unknown>[] {
    if (orgId !== undefined) this.org(orgId);
    return listKeys(this.db, orgId).map(keyJson);
  }

  showKey(id: string): Record<string, unknown> {
    const k = getKey(this.db, id);
    if (!k) throw new OperatorError('NOT_FOUND', `no API key ${id}`);
    return keyJson(k);
  }

  revokeKey(id: string): Record<string, unknown> {
    const k = getKey(this.db, id);
    if (!k) throw new OperatorError('NOT_FOUND', `no API key ${id}`);
    const after = this.change(() => {
      const a = revokeKey(this.db, id);
      if (!k.revokedAt) this.audit('key.revoke', k.orgId, id, { key_prefix: k.keyPrefix });
      return a;
    });
    return keyJson(after);
  }

  rotateKey(id: string): Record<string, unknown> {
    const k = getKey(this.db, id);
    if (!k) throw new OperatorError('NOT_FOUND', `no API key ${id}`);
    if (k.revokedAt) throw new OperatorError('CONFLICT', `API key ${id} is revoked`);
    const { key, secret } = this.change(() => {
      const r = rotateKey(this.db, id);
      this.audit('key.rotate', k.orgId, id, { from_prefix: k.keyPrefix, key_prefix: r.key.keyPrefix });
      return r;
    });
    return { ...keyJson(key), key: secret };
  }

  grantLicence(g: Grant): Record<string, unknown> {
    this.org(g.orgId);
    const l = this.change(() => {
      const granted = grantLicence(this.db, g, this.deps.bases);
      this.audit('license.grant', g.orgId, granted.base, {
        license_type: granted.licenceType,
        starts: granted.starts,
        expires: granted.expires,
        renews_at: granted.renewsAt,
        notice_due_at: granted.noticeDueAt,
      });
      return granted;
    });
    return licenceJson(l);
  }

  revokeLicence(orgId: string, base: string): Record<string, unknown> {
    this.org(orgId);
    this.change(() => {
      if (!revokeLicence(this.db, orgId, base)) throw new OperatorError('NOT_FOUND', `organisation ${orgId} holds no licence for ${base}`);
      this.audit('license.revoke', orgId, base);
    });
    return { revoked: { org_id: orgId, base } };
  }

  listLicences(orgId?: string): Record<string, unknown>[] {
    if (orgId !== undefined) this.org(orgId);
    return listLicences(this.db, orgId).map(licenceJson);
  }

  /** This calendar month's requests against quota and overage limit. */
  usage(orgId: string, nowMs = Date.now()): Record<string, unknown> {
    const org = this.org(orgId);
    const plan = planOf(this.deps.plans, org);
    const window = new WindowClock().month(nowMs);
    return {
      org_id: org.id,
      plan: org.plan,
      requests: this.deps.spent(orgCounter(org.id, window)),
      quota: plan.quota,
      hard_limit: effectiveHardLimit(org, plan),
      window_start: new Date(window.startMs).toISOString(),
      window_end: new Date(window.endMs).toISOString(),
    };
  }

  /** The organisation's download history (interface.md §2.7), newest first. */
  downloads(orgId: string, limit = DEFAULT_LIST_LIMIT): Record<string, unknown>[] {
    const org = getOrganisation(this.db, orgId);
    if (!org) throw new OperatorError('NOT_FOUND', `no organisation ${orgId}`);
    return downloadHistory(this.db, org.id, limit);
  }

  listAdminTokens(): Record<string, unknown>[] {
    return listAdminTokens(this.db).map(adminTokenJson);
  }

  /** A new operator token; its secret is in this answer only. */
  createAdminToken(name: string, scopes: readonly string[], expires: string | null = null): Record<string, unknown> {
    const made = this.change(() => {
      const m = createAdminToken(this.db, name, scopes, expires);
      this.audit('admin_token.create', null, m.token.id, {
        name: m.token.name,
        token_prefix: m.token.tokenPrefix,
        scopes: m.token.scopes,
        expires_at: m.token.expiresAt,
      });
      return m;
    });
    return { ...adminTokenJson(made.token), token: made.secret };
  }

  revokeAdminToken(id: string): Record<string, unknown> {
    return adminTokenJson(
      this.change(() => {
        const before = listAdminTokens(this.db).find((t) => t.id === id);
        if (before === undefined) throw new OperatorError('NOT_FOUND', `no operator token ${id}`);
        // Revoking the last live write token over the API would leave no one able to write
        // through it: the command line, at the control database, is the way out.
        if (isLive(before, Date.now()) && before.scopes.includes('admin.write') && otherLiveWriters(this.db, id).length === 0)
          throw new OperatorError(
            'CONFLICT',
            'this is the last live admin.write token: create another first (POST /admin/v1/tokens), or revoke it with `ipsift admin token revoke` where the control database is',
          );
        const t = revokeAdminToken(this.db, id);
        if (before.revokedAt === null) this.audit('admin_token.revoke', null, id, { token_prefix: t.tokenPrefix });
        return t;
      }),
    );
  }

  auditLog(q: { orgId?: string; before?: number; limit?: number }): AuditEntry[] {
    return listAudit(this.db, { orgId: q.orgId, before: q.before, limit: q.limit ?? DEFAULT_LIST_LIMIT });
  }
}
