// GET /explain/{ip} on the admin port, for an operator token with admin.read: what `ipsift
// explain` prints, as JSON, with the serving build's answer beside it (the feeds may have
// changed since that build). Reading every feed
// takes a while on real data, so it runs on a thread of its own, one at a time: the admin
// port shares its event loop with lookups.

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ERRORS } from '../../wire/errors.js';
import type { Explanation } from '../../build/explain.js';
import type { IndexHolder } from '../../index/loader.js';
import { answerObject } from '../../lookup/answer.js';
import { TIER_MAX } from '../../model/projection.js';
import { NOT_ADDRESS, ParsedAddress, parseAddress } from '../../net/address.js';
import { late, pending, sendError, sendJson } from '../../http/reply.js';
import type { AdminRoutes } from './admin-routes.js';

const EXPLAIN_WORKER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../workers/explain.js');

export class ExplainApi {
  constructor(
    private readonly holder: IndexHolder,
    private readonly dataDir: string,
  ) {}

  register(admin: AdminRoutes): void {
    const { table: routes, edge } = admin;
    const { holder, dataDir } = this;
    const { metrics } = edge;
    let running = false;
    const parsed = new ParsedAddress();
    admin.get(
      '/explain/:ip',
      'admin.read',
      (res, req) => {
        // Like the rest of the admin API: it reads every feed, so only an operator may start it.
        let ip: string;
        try {
          ip = decodeURIComponent(req.getParameter(0) ?? '');
        } catch {
          return sendError(res, ERRORS.notAddress, metrics);
        }
        if (parseAddress(ip, 0, ip.length, parsed) === NOT_ADDRESS) return sendError(res, ERRORS.notAddress, metrics);
        if (running) return sendError(res, ERRORS.rateLimited, metrics, { headers: [['Retry-After', '1']] });
        running = true;
        const p = pending(res);
        const serving = holder.current;
        let answered = false;
        const answer = (write: () => void): void => {
          if (answered) return;
          answered = true;
          running = false; // the thread has done its work; it only exits now
          late(res, p, write);
        };
        const worker = new Worker(EXPLAIN_WORKER, { workerData: { dataDir, ip } });
        worker.once(
          'message',
          routes.later(res, ERRORS.lookupFailed, (e: Explanation) => {
            const doc = { ...e, serving: serving ? { build: serving.buildId, answer: answerObject(serving.index, ip, TIER_MAX) } : null };
            answer(() => sendJson(res, 200, doc, metrics));
          }),
        );
        worker.once('error', () => answer(() => sendError(res, ERRORS.lookupFailed, metrics)));
        worker.once('exit', () => answer(() => sendError(res, ERRORS.lookupFailed, metrics)));
      },
      { compress: true },
    );
  }
}
