// GET /admin/v1/answers/{ip} on the admin port, for an operator token with admin.read: the
// serving build's answer for an address as a caller on each plan gets it (each plan's field
// tier, and keyless callers' KEYLESS_TIER), so that support can see what a customer sees
// without a customer's key. Nothing is counted against anyone.

import type { IndexHolder } from '../../index/loader.js';
import { answerObject } from '../../lookup/answer.js';
import type { Plans } from '../../model/plans.js';
import { TIERS } from '../../model/projection.js';
import { sendError, sendJson } from '../../http/reply.js';
import { ERRORS } from '../../wire/errors.js';
import type { AdminRoutes } from './admin-routes.js';

export class PlanAnswersApi {
  constructor(
    private readonly holder: IndexHolder,
    private readonly plans: Plans,
    private readonly keylessTier: number,
  ) {}

  register(admin: AdminRoutes): void {
    const { edge } = admin;
    const { holder, plans, keylessTier } = this;
    const { metrics } = edge;
    admin.get(
      '/admin/v1/answers/:ip',
      'admin.read',
      (res, req) => {
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
