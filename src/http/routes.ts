// Every route of an app is registered here, and only here: the table wraps each handler in the
// guard, so no exception can escape a handler (synchronous, or a promise it returns) and take
// the process down, and it records which methods each path takes, so that a known path asked
// with another method gets 405 and an `Allow` header rather than 404. Callbacks that run later
// for a request (onData, onWritable, a worker's answer) are wrapped by `later`.

import { matchPath, parsePattern, type Pattern } from './server/patterns.js';
import type { HttpApp, HttpRequest, HttpResponse } from './server/types.js';
import { ERRORS, type ErrorAnswer } from '../api/errors.js';
import { IpsiftError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from './metrics.js';
import type { Cors } from './cors.js';
import { headOnly } from './head-response.js';
import { sendError } from './reply.js';

/** At most one failure log line per this long: a fault on every request must not flood the log. */
const FAILURE_LOG_EVERY_MS = 1000;

export type Method = 'GET' | 'POST' | 'DELETE' | 'HEAD';
export type Handler = (res: HttpResponse, req: HttpRequest) => void | Promise<void>;

interface Route {
  pattern: Pattern;
  /** Parameters and wildcards: among matching routes the fewest wins (static beats dynamic). */
  dynamic: number;
  methods: Set<Method>;
}

export interface RouteOptions {
  /** What an unexpected failure answers (default: the lookup group's 500 `lookup failed`). */
  internal?: ErrorAnswer;
  /** The pattern shown for `Allow` when the app's pattern is a catch-all (GET /{ip} is GET /*). */
  listedAs?: string;
  /**
   * GET routes: the HEAD handler, where it can answer without the GET's work (a file's
   * size); by default HEAD runs the GET handler and drops the body (head-response.ts).
   */
  head?: Handler;
}

export class RouteTable {
  private readonly routes: Route[] = [];
  /** When a failure was last logged, and how many were not logged since (no log floods). */
  private loggedAtMs = 0;
  private unlogged = 0;

  constructor(
    private readonly app: HttpApp,
    private readonly log: Logger,
    private readonly metrics: Metrics,
    /** CORS for browsers (the public port, where CORS_ORIGINS is set). */
    private readonly cors: Cors | null = null,
  ) {}

  get = (pattern: string, handler: Handler, o?: RouteOptions): this => this.on('GET', pattern, handler, o);
  post = (pattern: string, handler: Handler, o?: RouteOptions): this => this.on('POST', pattern, handler, o);
  del = (pattern: string, handler: Handler, o?: RouteOptions): this => this.on('DELETE', pattern, handler, o);

  /**
   * Everything no route takes: 404, or 405 with Allow for a known path (HEAD: no body); a CORS
   * preflight for a known path from an allowed origin: 204.
   */
  fallback(): this {
    this.app.any(
      '/*',
      this.guarded((res, req) => {
        const method = req.getMethod();
        const url = req.getUrl();
        if (method === 'options' && this.cors !== null && req.getHeader('access-control-request-method') !== '') {
          const origin = req.getHeader('origin');
          const allowed = this.allowed(url);
          if (this.cors.allows(origin) && allowed.length > 0) return this.cors.preflight(res, allowed); // res is wrapped: see guarded
        }
        this.unrouted(res, url, method === 'head');
      }, ERRORS.notFound),
    );
    return this;
  }

  /** Answers a request no route takes: 404, or 405 with Allow for a known path. */
  unrouted(res: HttpResponse, url: string, head: boolean): void {
    const allowed = this.allowed(url);
    if (allowed.length === 0) return sendError(res, ERRORS.notFound, this.metrics, { head });
    sendError(res, ERRORS.methodNotAllowed, this.metrics, { head, headers: [['Allow', allowed.join(', ')]] });
  }

  private on(method: Method, pattern: string, handler: Handler, o: RouteOptions = {}): this {
    const app = this.app;
    const internal = o.internal ?? ERRORS.lookupFailed;
    const h = this.guarded(handler, internal);
    this.record(method, o.listedAs ?? pattern);
    if (method === 'GET') {
      app.get(pattern, h);
      // Every GET route takes HEAD too.
      app.head(pattern, this.guarded(o.head ?? ((res, req) => handler(headOnly(res), req)), internal));
      this.record('HEAD', o.listedAs ?? pattern);
    } else if (method === 'POST') app.post(pattern, h);
    else app.del(pattern, h);
    return this;
  }

  /**
   * Wraps a callback that runs after the handler returned, for the same response: an
   * exception answers `internal` (or closes the connection) instead of escaping into the server.
   */
  later<A extends unknown[]>(res: HttpResponse, internal: ErrorAnswer, fn: (...args: A) => unknown): (...args: A) => void {
    return (...args: A): void => {
      try {
        const r = fn(...args);
        if (r instanceof Promise) r.catch((e: unknown) => this.fail(res, internal, e));
      } catch (e) {
        this.fail(res, internal, e);
      }
    };
  }

  private guarded(handler: Handler, internal: ErrorAnswer): (res: HttpResponse, req: HttpRequest) => void {
    const cors = this.cors;
    return (res, req) => {
      if (cors !== null) {
        const origin = req.getHeader('origin');
        if (cors.allows(origin)) res = cors.wrap(res, origin);
      }
      try {
        const r = handler(res, req);
        if (r instanceof Promise) r.catch((e: unknown) => this.fail(res, internal, e));
      } catch (e) {
        this.fail(res, internal, e);
      }
    };
  }

  /** Answers `internal` if the response is still open; otherwise drops the connection. */
  private fail(res: HttpResponse, internal: ErrorAnswer, e: unknown): void {
    this.metrics.handlerFailures++;
    const now = Date.now();
    if (now - this.loggedAtMs >= FAILURE_LOG_EVERY_MS) {
      // Expected operational failures (IpsiftError: a store that cannot be written) need no stack.
      const reason = e instanceof IpsiftError ? e.message : e instanceof Error ? (e.stack ?? e.message) : String(e);
      this.log.error('request handler failed', { reason, ...(this.unlogged ? { not_logged_since: this.unlogged } : {}) });
      this.loggedAtMs = now;
      this.unlogged = 0;
    } else this.unlogged++;
    try {
      res.cork(() => sendError(res, internal, this.metrics));
    } catch {
      try {
        res.close(); // answered in part, or aborted: nothing sound can be written any more
      } catch {
        // already gone
      }
    }
  }

  private record(method: Method, pattern: string): this {
    const existing = this.routes.find((r) => r.pattern.text === pattern);
    if (existing) existing.methods.add(method);
    else {
      const p = parsePattern(pattern);
      this.routes.push({ pattern: p, dynamic: p.ranks.filter((rank) => rank > 0).length, methods: new Set([method]) });
    }
    return this;
  }

  /** The methods the path takes, for `Allow` (empty: no such path). */
  allowed(url: string): Method[] {
    let best = Infinity;
    let methods: Method[] = [];
    for (const r of this.routes) {
      if (r.dynamic > best || !matchPath(r.pattern, url)) continue;
      if (r.dynamic < best) {
        best = r.dynamic;
        methods = [];
      }
      for (const m of r.methods) if (!methods.includes(m)) methods.push(m);
    }
    return methods;
  }
}
