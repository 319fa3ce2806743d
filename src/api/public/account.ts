// GET /api/v1/account/me: the caller's organisation, key, plan and usage in the current UTC
// month, in the lookup group's {"error": …} shape.

import type { HttpRequest, HttpResponse } from '../../http/server/types.js';
import { ERRORS } from '../../wire/errors.js';
import type { Logger } from '../../log.js';
import { sendError, sendJson } from '../../http/reply.js';
import type { RouteTable } from '../../http/routes.js';
import { Gate } from '../admission/gate.js';
import type { Edge } from '../admission/edge.js';

export class AccountApi {
  private edge!: Edge;

  constructor(
    private readonly gate: Gate,
    private readonly log: Logger,
  ) {}

  register(routes: RouteTable, edge: Edge): void {
    this.edge = edge;
    routes.get('/api/v1/account/me', (res, req) => this.me(res, req), { family: 'account' });
  }

  private me(res: HttpResponse, req: HttpRequest): void {
    const now = this.edge.clock.now();
    const c = this.gate.caller(Gate.keyOf(req), this.edge.client.of(res, req), now);
    if (c === null) return sendError(res, ERRORS.keyRequired, this.edge.metrics);
    if (!('key' in c)) return sendError(res, c, this.edge.metrics);
    let usage: { used: number; window: { startMs: number; endMs: number } };
    try {
      usage = this.gate.monthUsage(c, now);
    } catch (e) {
      this.log.error('usage read failed', { reason: e instanceof Error ? e.message : String(e) });
      return sendError(res, ERRORS.usageUnavailable, this.edge.metrics);
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
      this.edge.metrics,
    );
  }
}
