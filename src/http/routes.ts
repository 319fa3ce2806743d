// Every route of an app is registered here, and only here: the table wraps each handler in the
// guard, so no exception can escape a handler (synchronous, or a promise it returns) and take
// the process down, and it records which methods each path takes, so that a known path asked
// with another method gets 405 and an `Allow` header rather than 404. Callbacks that run later
// for a request (onData, onWritable, a worker's answer) are wrapped by `later`.

// Imported, not the global: on Node 20 the global is a getter run on every use (30 ns a call).
import { performance } from 'node:perf_hooks';
import { matchPath, parsePattern, type Pattern } from './server/patterns.js';
import type { HttpApp, HttpRequest, HttpResponse } from './server/types.js';
import { ERRORS, RC, type ErrorAnswer } from '../wire/errors.js';
import { IpsiftError, Unavailable } from '../errors.js';
import type { Logger } from '../log.js';
import type { Cors } from './cors.js';
import { headOnly } from './head-response.js';
import { sendError, sendRc } from './reply.js';
import { observed, type Ended } from './observed-response.js';
import { FAMILIES, type Family, type Metrics } from './metrics.js';
import { peerText } from './client.js';
import { compressing } from './compressing-response.js';
import { WallClock } from './wall-clock.js';
import { systemClock, type Clock } from '../clock.js';
import { negotiate } from './content-coding.js';

/** At most one failure log line per this long: a fault on every request must not flood the log. */
const FAILURE_LOG_EVERY_MS = 1000;
/** Retry-After of a 503 for an unreachable store: about when it is tried again (bridge/sync-call.ts FAIL_FAST_MS). */
const RETRY_AFTER_UNAVAILABLE_S = 1;

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
  /** Answers may be long: their bodies go out compressed when the request asks (compressing-response.ts). */
  compress?: boolean;
  /** The latency histogram the route's requests count in (metrics.ts); none: not timed. */
  family?: Family;
}

/** Single lookups answer before their handler returns: timed around the call, with no wrapper. */
const SYNCHRONOUS = FAMILIES.indexOf('lookup');

/** The longest path an access-log line carries. */
const MAX_LOGGED_PATH = 256;

export class RouteTable {
  private readonly routes: Route[] = [];
  /** When a failure was last logged, and how many were not logged since (no log floods). */
  private readonly failureLog = new EveryWhile(FAILURE_LOG_EVERY_MS);
  private readonly unavailableLog = new EveryWhile(FAILURE_LOG_EVERY_MS);
  /** While a lookup handler timed at its return runs: when it began (else -1). */
  private syncStart = -1;
  /** That handler has deferred its answer (answerLater): it is timed when it ends instead. */
  private answeringLater = false;
  private readonly wallClock: WallClock;
  /** Refusals of unrouted requests as {rc, message} (the admin API's shape) rather than the lookup group's {error}. */
  private rcRefusals = false;

  constructor(
    private readonly app: HttpApp,
    private readonly log: Logger,
    private readonly metrics: Metrics,
    /** CORS for browsers (the public port, where CORS_ORIGINS is set). */
    private readonly cors: Cors | null = null,
    /** The share of requests the access log writes a line for (ACCESS_LOG): 0 none, 1 all. */
    private readonly accessLog = 0,
    /** The time handlers read (nowMs): the system's, or a test's. */
    private readonly clock: Clock = systemClock,
  ) {
    this.wallClock = clock === systemClock ? new WallClock() : new WallClock(clock.now, 0);
  }

