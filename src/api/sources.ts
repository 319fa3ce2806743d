// GET /admin/v1/sources on the admin port, for an operator token with admin.read: what
// `ipsift sources status --json` prints, each configured source's state, entries and age.

import type { SourceStatus } from '../feeds/source-state.js';
import type { ControlDb } from '../control/control-db.js';
import { sendJson } from '../http/reply.js';
import type { RouteTable } from '../http/routes.js';
import type { Edge } from './edge.js';
import { operatorOf } from './operator.js';

export class SourcesApi {
  constructor(
    private readonly control: ControlDb | null,
    private readonly statuses: () => SourceStatus[],
  ) {}

  register(routes: RouteTable, edge: Edge): void {
    const { control, statuses } = this;
    routes.get(
      '/admin/v1/sources',
      (res, req) => {
        if (control !== null && operatorOf(control, res, req, 'admin.read', edge.metrics) === null) return;
        sendJson(res, 200, { sources: statuses() }, edge.metrics);
      },
      { compress: true },
    );
  }
}
