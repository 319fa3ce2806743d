// The data an operator looks at on the admin port, for an operator token: the builds (the
// serving one marked), one build's report (its manifest: feeds, ranges, exports, timings),
// what a build changed against the one before it, making a build the serving one
// (admin.write; as `ipsift builds use`, after the same check of its index), and the imported
// feeds with their age.

import fs from 'node:fs';
import type { ControlDb } from '../../control/control-db.js';
import { IpsiftError, reasonOf } from '../../errors.js';
import { listFeeds } from '../../feeds/feed-store.js';
import { parseSmallBody, readSmallBody } from '../../http/body.js';
import { recordAudit } from '../../control/audit.js';
import { NO_FIELDS } from '../../wire/request-bodies.js';
import { late, sendJson, sendRc, type Pending } from '../../http/reply.js';
import type { HttpResponse } from '../../http/server/types.js';
import { buildSummaries, listBuilds, readManifest, readServingLog } from '../../index/builds.js';
import { serveBuild } from '../../index/loader.js';
import { readBuildChanges } from '../../index/build-changes.js';
import { DEFAULT_HISTORY_DAYS, updateTimeline } from '../../history/timeline-file.js';
import { RC } from '../../wire/errors.js';
import type { AdminRoutes } from './admin-routes.js';

export class BuildsApi {
  constructor(
    private readonly db: ControlDb,
    private readonly dataDir: string,
    private readonly historyDays = DEFAULT_HISTORY_DAYS,
  ) {}

  register(admin: AdminRoutes): void {
    const { table: routes, edge } = admin;
    const { db, dataDir } = this;
    const { metrics } = edge;
    /** The build id of the path, or null once answered 404. */
    const buildOf = (res: HttpResponse, id: string): string | null => {
      if (listBuilds(dataDir).includes(id)) return id;
      sendRc(res, RC.NOT_FOUND, `no build ${id}: GET /admin/v1/builds lists them`, metrics);
      return null;
    };
    admin.get(
      '/admin/v1/builds',
      'admin.read',
      (res) => {
        sendJson(res, 200, { builds: buildSummaries(dataDir).reverse() }, metrics);
      },
      { compress: true },
    );
    admin.get(
      '/admin/v1/serving-log',
      'admin.read',
      (res) => {
        // Newest first: which build served from when to when on this node.
        sendJson(res, 200, { spans: readServingLog(dataDir).reverse() }, metrics);
      },
      { compress: true },
    );
    admin.get(
      '/admin/v1/builds/:id',
      'admin.read',
      (res, req) => {
        const id = buildOf(res, req.getParameter(0) ?? '');
        if (id !== null) sendJson(res, 200, readManifest(dataDir, id), metrics);
      },
      { compress: true },
    );
    admin.get(
      '/admin/v1/builds/:id/changes',
      'admin.read',
      (res, req) => {
        const id = buildOf(res, req.getParameter(0) ?? '');
        if (id === null) return;
        // Recorded when the build was made: nothing as heavy as two indexes is read here.
        const changes = readBuildChanges(dataDir, id);
        if (changes === null)
          return sendRc(
            res,
            RC.NOT_FOUND,
            `build ${id} has no comparison: it was the first build here, or made by an older ipsift ('ipsift builds compare ${id}' compares it with the build before it on disk)`,
            metrics,
          );
        sendJson(res, 200, changes, metrics);
      },
      { compress: true },
    );
    // One build checked at a time: the check reads a whole index into memory (226 MiB for 1 M
    // ranges), and a token holder asking many at once would hold as many.
    let checking = false;
    admin.post('/admin/v1/builds/:id/serve', 'admin.write', (res, req, { actor }) => {
      const id = buildOf(res, req.getParameter(0) ?? '');
      if (id === null) return;
      if (checking)
        return sendRc(res, RC.RATE_LIMITED, 'another build is being checked and served: retry when it is done', metrics, { headers: [['Retry-After', '1']] });
      checking = true;
      const p: Pending = { aborted: false };
      let held = true;
      // Released once, by whichever comes first (an abort may also come after the answer).
      const done = (): void => {
        if (held) checking = held = false;
      };
      res.onAborted(() => {
        p.aborted = true;
        done();
      });
      // The body is read (the connection stays usable) and must be empty or {}.
      readSmallBody(res, p, routes, (text) => {
        const body = parseSmallBody(text, NO_FIELDS, { emptyIsObject: true });
        if ('refused' in body) {
          done();
          return late(res, p, () => sendRc(res, RC.BAD_REQUEST, body.refused, metrics));
        }
        serveBuild(dataDir, id)
          .then(() => {
            // What it answers from now on joins the timeline of answers.
            updateTimeline(dataDir, Date.now(), this.historyDays);
          })
          .then(
            () =>
              late(res, p, () => {
                // Which build answers is an operator's decision like any other: audited.
                recordAudit(db, actor, 'build.serve', null, id, {});
                sendJson(res, 200, { current: id, message: `serving build is now ${id}: every front-end thread switches within INDEX_POLL_MS` }, metrics);
              }),
            (e) =>
              late(res, p, () => sendRc(res, RC.CONFLICT, e instanceof IpsiftError ? e.message : `build ${id} could not be served (${reasonOf(e)})`, metrics)),
          )
          .finally(done);
      });
    });
    admin.get(
      '/admin/v1/feeds',
      'admin.read',
      (res) => {
        const feeds = listFeeds(dataDir).map((f) => ({
          name: f.name,
          bytes: f.bytes,
          evidence: f.evidence,
          priority: f.priority,
          source: f.source,
          imported_at: fs.statSync(f.file).mtime.toISOString(),
        }));
        sendJson(res, 200, { feeds }, metrics);
      },
      { compress: true },
    );
  }
}
