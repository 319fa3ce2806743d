// GET /admin/v1/activity on the admin port, for an operator token with admin.read: who this
// server served and refused over the last hour, 6 hours or day (the organisations and keys
// most refused first: 429s, then other 4xx such as a source outside a key's ranges), and when
// each key was last used and from where (control/key-activity.ts). With org_id, every key of
// that organisation, used or not.

import { getKey, getOrganisation, listKeys } from '../../control/accounts.js';
import type { ControlDb } from '../../control/control-db.js';
import type { KeyActivity } from '../../control/key-activity.js';
import { WINDOWS, type HistoryWindow } from '../../http/metrics-history.js';
import { sendJson, sendRc } from '../../http/reply.js';
import { RC } from '../../wire/errors.js';
import type { AdminRoutes } from './admin-routes.js';

const ZERO = { requests: 0, limited: 0, refused: 0 };

export class ActivityApi {
  constructor(
    private readonly db: ControlDb,
    private readonly activity: KeyActivity,
  ) {}

  register(admin: AdminRoutes): void {
    const { edge } = admin;
    const { db, activity } = this;
    admin.get(
      '/admin/v1/activity',
      'admin.read',
      (res, req) => {
        const q = new URLSearchParams(req.getQuery() ?? '');
        const unknown = [...q.keys()].find((k) => k !== 'window' && k !== 'org_id');
        if (unknown !== undefined) return sendRc(res, RC.BAD_REQUEST, `unknown parameter ${JSON.stringify(unknown)}: window and org_id only`, edge.metrics);
        const window = (q.get('window') ?? '1h') as HistoryWindow;
        if (!Object.hasOwn(WINDOWS, window)) return sendRc(res, RC.BAD_REQUEST, `window must be ${Object.keys(WINDOWS).join(', ')}`, edge.metrics);
        const orgId = q.get('org_id');
        const nowMs = edge.clock.now();
        const last = (keyId: string): { last_used_at: string | null; last_used_from: string | null } => {
          const u = activity.lastUseOf(keyId);
          return { last_used_at: u ? new Date(u.atMs).toISOString() : null, last_used_from: u?.from ?? null };
        };
        if (orgId !== null) {
          const org = getOrganisation(db, orgId);
          if (org === null) return sendRc(res, RC.NOT_FOUND, `no organisation ${orgId}`, edge.metrics);
          const seen = new Map(activity.top(WINDOWS[window], nowMs, Number.MAX_SAFE_INTEGER).keys.map((k) => [k.id, k]));
          const keys = listKeys(db, orgId).map((k) => {
            const { id: _id, org_id: _org, ...counts } = seen.get(k.id) ?? { id: k.id, org_id: orgId, ...ZERO };
            return { id: k.id, name: k.name, org_id: orgId, org_name: org.name, ...counts, ...last(k.id) };
          });
          const sum = keys.reduce((a, k) => ({ requests: a.requests + k.requests, limited: a.limited + k.limited, refused: a.refused + k.refused }), ZERO);
          return sendJson(res, 200, { window, organizations: [{ id: org.id, name: org.name, ...sum }], keys }, edge.metrics);
        }
        const top = activity.top(WINDOWS[window], nowMs);
        sendJson(
          res,
          200,
          {
            window,
            organizations: top.organizations.map((o) => ({ ...o, name: getOrganisation(db, o.id)?.name ?? null })),
            keys: top.keys.map((k) => ({
              ...k,
              name: getKey(db, k.id)?.name ?? null,
              org_name: getOrganisation(db, k.org_id)?.name ?? null,
              ...last(k.id),
            })),
          },
          edge.metrics,
        );
      },
      { compress: true },
    );
  }
}
