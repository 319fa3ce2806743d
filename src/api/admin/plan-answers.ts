// GET /admin/v1/answers/{ip} on the admin port, for an operator token with admin.read: the
// serving build's answer for an address as a caller on each plan gets it (each plan's field
// tier, and keyless callers' KEYLESS_TIER), so that support can see what a customer sees
// without a customer's key. Nothing is counted against anyone. With `?at=<RFC 3339 time>`, the
// answers as of that time, from the timeline of answers (history/), with `as_of`.

import type { IndexHolder } from '../../index/loader.js';
import { answerObject } from '../../lookup/answer.js';
import type { Plans } from '../../model/plans.js';
import { TIERS } from '../../model/projection.js';
import { sendError, sendJson } from '../../http/reply.js';
import { ERRORS, lookupBadRequest } from '../../wire/errors.js';
import type { AdminRoutes } from './admin-routes.js';
import type { RangeIndex } from '../../index/range-index.js';
import type { Metrics } from '../../http/metrics.js';
import type { HttpResponse } from '../../http/server/types.js';
import { asOfAnswer, parseAt } from '../../history/as-of.js';
import type { TimelineReader } from '../../history/timeline-file.js';
import { NOT_ADDRESS, ParsedAddress, parseAddress } from '../../net/address.js';

export class PlanAnswersApi {
  constructor(
    private readonly holder: IndexHolder,
    private readonly plans: Plans,
    private readonly keylessTier: number,
    /** The timeline `?at=` reads (null: none here). */
    private readonly timelines: TimelineReader | null = null,
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
        const query = new URLSearchParams(req.getQuery() ?? '');
        const unknown = [...query.keys()].find((k) => k !== 'at');
        if (unknown !== undefined)
          return sendError(res, lookupBadRequest(`unknown parameter ${JSON.stringify(unknown.slice(0, 40))}: the answers take at only`), metrics);
        const serving = holder.current;
        if (serving === null) return sendError(res, ERRORS.lookupFailed, metrics);
        // Raw, not URLSearchParams': that reads a + as a space, and an offset's + is a sign.
        const rawAt = (req.getQuery() ?? '').split('&').find((x) => x.startsWith('at='));
        if (rawAt !== undefined) return this.asOf(res, ip, rawAt.slice(3), serving.index, edge.clock.now(), metrics);
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

  /** The answers per plan as of a time: the timeline's, rendered at each plan's tier. */
  private asOf(res: HttpResponse, ip: string, rawAt: string, index: RangeIndex, nowMs: number, metrics: Metrics): void {
    const p = new ParsedAddress();
    if (parseAddress(ip, 0, ip.length, p) === NOT_ADDRESS) return sendError(res, ERRORS.notAddress, metrics);
    const at = parseAt(rawAt, nowMs);
    if ('refused' in at) return sendError(res, lookupBadRequest(at.refused), metrics);
    const timeline = this.timelines?.get(nowMs) ?? null;
    if (timeline === null) return sendError(res, lookupBadRequest('no history is kept here yet: it starts with the first build that serves'), metrics);
    const answer = (tier: number): Record<string, unknown> | string => {
      const found = asOfAnswer(p, timeline, index, tier, at.seconds);
      return 'outside' in found ? found.outside : (JSON.parse(found.body.toString('utf8')) as Record<string, unknown>);
    };
    const keyless = answer(this.keylessTier);
    if (typeof keyless === 'string') return sendError(res, lookupBadRequest(`at is outside the history kept: ${keyless}`), metrics);
    sendJson(
      res,
      200,
      {
        ip,
        at: new Date(at.seconds * 1000).toISOString().replace('.000Z', 'Z'),
        build: timeline.spanAt(at.seconds)?.build ?? null,
        as_of: keyless.as_of,
        keyless: { tier: TIERS[this.keylessTier], answer: keyless },
        plans: [...this.plans.byKey.values()].map((pl) => ({ plan: pl.key, tier: pl.tier, answer: answer(pl.fieldTier) })),
      },
      metrics,
    );
  }
}
