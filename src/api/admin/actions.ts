// What an operator can set going on the admin port (admin.write, audited): a build now
// (POST /admin/v1/builds), a refresh of every configured source now
// (POST /admin/v1/sources/refresh) or of one (POST /admin/v1/sources/{name}/refresh), and a
// source disabled or enabled (POST /admin/v1/sources/{name}/disable, /enable: 200, done at
// once, a build following). Each other action answers 202 once started and runs on the pipeline thread; its outcome shows where a scheduled one's does (GET /admin/v1/builds,
// GET /admin/v1/sources, the log). One of each at a time: a second is 409 while the first runs.

import type { ControlDb } from '../../control/control-db.js';
import { recordAudit } from '../../control/audit.js';
import { parseSmallBody, readSmallBody } from '../../http/body.js';
import { late, pending, sendJson, sendRc } from '../../http/reply.js';
import type { HttpRequest, HttpResponse } from '../../http/server/types.js';
import { RC } from '../../wire/errors.js';
import { NO_FIELDS } from '../../wire/request-bodies.js';
import type { Disabled } from '../../feeds/source-switches.js';
import type { AdminRoutes } from './admin-routes.js';

/**
 * What the process can set going (pipeline/build-on-demand.ts, pipeline/source-refresher.ts):
 * null where it cannot (a serving-only node; no sources).
 */
export interface OperatorActions {
  builds: { start(by: string): boolean } | null;
  refresher: {
    readonly busy: boolean;
    readonly buildRunning: boolean;
    has(name: string): boolean;
    disabled(name: string): Disabled | null;
    switch(name: string, by: string | null): boolean;
    runOnce(all: boolean, only?: readonly string[]): Promise<unknown>;
  } | null;
}

/**
 * How an action goes: started (202), done at once (200, with what it answers), or why not (a
 * 409's message, or a 404's).
 */
type Outcome =
  | { started: true; message: string }
  | { done: true; answer: Record<string, unknown>; changed: boolean }
  | { started: false; why: string; notFound?: boolean };

export class ActionsApi {
  constructor(
    private readonly db: ControlDb,
    private readonly actions: OperatorActions,
  ) {}

  register(admin: AdminRoutes): void {
    const { table: routes, edge } = admin;
    const { db, actions } = this;
    const { metrics } = edge;
    /** An action route: admin.write, a body that is empty or {}, then the action, audited when started. */
    const action = (path: string, audit: string, run: (by: string, param: string) => Outcome): void => {
      admin.post(path, 'admin.write', (res: HttpResponse, req: HttpRequest, { actor }) => {
        const param = req.getParameter(0) ?? '';
        const p = pending(res);
        readSmallBody(res, p, routes, (text) =>
          late(res, p, () => {
            const body = parseSmallBody(text, NO_FIELDS, { emptyIsObject: true });
            if ('refused' in body) return sendRc(res, RC.BAD_REQUEST, body.refused, metrics);
            const outcome = run(actor.who, param);
            if ('done' in outcome) {
              // Audited only when it changed something: a second click is not an operator's act.
              if (outcome.changed) recordAudit(db, actor, audit, null, param || null, {});
              return sendJson(res, 200, outcome.answer, metrics);
            }
            if (!outcome.started) return sendRc(res, outcome.notFound ? RC.NOT_FOUND : RC.CONFLICT, outcome.why, metrics);
            recordAudit(db, actor, audit, null, param || null, {});
            sendJson(res, 202, { status: 'started', message: outcome.message }, metrics);
          }),
        );
      });
    };
    action('/admin/v1/builds', 'build.start', (by) => {
      if (actions.builds === null) return { started: false, why: 'this node does not build (ROLE=serve): ask a node that builds' };
      if (!actions.builds.start(by))
        return { started: false, why: 'a build is running on this data directory (the daily run, a source refresh or one asked for): try again when it ends' };
      return { started: true, message: 'build started: it serves and is published when done; GET /admin/v1/builds lists it then' };
    });
    action('/admin/v1/sources/refresh', 'sources.refresh', () => {
      const refresher = actions.refresher;
      if (refresher === null) return { started: false, why: 'no sources are configured here (SOURCES or SOURCES_FILE)' };
      if (refresher.busy) return { started: false, why: 'a refresh is running: GET /admin/v1/sources shows its results when it ends' };
      // A refresh finding the build lock held would fetch nothing: refused rather than a 202 that does nothing.
      if (refresher.buildRunning)
        return {
          started: false,
          why: 'a build is running on this data directory (the daily run or one asked for): try again when it ends (GET /admin/v1/builds)',
        };
      void refresher.runOnce(true);
      return { started: true, message: 'refresh of every source started: GET /admin/v1/sources shows each one as it ends' };
    });
    const notConfigured = (name: string): Outcome => ({
      started: false,
      notFound: true,
      why: `no source named ${JSON.stringify(name.slice(0, 64))} is configured here: GET /admin/v1/sources lists them`,
    });
    action('/admin/v1/sources/:name/refresh', 'source.refresh', (_by, name) => {
      const refresher = actions.refresher;
      if (refresher === null || !refresher.has(name)) return notConfigured(name);
      const off = refresher.disabled(name);
      if (off)
        return {
          started: false,
          why: `${name} is disabled (since ${off.at}, by ${off.by}): enable it first (POST /admin/v1/sources/${name}/enable)`,
        };
      if (refresher.busy) return { started: false, why: 'a refresh is running: GET /admin/v1/sources shows its results when it ends' };
      if (refresher.buildRunning)
        return {
          started: false,
          why: 'a build is running on this data directory (the daily run or one asked for): try again when it ends (GET /admin/v1/builds)',
        };
      void refresher.runOnce(true, [name]);
      return { started: true, message: `refresh of ${name} started: GET /admin/v1/sources shows it when it ends; a build follows if it changed` };
    });
    // Done at once (the switch is a file written here); the build it calls for follows on the
    // pipeline thread, after any refresh or build in flight.
    const switching =
      (disable: boolean) =>
      (by: string, name: string): Outcome => {
        const refresher = actions.refresher;
        if (refresher === null || !refresher.has(name)) return notConfigured(name);
        const changed = refresher.switch(name, disable ? by : null);
        const off = refresher.disabled(name);
        const message = !changed
          ? `${name} was already ${disable ? 'disabled' : 'enabled'}: nothing changed`
          : disable
            ? `${name} disabled: it is no longer fetched, and a build without it follows (GET /admin/v1/builds)`
            : `${name} enabled: it is fetched again, and a build with it follows (GET /admin/v1/builds)`;
        return { done: true, changed, answer: { source: name, disabled: off !== null, since: off?.at ?? null, by: off?.by ?? null, message } };
      };
    action('/admin/v1/sources/:name/disable', 'source.disable', switching(true));
    action('/admin/v1/sources/:name/enable', 'source.enable', switching(false));
  }
}
