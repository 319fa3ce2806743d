// /api/v1/iam/apikeys: a key with apikeys.manage creates, lists (a page at a time), revokes
// and rotates its organisation's keys, answering {"rc": …} with a message where the client can
// put a refusal right.
//
// A key hands on only what it holds: a key it creates has scopes among its own, an expiry no
// later than its own and source ranges inside its own (both inherited when not given); it may
// rotate only a key that holds no more than it does, and revoke only a key whose scopes it holds.

import type { HttpRequest, HttpResponse } from '../../http/server/types.js';
import { RC } from '../../wire/errors.js';
import { KEY_CREATE_REQUEST, NO_FIELDS } from '../../wire/request-bodies.js';
import {
  AccountError,
  KeyLimitError,
  checkFutureExpiry,
  checkKeyFields,
  keyJson,
  createKey,
  getKey,
  pageKeys,
  revokeKey,
  rotateKey,
  type ApiKey,
} from '../../control/accounts.js';
import type { Caller, KeyCache } from '../../control/auth.js';
import type { ControlDb } from '../../control/control-db.js';
import type { Logger } from '../../log.js';
import { networksOf, networksWithin, type Network } from '../../net/network.js';
import { parseSmallBody, readSmallBody, type SmallBody } from '../../http/body.js';
import { late, pending, sendJson, sendRc } from '../../http/reply.js';
import type { RouteTable } from '../../http/routes.js';
import type { Gate } from '../admission/gate.js';
import { bearerCaller, type Edge } from '../admission/edge.js';
import { nthLatestKeyChangeAt, recordAudit, type Actor } from '../../control/audit.js';
import { LIMIT_RULE, listLimit } from '../../control/operator.js';
import type { Rate } from '../../model/plans.js';
import { keyListBucket } from '../../accounting/windows.js';

/** What a key's holder may do to keys on the public port (config: MAX_KEYS_PER_ORG, KEY_CHANGES_PER_MIN). */
export interface KeyLimits {
  maxKeysPerOrg: number;
  keyChangesPerMinute: number;
}

/**
 * Key-list pages an organisation may ask for: a burst, refilled each second (a token bucket of
 * the accounting store, as lookups' rates are). A page of 200 keys costs a thread about half a
 * millisecond, so 16 clients paging without pause would queue every lookup behind theirs;
 * past the budget a page answers 429 at once.
 */
const KEY_LIST_RATE: Rate = { perSecond: 20, burst: 100 };

const HANDS_ON = 'a key hands on only what it holds: scopes among its own, an expiry no later than its own, source ranges inside its own';
const CHANGE_WINDOW_MS = 60_000;

const expiryMs = (k: ApiKey): number => (k.expires ? Date.parse(k.expires) : Infinity);

/** Every range of `inner` lies inside the caller's (no ranges: any source). */
function rangesWithin(inner: readonly string[], outer: readonly Network[]): boolean {
  if (outer.length === 0) return true;
  return inner.length > 0 && networksWithin(networksOf(inner), outer);
}

/** The target holds nothing the caller does not: scopes, expiry and ranges. */
function holdsAtMost(target: ApiKey, caller: Caller): boolean {
  return (
    target.scopes.every((s) => caller.key.scopes.includes(s)) && expiryMs(target) <= caller.expiresMs && rangesWithin(target.allowedCidrs, caller.networks)
  );
}

export class KeysApi {
  private edge!: Edge;
  private routes!: RouteTable;

  constructor(
    private readonly db: ControlDb,
    private readonly gate: Gate,
    private readonly keys: KeyCache,
    private readonly log: Logger,
    private readonly limits: KeyLimits,
  ) {}

  register(routes: RouteTable, edge: Edge): void {
    this.edge = edge;
    this.routes = routes;
    const rc = { internal: RC.INTERNAL, family: 'account' } as const;
    routes.post('/api/v1/iam/apikeys', (res, req) => this.create(res, req), rc);
    routes.get('/api/v1/iam/apikeys', (res, req) => this.list(res, req), { ...rc, compress: true });
    routes.del('/api/v1/iam/apikeys/:id', (res, req) => this.revoke(res, req), rc);
    routes.post('/api/v1/iam/apikeys/:id/rotate', (res, req) => this.rotate(res, req), rc);
  }

  /** The caller of a key-management request: a Bearer key with apikeys.manage, or null once refused. */
  private manager(res: HttpResponse, req: HttpRequest): Caller | null {
    const c = bearerCaller(this.gate, this.edge, res, req);
    if (c !== null && !c.key.scopes.includes('apikeys.manage')) {
      sendRc(res, RC.UNAUTHORIZED, 'this key lacks the apikeys.manage scope: manage keys with a key that holds it', this.edge.metrics);
      return null;
    }
    return c;
  }

