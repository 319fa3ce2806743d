// /api/v1/auth/token: a key exchanged for a short-lived token (POST), and the presented token
// revoked (DELETE). Tokens are signed with the data directory's key and checked like keys.

import type { HttpRequest, HttpResponse } from '../../http/server/types.js';
import { RC } from '../../wire/errors.js';
import type { KeyCache } from '../../control/auth.js';
import type { ControlDb } from '../../control/control-db.js';
import { parseSmallBody, readSmallBody } from '../../http/body.js';
import { late, pending, sendError, sendJson, sendRc } from '../../http/reply.js';
import { TOKEN_REQUEST } from '../../wire/request-bodies.js';
import type { RouteTable } from '../../http/routes.js';
import type { Gate } from '../admission/gate.js';
import { bearerCaller, type Edge } from '../admission/edge.js';
import { DEFAULT_TOKEN_LIFETIME_S, revokeToken as revokeTokenRow } from '../../control/tokens.js';

export class TokensApi {
  private edge!: Edge;
  private routes!: RouteTable;

  constructor(
    private readonly db: ControlDb,
    private readonly gate: Gate,
    private readonly keys: KeyCache,
  ) {}

  register(routes: RouteTable, edge: Edge): void {
    this.edge = edge;
    this.routes = routes;
    const rc = { internal: RC.INTERNAL, family: 'account' } as const;
    routes.post('/api/v1/auth/token', (res, req) => this.token(res, req), rc);
    routes.del('/api/v1/auth/token', (res, req) => this.revokeToken(res, req), rc);
  }

  /**
   * A key (Bearer, never a token: a token cannot extend itself) exchanged for a short-lived
   * token: {scopes?: a subset of the key's, lifetime_s?: 1..MAX_TOKEN_LIFETIME_S, default 15
   * minutes}, never outliving the key.
   */
  private token(res: HttpResponse, req: HttpRequest): void {
    const p = pending(res);
    const c = bearerCaller(this.gate, this.edge, res, req);
    if (!c) return;
    if (c.tokenId !== undefined) return sendRc(res, RC.FORBIDDEN, 'a token cannot make a token: exchange the key itself', this.edge.metrics);
    readSmallBody(res, p, this.routes, (text) =>
      late(res, p, () => {
        const body = parseSmallBody<{ scopes?: string[]; lifetime_s?: number }>(text, TOKEN_REQUEST, {
          example: '{"scopes": ["db.download"], "lifetime_s": 900}',
          emptyIsObject: true,
        });
        if ('refused' in body) return sendRc(res, RC.BAD_REQUEST, body.refused, this.edge.metrics);
        const { scopes, lifetime_s: lifetime } = body.value;
        const wanted = scopes ?? c.key.scopes;
        const missing = wanted.filter((s) => !(c.key.scopes as string[]).includes(s));
        if (missing.length > 0) {
          return sendRc(
            res,
            RC.FORBIDDEN,
            `this key does not hold ${missing.join(', ')}: a token holds the key's scopes or fewer (${c.key.scopes.join(', ') || 'none'})`,
            this.edge.metrics,
          );
        }
        const now = this.edge.clock.now();
        const expiresMs = Math.min(c.expiresMs, now + (lifetime ?? DEFAULT_TOKEN_LIFETIME_S) * 1000);
        const granted = c.key.scopes.filter((s) => wanted.includes(s));
        const minted = this.keys.mint(c.key, granted, expiresMs);
        if (minted === null) return sendError(res, RC.INTERNAL, this.edge.metrics);
        const expires = Math.floor(expiresMs / 1000) * 1000;
        sendJson(
          res,
          201,
          {
            rc: 'OK',
            token: minted.token,
            token_id: minted.id,
            token_type: 'Bearer',
            expires: new Date(expires).toISOString(),
            expires_in: Math.max(0, Math.floor((expires - now) / 1000)),
            scopes: granted,
            org_id: c.org.id,
          },
          this.edge.metrics,
        );
      }),
    );
  }

  /**
   * Revokes the token presented as the Bearer credential; its key and other tokens stand
   * (past MAX_REVOKED_PER_KEY stored revocations, every token of the key ends instead).
   */
  private revokeToken(res: HttpResponse, req: HttpRequest): void {
    const c = bearerCaller(this.gate, this.edge, res, req);
    if (!c) return;
    if (c.tokenId === undefined)
      return sendRc(
        res,
        RC.BAD_REQUEST,
        'present the token to revoke as the Bearer credential: a key is revoked with DELETE /api/v1/iam/apikeys/{id}',
        this.edge.metrics,
      );
    const now = this.edge.clock.now();
    // The caller's expiry is the token's, or the key's where that comes first: either way the
    // token is void from then on, and its revocation may be forgotten.
    revokeTokenRow(this.db, { id: c.tokenId, keyId: c.key.id, expiresMs: c.expiresMs }, now);
    this.keys.invalidate();
    sendJson(res, 200, { rc: 'OK', token_id: c.tokenId, revoked_at: new Date(now).toISOString() }, this.edge.metrics);
  }
}
