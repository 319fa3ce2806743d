// The operator's API on the admin port (/admin/v1/…): organisations, licences, keys of any
// organisation, usage, download history and the audit log, through the same service layer as
// the CLI (control/operator.ts). Every request carries an operator token
// (`Authorization: Bearer iat_…`, made by `ipsift admin token create`): admin.read for GET,
// admin.write for changes, admitted by admin-routes.ts. Errors are {"rc": code, "message": why}: 400 BAD_REQUEST, 401
// UNAUTHORIZED (no token, unknown or revoked), 403 FORBIDDEN (scope), 404 NOT_FOUND, 409 CONFLICT.

import { RC } from '../../wire/errors.js';
import type { AdminScope } from '../../control/admin-tokens.js';
import type { Actor } from '../../control/audit.js';
import { LIMIT_RULE, Operator, OperatorError, listLimit, type OperatorDeps } from '../../control/operator.js';
import type { LicenceType } from '../../control/licences.js';
import { parseSmallBody, readSmallBody } from '../../http/body.js';
import type { BodySchema } from '../../wire/body-schema.js';
import {
  ADMIN_TOKEN_CREATE_REQUEST,
  LICENCE_GRANT_REQUEST,
  NO_FIELDS,
  OPERATOR_KEY_CREATE_REQUEST,
  ORGANISATION_CREATE_REQUEST,
  ORGANISATION_UPDATE_REQUEST,
} from '../../wire/request-bodies.js';
import { late, pending, sendJson, sendRc } from '../../http/reply.js';
import type { HttpRequest, HttpResponse } from '../../http/server/types.js';
import type { AdminRoutes } from './admin-routes.js';

const BASE = '/admin/v1';

type Doc = Record<string, unknown>;
/** A request's work: reads `op` (acting as the token's holder) and the body, returns the answer. */
type Work = (op: Operator, body: Doc, params: readonly string[], query: URLSearchParams) => { status: number; doc: unknown };

const RC_OF = { BAD_REQUEST: RC.BAD_REQUEST, NOT_FOUND: RC.NOT_FOUND, CONFLICT: RC.CONFLICT } as const;

/** A list's `limit` query parameter (listLimit), refused when malformed. */
function limitOf(q: URLSearchParams): number {
  const limit = listLimit(q.get('limit'));
  if (limit === null) throw new OperatorError('BAD_REQUEST', LIMIT_RULE);
  return limit;
}

/** A true/false query parameter: absent is false; anything but true or false is refused, not read as false. */
function flagOf(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  if (v === null || v === 'false') return false;
  if (v === 'true') return true;
  throw new OperatorError('BAD_REQUEST', `${name} must be true or false, not ${JSON.stringify(v.slice(0, 20))}`);
}

const optionalString = (body: Doc, field: string): string | undefined => {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new OperatorError('BAD_REQUEST', `${field} must be a string`);
  return v;
};

const requiredString = (body: Doc, field: string): string => {
  const v = optionalString(body, field);
  if (v === undefined) throw new OperatorError('BAD_REQUEST', `${field} is required (a string)`);
  return v;
};

const optionalStrings = (body: Doc, field: string): string[] | undefined => {
  const v = body[field];
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new OperatorError('BAD_REQUEST', `${field} must be an array of strings`);
  return v as string[];
};

export class OperatorApi {
  constructor(private readonly deps: OperatorDeps) {}

