// Account and key endpoints (interface.md §2.8, §2.9; DESIGN.md §5): GET /api/v1/account/me
// and /api/v1/iam/apikeys (create, list, revoke, rotate). Key management answers with
// {"rc": …} bodies; the account answer uses the lookup group's {"error": …}.

import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { ERRORS, statusLine, type ApiError } from '../api/errors.js';
import { AccountError, checkKeyFields, keyJson, createKey, getKey, listKeys, revokeKey, rotateKey, type ApiKey } from '../accounts/accounts.js';
import type { Caller, KeyCache } from '../accounts/auth.js';
import type { ControlDb } from '../accounts/control-db.js';
import type { Logger } from '../log.js';
import type { RequestClient } from './client.js';
import { writeJsonType } from './json-head.js';
import type { RouteTable } from './routes.js';
import { Gate } from './gate.js';
import type { Metrics } from './metrics.js';

const MAX_BODY = 64 * 1024;

function sendJson(res: HttpResponse, status: number, body: unknown, metrics: Metrics): void {
  metrics.count(status);
  res.cork(() => writeJsonType(res.writeStatus(statusLine(status))).end(JSON.stringify(body)));
}

const rc = (res: HttpResponse, status: number, code: string, metrics: Metrics): void => sendJson(res, status, { rc: code }, metrics);


/** Reads a small request body; calls back once with the text, or null when over the limit or aborted. */
function readBody(res: HttpResponse, done: (text: string | null) => void): void {
  const parts: Buffer[] = [];
  let length = 0;
  let over = false;
  res.onAborted(() => {
    over = true;
  });
  res.onData((chunk, isLast) => {
    if (over) return;
    length += chunk.byteLength;
    if (length > MAX_BODY) {
      over = true;
      return done(null);
    }
    parts.push(Buffer.from(chunk.slice(0)));
    if (isLast) done(Buffer.concat(parts).toString('utf8'));
  });
}

export class AccountApi {
  private client!: RequestClient;

  constructor(
    private readonly db: ControlDb,
    private readonly gate: Gate,
    private readonly keys: KeyCache,
    private readonly log: Logger,
  ) {}

  register(routes: RouteTable, metrics: Metrics, client: RequestClient): void {
    this.client = client;
    routes.get('/api/v1/account/me', (res, req) => this.guard(res, metrics, () => this.me(res, req, metrics)));
    routes.post('/api/v1/iam/apikeys', (res, req) => this.guard(res, metrics, () => this.create(res, req, metrics)));
    routes.get('/api/v1/iam/apikeys', (res, req) => this.guard(res, metrics, () => this.list(res, req, metrics)));
    routes.del('/api/v1/iam/apikeys/:id', (res, req) => this.guard(res, metrics, () => this.revoke(res, req, metrics)));
    routes.post('/api/v1/iam/apikeys/:id/rotate', (res, req) => this.guard(res, metrics, () => this.rotate(res, req, metrics)));
  }

  private guard(res: HttpResponse, metrics: Metrics, handler: () => void): void {
    try {
      handler();
    } catch (e) {
      this.log.error('account handler failed', { reason: e instanceof Error ? e.message : String(e) });
      try {
        rc(res, 500, 'INTERNAL', metrics);
      } catch {
        // already answered or aborted
      }
    }
  }


  private me(res: HttpResponse, req: HttpRequest, metrics: Metrics): void {
    const now = Date.now();
    const c = this.gate.caller(Gate.keyOf(req), this.client.of(res, req), now);
    const fail = (e: ApiError): void => sendJson(res, e.status, { error: e.message }, metrics);
    if (c === null) return fail(ERRORS.keyRequired);
    if (!('key' in c)) return fail(c);
    let usage: { used: number; window: { startMs: number; endMs: number } };
    try {
      usage = this.gate.monthUsage(c, now);
    } catch (e) {
      this.log.error('usage read failed', { reason: e instanceof Error ? e.message : String(e) });
      return fail(ERRORS.usageUnavailable);
    }
    sendJson(
      res,
      200,
      {
        org_id: c.org.id,
        apikey: { id: c.key.id, expires: c.key.expires, allowed_cidrs: c.key.allowedCidrs },
        plan: { key: c.plan.key, tier: c.plan.tier },
        usage: {
          requests: Math.max(0, usage.used),
          quota: c.plan.quota,
          hard_limit: c.hardLimit,
          window_start: new Date(usage.window.startMs).toISOString(),
          window_end: new Date(usage.window.endMs).toISOString(),
        },
      },
      metrics,
    );
  }

