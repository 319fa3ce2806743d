// GET /admin/v1/sources on the admin port, for an operator token with admin.read: what
// `ipsift sources status --json` prints, each configured source's state, entries and age.

import type { SourceStatus } from '../../feeds/source-state.js';
import { sendJson } from '../../http/reply.js';
import type { AdminRoutes } from './admin-routes.js';

export class SourcesApi {
  constructor(private readonly statuses: () => SourceStatus[]) {}

  register(admin: AdminRoutes): void {
    const { edge } = admin;
    const { statuses } = this;
    admin.get(
      '/admin/v1/sources',
      'admin.read',
      (res) => {
        sendJson(res, 200, { sources: statuses() }, edge.metrics);
      },
      { compress: true },
    );
  }
}