  /** Unrouted requests are refused in the admin API's {rc, message} shape. */
  answersWithRc(): this {
    this.rcRefusals = true;
    return this;
  }

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
    const allow: [string, string][] = [['Allow', allowed.join(', ')]];
    if (this.rcRefusals) {
      if (allowed.length === 0)
        return sendRc(res, RC.NOT_FOUND, 'no route has this path: GET /openapi.json on this port lists every route', this.metrics, { head });
      return sendRc(res, RC.METHOD_NOT_ALLOWED, `this path takes ${allowed.join(', ')} only (the Allow header)`, this.metrics, { head, headers: allow });
    }
    if (allowed.length === 0) return sendError(res, ERRORS.notFound, this.metrics, { head });
    sendError(res, ERRORS.methodNotAllowed, this.metrics, { head, headers: allow });
  }

  private on(method: Method, pattern: string, given: Handler, o: RouteOptions = {}): this {
    const app = this.app;
    const handler: Handler = o.compress ? (res, req) => given(compressing(res, negotiate(req.getHeader('accept-encoding'))), req) : given;
    const internal = o.internal ?? ERRORS.lookupFailed;
    const family = o.family === undefined ? -1 : FAMILIES.indexOf(o.family);
    const h = this.guarded(handler, internal, family);
    this.record(method, o.listedAs ?? pattern);
    if (method === 'GET') {
      app.get(pattern, h);
      // Every GET route takes HEAD too.
      app.head(pattern, this.guarded(o.head ?? ((res, req) => handler(headOnly(res), req)), internal, family));
      this.record('HEAD', o.listedAs ?? pattern);
    } else if (method === 'POST') app.post(pattern, h);
    else app.del(pattern, h);
    return this;
  }

  /**
   * Milliseconds since the epoch for the request being handled: from the reading that times a
   * synchronous lookup while its handler runs (no second clock read), else the clock's.
   */
  nowMs(): number {
    return this.syncStart >= 0 ? this.wallClock.at(this.syncStart) : this.clock.now();
  }

  /**
   * A lookup whose handler is returning without an answer (accounting deferred it): its latency
   * is observed when the answer ends, not now. Returns the response to answer on; the same
   * response when called again for it, outside its handler.
   */
  answerLater(res: HttpResponse): HttpResponse {
    if (this.syncStart < 0 || this.answeringLater) return res;
    this.answeringLater = true;
    const start = this.syncStart;
    return observed(res, (status) => {
      if (status !== 0) this.metrics.observe(SYNCHRONOUS, (performance.now() - start) / 1000);
    });
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

  private guarded(handler: Handler, internal: ErrorAnswer, family = -1): (res: HttpResponse, req: HttpRequest) => void {
    const cors = this.cors;
    const sample = this.accessLog;
    const metrics = this.metrics;
    return (res, req) => {
      if (cors !== null) {
        const origin = req.getHeader('origin');
        if (cors.allows(origin)) res = cors.wrap(res, origin);
      }
      const start = family >= 0 || sample > 0 ? performance.now() : 0;
      const logged = sample > 0 && (sample >= 1 || Math.random() < sample);
      const wrapped = logged || (family >= 0 && family !== SYNCHRONOUS);
      if (wrapped) res = observed(res, this.ended(req, res, start, family, logged));
      const timedHere = family === SYNCHRONOUS && !wrapped;
      if (timedHere) {
        this.syncStart = start;
        this.answeringLater = false;
      }
      try {
        const r = handler(res, req);
        if (r instanceof Promise) r.catch((e: unknown) => this.fail(res, internal, e));
      } catch (e) {
        this.fail(res, internal, e);
      }
      if (timedHere) {
        if (!this.answeringLater) metrics.observe(family, (performance.now() - start) / 1000);
        this.syncStart = -1;
      }
    };
  }

  /** What a wrapped request reports when it ends: its latency, and its access-log line. */
  private ended(req: HttpRequest, res: HttpResponse, start: number, family: number, logged: boolean): Ended {
    // Read now: the request is only valid while the handler runs.
    const method = logged ? req.getMethod().toUpperCase() : '';
    const url = logged ? req.getUrl().slice(0, MAX_LOGGED_PATH) : '';
    const remote = logged ? peerText(new Uint8Array(res.getRemoteAddress())) : '';
    return (status, bytes) => {
      const seconds = (performance.now() - start) / 1000;
      if (family >= 0 && status !== 0) this.metrics.observe(family, seconds);
      // Never the query (it may hold ?apikey=) nor a header: nothing here is a secret.
      if (logged)
        this.log.info('request', {
          method,
          path: url,
          status,
          bytes,
          ms: Math.round(seconds * 1e6) / 1000,
          remote,
          ...(status === 0 ? { aborted: true } : {}),
        });
    };
  }

  /**
   * Answers `internal` if the response is still open (503 with Retry-After instead when a
   * store the request needs is unreachable); otherwise drops the connection.
   */
  private fail(res: HttpResponse, internal: ErrorAnswer, e: unknown): void {
    const unavailable = e instanceof Unavailable;
    const now = Date.now();
    if (unavailable) {
      // Expected while a store is unreachable: answered 503 (counted by status), not a handler
      // failure; one warning a while says so, whatever the traffic.
      this.unavailableLog.write(now, (skipped) =>
        this.log.warn('a store requests need is unreachable: answering 503 with Retry-After', { reason: e.message, ...skipped }),
      );
    } else {
      this.metrics.handlerFailures++;
      // Expected operational failures (IpsiftError: a store that cannot be written) need no stack.
      const reason = e instanceof IpsiftError ? e.message : e instanceof Error ? (e.stack ?? e.message) : String(e);
      this.failureLog.write(now, (skipped) => this.log.error('request handler failed', { reason, ...skipped }));
    }
    try {
      if (unavailable)
        res.cork(() =>
          sendError(res, 'code' in internal ? RC.UNAVAILABLE : ERRORS.unavailable, this.metrics, {
            headers: [['Retry-After', String(RETRY_AFTER_UNAVAILABLE_S)]],
          }),
        );
      else res.cork(() => sendError(res, internal, this.metrics));
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

  /** Every pattern registered (as listed for Allow) and its methods, for the OpenAPI check. */
  table(): { pattern: string; methods: Method[] }[] {
    return this.routes.map((r) => ({ pattern: r.pattern.text, methods: [...r.methods] }));
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

/** A log line at most once per `everyMs`, saying how many were left out since the last. */
class EveryWhile {
  private atMs = -Infinity;
  private skipped = 0;

  constructor(private readonly everyMs: number) {}

  write(nowMs: number, line: (skipped: { not_logged_since?: number }) => void): void {
    if (nowMs - this.atMs < this.everyMs) return void this.skipped++;
    line(this.skipped ? { not_logged_since: this.skipped } : {});
    this.atMs = nowMs;
    this.skipped = 0;
  }
}