  /** The caller of a key-management request: a Bearer key with apikeys.manage, or the rc it earns. */
  private manager(res: HttpResponse, req: HttpRequest, metrics: Metrics): Caller | null {
    const auth = req.getHeader('authorization');
    const bearer = /^\s*bearer\s+(\S+)\s*$/i.exec(auth);
    const secret = Gate.keyOf(req);
    if (!bearer || secret !== bearer[1]) {
      rc(res, 401, 'UNAUTHORIZED', metrics);
      return null;
    }
    const c = this.gate.caller(secret, this.client.of(res, req), Date.now());
    if (c === null || !('key' in c)) {
      rc(res, c === ERRORS.sourceNotAllowed ? 403 : 401, c === ERRORS.sourceNotAllowed ? 'FORBIDDEN' : 'UNAUTHORIZED', metrics);
      return null;
    }
    if (!c.key.scopes.includes('apikeys.manage')) {
      rc(res, 401, 'UNAUTHORIZED', metrics);
      return null;
    }
    return c;
  }

  private create(res: HttpResponse, req: HttpRequest, metrics: Metrics): void {
    const c = this.manager(res, req, metrics);
    if (!c) return;
    readBody(res, (text) => {
      this.guard(res, metrics, () => {
        if (text === null) return rc(res, 400, 'BAD_REQUEST', metrics);
        let body: Record<string, unknown>;
        try {
          body = JSON.parse(text) as Record<string, unknown>;
        } catch {
          return rc(res, 400, 'BAD_REQUEST', metrics);
        }
        if (typeof body !== 'object' || body === null || Array.isArray(body)) return rc(res, 400, 'BAD_REQUEST', metrics);
        const { name, allowed_cidrs: cidrs, allowed_scopes: scopes, expires } = body;
        const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
        if (typeof name !== 'string' || (cidrs !== undefined && !strings(cidrs)) || (scopes !== undefined && !strings(scopes))) {
          return rc(res, 400, 'BAD_REQUEST', metrics);
        }
        if (expires !== undefined && expires !== null && typeof expires !== 'string') return rc(res, 400, 'BAD_REQUEST', metrics);
        const fields = { name, scopes: scopes ?? [], allowedCidrs: cidrs ?? [], expires: expires ?? null };
        try {
          checkKeyFields(fields);
        } catch (e) {
          if (e instanceof AccountError) return rc(res, 400, 'BAD_REQUEST', metrics);
          throw e;
        }
        // A key can only hand on scopes it holds itself.
        if (fields.scopes.some((s) => !(c.key.scopes as string[]).includes(s))) return rc(res, 403, 'FORBIDDEN', metrics);
        const { key, secret } = createKey(this.db, { orgId: c.org.id, ...fields });
        this.keys.invalidate();
        this.log.info('api key created', { key_id: key.id, org_id: key.orgId, by_key: c.key.id });
        sendJson(
          res,
          201,
          { rc: 'OK', id: key.id, name: key.name, key: secret, key_prefix: key.keyPrefix, allowed_cidrs: key.allowedCidrs, allowed_scopes: key.scopes },
          metrics,
        );
      });
    });
  }

  private list(res: HttpResponse, req: HttpRequest, metrics: Metrics): void {
    const c = this.manager(res, req, metrics);
    if (!c) return;
    sendJson(res, 200, { rc: 'OK', apikeys: listKeys(this.db, c.org.id).map(keyJson) }, metrics);
  }

  /** The key named in the path, if it belongs to the caller's organisation. */
  private ownKey(c: Caller, id: string): ApiKey | null {
    const key = getKey(this.db, id);
    return key && key.orgId === c.org.id ? key : null;
  }

  private revoke(res: HttpResponse, req: HttpRequest, metrics: Metrics): void {
    const id = req.getParameter(0) ?? '';
    const c = this.manager(res, req, metrics);
    if (!c) return;
    if (!this.ownKey(c, id)) return rc(res, 404, 'NOT_FOUND', metrics);
    const key = revokeKey(this.db, id);
    this.keys.invalidate();
    this.log.info('api key revoked', { key_id: id, by_key: c.key.id });
    sendJson(res, 200, { rc: 'OK', ...keyJson(key) }, metrics);
  }

  private rotate(res: HttpResponse, req: HttpRequest, metrics: Metrics): void {
    const id = req.getParameter(0) ?? '';
    const c = this.manager(res, req, metrics);
    if (!c) return;
    const own = this.ownKey(c, id);
    if (!own) return rc(res, 404, 'NOT_FOUND', metrics);
    if (own.revokedAt) return rc(res, 400, 'BAD_REQUEST', metrics);
    // The body is not read: answer at once (uWS needs onAborted only for deferred answers).
    const { key, secret } = rotateKey(this.db, id);
    this.keys.invalidate();
    this.log.info('api key rotated', { key_id: id, by_key: c.key.id });
    sendJson(res, 200, { rc: 'OK', ...keyJson(key), key: secret }, metrics);
  }
}
