// Licences per organisation and database base (DESIGN.md §6), and the standing derived from
// the clock: licensed while in term, expired after a term ended, unlicensed if never held.

import type { ControlDb } from './control-db.js';
import { AccountError, getOrganisation } from './accounts.js';

export type LicenceType = 'evaluation' | 'subscription';
export type Standing = 'licensed' | 'expired' | 'unlicensed';

export interface Licence {
  orgId: string;
  base: string;
  licenceType: LicenceType;
  starts: string;
  expires: string;
  renewsAt: string | null;
  noticeDueAt: string | null;
}

interface Row {
  org_id: string;
  base: string;
  license_type: LicenceType;
  starts: string;
  expires: string;
  renews_at: string | null;
  notice_due_at: string | null;
}

const licenceOf = (r: Row): Licence => ({
  orgId: r.org_id,
  base: r.base,
  licenceType: r.license_type,
  starts: r.starts,
  expires: r.expires,
  renewsAt: r.renews_at,
  noticeDueAt: r.notice_due_at,
});

function isoTime(what: string, v: string): string {
  const t = Date.parse(v);
  if (!/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(t)) throw new AccountError(`${what} must be an ISO 8601 date or date-time: ${JSON.stringify(v)}`);
  return new Date(t).toISOString();
}

export interface Grant {
  orgId: string;
  base: string;
  licenceType: LicenceType;
  starts: string;
  expires: string;
  /** Subscriptions: when the term renews (default: at expiry). Evaluations: none. */
  renewsAt?: string | null;
  /** Last moment to give notice before renewal (default: 30 days before renewal). */
  noticeDueAt?: string | null;
}

/** Grants (or replaces) the organisation's licence for a base. */
export function grantLicence(db: ControlDb, g: Grant, knownBases: readonly string[]): Licence {
  if (!getOrganisation(db, g.orgId)) throw new AccountError(`no organisation ${g.orgId}`);
  if (!knownBases.includes(g.base)) throw new AccountError(`unknown database base ${JSON.stringify(g.base)}: one of ${knownBases.join(', ')}`);
  if (g.licenceType !== 'evaluation' && g.licenceType !== 'subscription') throw new AccountError('license type is evaluation or subscription');
  const starts = isoTime('starts', g.starts);
  const expires = isoTime('expires', g.expires);
  if (expires <= starts) throw new AccountError('a licence must expire after it starts');
  let renewsAt: string | null = null;
  let noticeDueAt: string | null = null;
  if (g.licenceType === 'subscription') {
    renewsAt = g.renewsAt ? isoTime('renews_at', g.renewsAt) : expires;
    noticeDueAt = g.noticeDueAt ? isoTime('notice_due_at', g.noticeDueAt) : new Date(Date.parse(renewsAt) - 30 * 86_400_000).toISOString();
  }
  db.prepare(
    `INSERT INTO licences (org_id, base, license_type, starts, expires, renews_at, notice_due_at, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (org_id, base) DO UPDATE SET license_type = excluded.license_type, starts = excluded.starts,
       expires = excluded.expires, renews_at = excluded.renews_at, notice_due_at = excluded.notice_due_at`,
  ).run(g.orgId, g.base, g.licenceType, starts, expires, renewsAt, noticeDueAt, new Date().toISOString());
  return getLicence(db, g.orgId, g.base)!;
}

export function revokeLicence(db: ControlDb, orgId: string, base: string): boolean {
  return db.prepare('DELETE FROM licences WHERE org_id = ? AND base = ?').run(orgId, base).changes > 0;
}

export function getLicence(db: ControlDb, orgId: string, base: string): Licence | null {
  const r = db.prepare('SELECT * FROM licences WHERE org_id = ? AND base = ?').get(orgId, base) as Row | undefined;
  return r ? licenceOf(r) : null;
}

export function listLicences(db: ControlDb, orgId?: string): Licence[] {
  const rows = orgId
    ? (db.prepare('SELECT * FROM licences WHERE org_id = ? ORDER BY base').all(orgId) as Row[])
    : (db.prepare('SELECT * FROM licences ORDER BY org_id, base').all() as Row[]);
  return rows.map(licenceOf);
}

export function inTerm(l: Licence | null, nowMs: number): boolean {
  return l !== null && Date.parse(l.starts) <= nowMs && nowMs < Date.parse(l.expires);
}

/** licensed in term; expired once the term has ended; unlicensed if never held (or not yet begun). */
export function standingOf(l: Licence | null, nowMs: number): Standing {
  if (l === null || nowMs < Date.parse(l.starts)) return 'unlicensed';
  return inTerm(l, nowMs) ? 'licensed' : 'expired';
}
