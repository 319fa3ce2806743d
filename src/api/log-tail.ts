// GET /admin/v1/log on the admin port, for an operator token with admin.read: this process's
// last warnings and errors (log.ts LogTail), newest first, as the console's Data page shows them.

import type { ControlDb } from '../control/control-db.js';
import type { LogTail } from '../log.js';
import { sendJson, sendRc } from '../http/reply.js';
import type { RouteTable } from '../http/routes.js';
import { RC } from '../wire/errors.js';
import type { Edge } from './edge.js';
import { operatorOf } from './operator.js';

export class LogTailApi {
  constructor(
    private readonly db: ControlDb,
    private readonly tail: LogTail,
  ) {}

  register(routes: RouteTable, edge: Edge): void {
    const { db, tail } = this;
    routes.get(
      '/admin/v1/log',
      (res, req) => {
        if (operatorOf(db, res, req, 'admin.read', edge.metrics) === null) return;
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