  /**
   * Seconds until the organisation may change keys again (0: now). It may make
   * KEY_CHANGES_PER_MIN changes (create, rotate, revoke) a minute, counted from the audit log,
   * so the limit holds across threads and nodes sharing the control database.
   */
  private changeWait(c: Caller): number {
    const at = nthLatestKeyChangeAt(this.db, c.org.id, this.limits.keyChangesPerMinute);
    const now = this.edge.clock.now();
    if (at === null || at <= now - CHANGE_WINDOW_MS) return 0;
    return Math.max(1, Math.ceil((at + CHANGE_WINDOW_MS - now) / 1000));
  }

  private refuseChange(res: HttpResponse, retry: number): void {
    sendRc(
      res,
      RC.RATE_LIMITED,
      `this organisation made ${this.limits.keyChangesPerMinute} key changes in the last minute, the most it may (KEY_CHANGES_PER_MIN): retry in ${retry} s`,
      this.edge.metrics,
      {
        headers: [['Retry-After', String(retry)]],
      },
    );
  }

  /** An early refusal, before a body is read: answered and true when the limit is reached now. */
  private throttled(res: HttpResponse, c: Caller): boolean {
    const retry = this.changeWait(c);
    if (retry > 0) this.refuseChange(res, retry);
    return retry > 0;
  }

  /**
   * A key change and its audit entry under the control database's write lock, with the limit
   * checked inside it: the count and the change are one transaction, so concurrent requests
   * on any thread or node never make one change more than the limit (a check before it would
   * let each of them through). Null once refused (answered).
   */
  private change<T>(res: HttpResponse, c: Caller, work: () => T): T | null {
    let retry = 0;
    const done = this.db.transaction(() => {
      retry = this.changeWait(c);
      return retry > 0 ? null : { value: work() };
    }, true);
    if (done === null) this.refuseChange(res, retry);
    return done === null ? null : done.value;
  }

  private create(res: HttpResponse, req: HttpRequest): void {
    const p = pending(res);
    const c = this.manager(res, req);
    if (!c || this.throttled(res, c)) return;
    const actor = this.actorOf(c);
    readSmallBody(res, p, this.routes, (text) => late(res, p, () => this.createFrom(res, c, actor, text)));
  }

  /** The audit log's actor: the managing key, from the client's address (read in the handler). */
  private actorOf(c: Caller): Actor {
    return { who: `key:${c.key.id}`, source: this.edge.client.text() };
  }

  private createFrom(res: HttpResponse, c: Caller, actor: Actor, text: SmallBody): void {
    const bad = (message: string): void => sendRc(res, RC.BAD_REQUEST, message, this.edge.metrics);
    const body = parseSmallBody<{ name: string; allowed_cidrs?: string[]; allowed_scopes?: string[]; expires?: string | null }>(text, KEY_CREATE_REQUEST, {
      example: '{"name": "ci", "allowed_scopes": ["db.download"]}',
    });
    if ('refused' in body) return bad(body.refused);
    const { name, allowed_cidrs: cidrs, allowed_scopes: scopes, expires } = body.value;
    let fields: ReturnType<typeof checkKeyFields>;
    try {
      // Not given: the creator's own expiry and ranges (a token's expiry where a token creates
      // it, so a short-lived token cannot leave a lasting key behind).
      const ownExpiry = c.tokenId === undefined ? c.key.expires : new Date(c.expiresMs).toISOString();
      fields = checkKeyFields({ name, scopes: scopes ?? [], allowedCidrs: cidrs ?? c.key.allowedCidrs, expires: expires === undefined ? ownExpiry : expires });
      checkFutureExpiry(expires, this.edge.clock.now());
    } catch (e) {
      if (e instanceof AccountError) return bad(e.message);
      throw e;
    }
    const wanted: ApiKey = { ...c.key, scopes: fields.scopes, allowedCidrs: fields.cidrs, expires: fields.expires };
    if (!holdsAtMost(wanted, c)) return sendRc(res, RC.FORBIDDEN, HANDS_ON, this.edge.metrics);
    let made: { key: ApiKey; secret: string } | null;
    try {
      made = this.change(res, c, () => {
        const m = createKey(
          this.db,
          { orgId: c.org.id, name: fields.name, scopes: fields.scopes, allowedCidrs: fields.cidrs, expires: fields.expires },
          this.limits.maxKeysPerOrg,
        );
        const k = m.key;
        recordAudit(this.db, actor, 'key.create', k.orgId, k.id, {
          name: k.name,
          key_prefix: k.keyPrefix,
          scopes: k.scopes,
          allowed_cidrs: k.allowedCidrs,
          expires: k.expires,
        });
        return m;
      });
    } catch (e) {
      if (e instanceof KeyLimitError) return sendRc(res, RC.KEY_LIMIT, e.message, this.edge.metrics);
      throw e;
    }
    if (made === null) return;
    const { key, secret } = made;
    this.keys.invalidate();
    this.log.info('api key created', { key_id: key.id, org_id: key.orgId, by_key: c.key.id });
    sendJson(
      res,
      201,
      { rc: 'OK', id: key.id, name: key.name, key: secret, key_prefix: key.keyPrefix, allowed_cidrs: key.allowedCidrs, allowed_scopes: key.scopes },
      this.edge.metrics,
    );
  }