  register(admin: AdminRoutes): void {
    const { table: routes, edge } = admin;
    const { deps } = this;
    const { metrics } = edge;
    /** Registers a route: token and scope first, then (for writes) the JSON body, then the work. */
    const route = (method: 'get' | 'post' | 'del', pattern: string, scope: AdminScope, work: Work, schema: BodySchema = NO_FIELDS): void => {
      const arity = pattern.split('/').filter((s) => s.startsWith(':')).length;
      routes[method](
        BASE + pattern,
        (res, req) => {
          const actor = authorise(res, req, scope);
          if (actor === null) return;
          const params: string[] = [];
          try {
            for (let i = 0; i < arity; i++) params.push(decodeURIComponent(req.getParameter(i) ?? ''));
          } catch {
            return sendRc(res, RC.BAD_REQUEST, 'malformed percent-encoding in the path', metrics);
          }
          const query = new URLSearchParams(req.getQuery() ?? '');
          const run = (body: Doc): void => {
            try {
              const { status, doc } = work(new Operator(deps, actor), body, params, query);
              sendJson(res, status, doc, metrics);
            } catch (e) {
              if (!(e instanceof OperatorError)) throw e;
              sendRc(res, RC_OF[e.rc], e.message, metrics);
            }
          };
          if (method !== 'post') return run({});
          const p = pending(res);
          readSmallBody(res, p, routes, (text) =>
            late(res, p, () => {
              const body = parseSmallBody<Doc>(text, schema, { emptyIsObject: true });
              if ('refused' in body) return sendRc(res, RC.BAD_REQUEST, body.refused, metrics);
              run(body.value);
            }),
          );
        },
        { internal: RC.INTERNAL, family: 'account' },
      );
    };

    const authorise = (res: HttpResponse, req: HttpRequest, scope: AdminScope): Actor | null => admin.admit(res, req, scope)?.actor ?? null;

    const ok = (doc: unknown, status = 200): { status: number; doc: unknown } => ({ status, doc });

    route('get', '/plans', 'admin.read', () =>
      ok({
        plans: [...deps.plans.byKey.values()].map((p) => ({ plan: p.key, tier: p.tier, quota: p.quota, default_hard_limit: p.defaultHardLimit })),
        license_bases: deps.bases,
      }),
    );
    route('get', '/organizations', 'admin.read', (op, _b, _p, q) => ok(op.pageOrganisations(limitOf(q), q.get('after'), flagOf(q, 'deleted'), q.get('q'))));
    route('post', '/organizations', 'admin.write', (op, b) => ok(op.createOrganisation(b.name, b.plan), 201), ORGANISATION_CREATE_REQUEST);
    route('get', '/organizations/:id', 'admin.read', (op, _b, [id]) => ok(op.showOrganisation(id)));
    route(
      'post',
      '/organizations/:id',
      'admin.write',
      (op, b, [id]) => {
        if (b.plan === undefined && !('hard_limit' in b)) throw new OperatorError('BAD_REQUEST', 'nothing to change: give plan and/or hard_limit');
        // Over JSON a number is a number: "5" is refused, not read as 5 (the CLI's text is another matter).
        if (typeof b.hard_limit === 'string' && b.hard_limit !== 'none' && b.hard_limit !== 'default')
          throw new OperatorError(
            'BAD_REQUEST',
            `hard_limit must be a whole number, null, "none" or "default", not the string ${JSON.stringify(b.hard_limit.slice(0, 20))}`,
          );
        // Both or neither: a refused overage limit leaves the plan as it was.
        return ok(
          op.change(() => {
            let doc = op.showOrganisation(id);
            if (b.plan !== undefined) doc = op.setPlan(id, b.plan);
            if ('hard_limit' in b) doc = op.setHardLimit(id, b.hard_limit);
            return doc;
          }),
        );
      },
      ORGANISATION_UPDATE_REQUEST,
    );
    route('del', '/organizations/:id', 'admin.write', (op, _b, [id]) => ok(op.deleteOrganisation(id)));

    route('get', '/organizations/:id/keys', 'admin.read', (op, _b, [id], q) => ok(op.pageKeys(id, limitOf(q), q.get('after'))));
    route(
      'post',
      '/organizations/:id/keys',
      'admin.write',
      (op, b, [id]) =>
        ok(
          op.createKey(id, {
            name: requiredString(b, 'name'),
            scopes: optionalStrings(b, 'allowed_scopes'),
            allowedCidrs: optionalStrings(b, 'allowed_cidrs'),
            expires: optionalString(b, 'expires') ?? null,
          }),
          201,
        ),
      OPERATOR_KEY_CREATE_REQUEST,
    );
    route('get', '/keys/:id', 'admin.read', (op, _b, [id]) => ok(op.showKey(id)));
    route('del', '/keys/:id', 'admin.write', (op, _b, [id]) => ok(op.revokeKey(id)));
    route('post', '/keys/:id/rotate', 'admin.write', (op, _b, [id]) => ok(op.rotateKey(id)));

    route('get', '/organizations/:id/licenses', 'admin.read', (op, _b, [id]) => ok({ licenses: op.listLicences(id) }));
    route(
      'post',
      '/organizations/:id/licenses',
      'admin.write',
      (op, b, [id]) =>
        ok(
          op.grantLicence({
            orgId: id,
            base: requiredString(b, 'base'),
            licenceType: requiredString(b, 'license_type') as LicenceType,
            starts: requiredString(b, 'starts'),
            expires: requiredString(b, 'expires'),
            renewsAt: optionalString(b, 'renews_at') ?? null,
            noticeDueAt: optionalString(b, 'notice_due_at') ?? null,
          }),
          201,
        ),
      LICENCE_GRANT_REQUEST,
    );
    route('del', '/organizations/:id/licenses/:base', 'admin.write', (op, _b, [id, base]) => ok(op.revokeLicence(id, base)));

    route('get', '/organizations/:id/usage', 'admin.read', (op, _b, [id]) => ok(op.usage(id)));
    route('get', '/organizations/:id/downloads', 'admin.read', (op, _b, [id], q) => ok({ downloads: op.downloads(id, limitOf(q)) }));
    route('get', '/tokens', 'admin.read', (op) => ok({ tokens: op.listAdminTokens() }));
    route(
      'post',
      '/tokens',
      'admin.write',
      (op, b) => ok(op.createAdminToken(requiredString(b, 'name'), optionalStrings(b, 'scopes') ?? [], optionalString(b, 'expires') ?? null), 201),
      ADMIN_TOKEN_CREATE_REQUEST,
    );
    route('del', '/tokens/:id', 'admin.write', (op, _b, [id]) => ok(op.revokeAdminToken(id)));

    route('get', '/audit', 'admin.read', (op, _b, _p, q) => {
      const before = q.get('before');
      if (before !== null && !/^[1-9]\d{0,15}$/.test(before)) throw new OperatorError('BAD_REQUEST', 'before must be an audit entry id');
      return ok({ entries: op.auditLog({ orgId: q.get('org_id') ?? undefined, before: before === null ? undefined : Number(before), limit: limitOf(q) }) });
    });
  }
}
