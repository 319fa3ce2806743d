// GET /admin/v1/log on the admin port, for an operator token with admin.read: this process's
// last warnings and errors (log.ts LogTail), newest first, as the console's Data page shows them.

import type { LogTail } from '../../log.js';
import { sendJson, sendRc } from '../../http/reply.js';
import { RC } from '../../wire/errors.js';
import type { AdminRoutes } from './admin-routes.js';

export class LogTailApi {
  constructor(private readonly tail: LogTail) {}

  register(admin: AdminRoutes): void {
    const { edge } = admin;
    const { tail } = this;
    admin.get(
      '/admin/v1/log',
      'admin.read',
      (res, req) => {
        const query = new URLSearchParams(req.getQuery() ?? '');
        const unknown = [...query.keys()].find((k) => k !== 'level');
        if (unknown !== undefined) return sendRc(res, RC.BAD_REQUEST, `unknown parameter ${JSON.stringify(unknown)}: the log takes level only`, edge.metrics);
        const level = query.get('level') ?? 'warn';
        if (level !== 'warn' && level !== 'error')
          return sendRc(res, RC.BAD_REQUEST, 'level must be warn (warnings and errors) or error (errors only)', edge.metrics);
        sendJson(res, 200, { keep: tail.keep, lines: tail.lines(level === 'error') }, edge.metrics);
      },
      { compress: true },
    );
  }
}
