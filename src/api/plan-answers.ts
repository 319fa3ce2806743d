// GET /admin/v1/answers/{ip} on the admin port, for an operator token with admin.read: the
// serving build's answer for an address as a caller on each plan gets it (each plan's field
// tier, and keyless callers' KEYLESS_TIER), so that support can see what a customer sees
// without a customer's key. Nothing is counted against anyone.

import type { ControlDb } from '../control/control-db.js';
import type { IndexHolder } from '../index/loader.js';
import { answerObject } from '../lookup/answer.js';
import type { Plans } from '../model/plans.js';
import { TIERS } from '../model/projection.js';
import { sendError, sendJson } from '../http/reply.js';
import type { RouteTable } from '../http/routes.js';
import { ERRORS } from '../wire/errors.js';
import type { Edge } from './edge.js';
import { operatorOf } from './operator.js';

export class PlanAnswersApi {
  constructor(
    private readonly db: ControlDb,
    private readonly holder: IndexHolder,
    private readonly plans: Plans,
    private readonly keylessTier: number,
  ) {}

  register(routes: RouteTable, edge: Edge): void {
    const { db, holder, plans, keylessTier } = this;
    const { metrics } = edge;
    routes.get(
      '/admin/v1/answers/:ip',
      (res, req) => {
        if (operatorOf(db, res, req, 'admin.read', metrics) === null) return;
        let ip: string;
        try {
          ip = decodeURIComponent(req.getParameter(0) ?? '');
        } catch {
          return sendError(res, ERRORS.notAddress, metrics);
        }
        const serving = holder.current;
        if (serving === null) return sendError(res, ERRORS.lookupFailed, metrics);
        const keyless = answerObject(serving.index, ip, keylessTier);
        if (keyless === null) return sendError(res, ERRORS.notAddress, metrics);
        sendJson(
          res,
          200,
          {
            ip,
            build: serving.buildId,
            keyless: { tier: TIERS[keylessTier], answer: keyless },
            plans: [...plans.byKey.values()].map((p) => ({ plan: p.key, tier: p.tier, answer: answerObject(serving.index, ip, p.fieldTier) })),
          },
          metrics,
        );
      },
      { compress: true },
    );
  }
}