  /** The organisation's keys, oldest first, a page at a time: ?limit (1..200, default 50) and ?after (the last page's next). */
  private list(res: HttpResponse, req: HttpRequest): void {
    const c = this.manager(res, req);
    if (!c) return;
    const turn = this.gate.take(keyListBucket(c.org.id), KEY_LIST_RATE, this.edge.clock.now());
    if (!turn.ok) {
      const { perSecond, burst } = KEY_LIST_RATE;
      return sendRc(
        res,
        RC.RATE_LIMITED,
        `key lists come at most ${perSecond} pages a second (${burst} at once) for an organisation: retry in ${turn.retryAfter} s`,
        this.edge.metrics,
        {
          headers: [['Retry-After', String(turn.retryAfter)]],
        },
      );
    }
    const query = new URLSearchParams(req.getQuery() ?? '');
    const limit = listLimit(query.get('limit'));
    if (limit === null) return sendRc(res, RC.BAD_REQUEST, LIMIT_RULE, this.edge.metrics);
    let page: ReturnType<typeof pageKeys>;
    try {
      page = pageKeys(this.db, c.org.id, limit, query.get('after') ?? undefined);
    } catch (e) {
      if (e instanceof AccountError) return sendRc(res, RC.BAD_REQUEST, e.message, this.edge.metrics);
      throw e;
    }
    sendJson(res, 200, { rc: 'OK', apikeys: page.items.map(keyJson), next: page.next }, this.edge.metrics);
  }

  /** The key named in the path, if it belongs to the caller's organisation. */
  private ownKey(c: Caller, id: string): ApiKey | null {
    const key = getKey(this.db, id);
    return key && key.orgId === c.org.id ? key : null;
  }

  private revoke(res: HttpResponse, req: HttpRequest): void {
    const id = req.getParameter(0) ?? '';
    const c = this.manager(res, req);
    if (!c) return;
    const own = this.ownKey(c, id);
    if (!own) return sendRc(res, RC.NOT_FOUND, `no key ${id} in this organisation`, this.edge.metrics);
    if (!own.scopes.every((s) => c.key.scopes.includes(s)))
      return sendRc(res, RC.FORBIDDEN, 'a key may revoke only keys whose scopes it holds', this.edge.metrics);
    const actor = this.actorOf(c);
    const key = this.change(res, c, () => {
      const revoked = revokeKey(this.db, id);
      if (!own.revokedAt) recordAudit(this.db, actor, 'key.revoke', own.orgId, id, { key_prefix: own.keyPrefix });
      return revoked;
    });
    if (key === null) return;
    this.keys.invalidate();
    this.log.info('api key revoked', { key_id: id, by_key: c.key.id });
    sendJson(res, 200, { rc: 'OK', ...keyJson(key) }, this.edge.metrics);
  }

  private rotate(res: HttpResponse, req: HttpRequest): void {
    const id = req.getParameter(0) ?? '';
    const c = this.manager(res, req);
    if (!c) return;
    const own = this.ownKey(c, id);
    if (!own) return sendRc(res, RC.NOT_FOUND, `no key ${id} in this organisation`, this.edge.metrics);
    if (own.revokedAt) return sendRc(res, RC.BAD_REQUEST, 'a revoked key cannot be rotated: create a new one', this.edge.metrics);
    // The new secret goes to the caller: it may not gain through it what it does not hold.
    if (!holdsAtMost(own, c)) return sendRc(res, RC.FORBIDDEN, `${HANDS_ON}; this key holds more`, this.edge.metrics);
    const actor = this.actorOf(c);
    // The body is read and must be empty or {}: anything else is a request this route does not take.
    const p = pending(res);
    readSmallBody(res, p, this.routes, (text) =>
      late(res, p, () => {
        const body = parseSmallBody(text, NO_FIELDS, { emptyIsObject: true });
        if ('refused' in body) return sendRc(res, RC.BAD_REQUEST, body.refused, this.edge.metrics);
        const rotated = this.change(res, c, () => {
          const r = rotateKey(this.db, id);
          recordAudit(this.db, actor, 'key.rotate', own.orgId, id, { from_prefix: own.keyPrefix, key_prefix: r.key.keyPrefix });
          return r;
        });
        if (rotated === null) return;
        const { key, secret } = rotated;
        this.keys.invalidate();
        this.log.info('api key rotated', { key_id: id, by_key: c.key.id });
        sendJson(res, 200, { rc: 'OK', ...keyJson(key), key: secret }, this.edge.metrics);
      }),
    );
  }
}
