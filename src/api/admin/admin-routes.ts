// The admin port's routes, each declaring the operator scope it needs: one function admits a
// request (its operator token, the scope, the actor the audit log names) before any handler
// runs, so no admin API checks authorisation by hand. A node without a control database (a
// bare serving node) has no tokens: its few read routes (sources, explain) are open there, as
// the admin port itself is bound to an address the operator chose.

import type { ControlDb } from '../../control/control-db.js';
import type { Actor } from '../../control/audit.js';
import type { AdminScope, AdminToken } from '../../control/admin-tokens.js';
import type { RouteOptions, RouteTable } from '../../http/routes.js';
import type { HttpRequest, HttpResponse } from '../../http/server/types.js';
import { peerText } from '../../http/client.js';
import type { Edge } from '../admission/edge.js';
import { authorizationOf } from '../admission/credentials.js';
import { findAdminToken } from '../../control/admin-tokens.js';
import { bearerToken } from '../../control/auth.js';
import { sendRc } from '../../http/reply.js';
import type { Metrics } from '../../http/metrics.js';
import { RC } from '../../wire/errors.js';

/** Who a request was admitted as: its token (null where no control database holds tokens), and the actor audit entries name. */
export interface Admitted {
  token: AdminToken | null;
  actor: Actor;
}

export type AdminHandler = (res: HttpResponse, req: HttpRequest, admitted: Admitted) => void;

/**
 * The operator token of an admin-port request, or null once refused: 401 for no token, an
 * unknown or revoked one, or two different Authorization headers; 403 without the scope.
 */
function operatorTokenOf(db: ControlDb, res: HttpResponse, req: HttpRequest, scope: AdminScope, metrics: Metrics): AdminToken | null {
  const header = authorizationOf(req);
  if (header === null) {
    sendRc(res, RC.UNAUTHORIZED, 'one Authorization header, please: two different credentials were sent', metrics);
    return null;
  }
  const secret = bearerToken(header);
  const token = secret ? findAdminToken(db, secret) : null;
  if (token === null) {
    sendRc(res, RC.UNAUTHORIZED, 'an operator token is required: Authorization: Bearer iat_… (ipsift admin token create)', metrics);
    return null;
  }
  if (!token.scopes.includes(scope)) {
    sendRc(res, RC.FORBIDDEN, `this operator token lacks the ${scope} scope`, metrics);
    return null;
  }
  return token;
}

export class AdminRoutes {
  constructor(
    /** The port's route table (bodies are read and late answers sent through it). */
    readonly table: RouteTable,
    readonly edge: Edge,
    private readonly db: ControlDb | null,
  ) {}

  /** The one check: null once refused (401, or 403 without the scope). */
  admit(res: HttpResponse, req: HttpRequest, scope: AdminScope): Admitted | null {
    const source = (): string => peerText(new Uint8Array(res.getRemoteAddress()));
    if (this.db === null) return { token: null, actor: { who: 'open', source: source() } };
    const token = operatorTokenOf(this.db, res, req, scope, this.edge.metrics);
    return token && { token, actor: { who: `admin:${token.id}`, source: source() } };
  }

  get(path: string, scope: AdminScope, handler: AdminHandler, options?: RouteOptions): void {
    this.table.get(path, this.admitted(scope, handler), options);
  }

  post(path: string, scope: AdminScope, handler: AdminHandler, options?: RouteOptions): void {
    this.table.post(path, this.admitted(scope, handler), options);
  }

  del(path: string, scope: AdminScope, handler: AdminHandler, options?: RouteOptions): void {
    this.table.del(path, this.admitted(scope, handler), options);
  }

  private admitted(scope: AdminScope, handler: AdminHandler): (res: HttpResponse, req: HttpRequest) => void {
    return (res, req) => {
      const admitted = this.admit(res, req, scope);
      if (admitted !== null) handler(res, req, admitted);
    };
  }
}
