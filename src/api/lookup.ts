// The lookup front end: GET /{ip} and GET /myip answered inline on this thread from the
// shared index; POST /batch streamed in and answered by a Piscina worker.
//
// The boundary's discipline (server/types.ts, STYLE.md): copy everything from HttpRequest
// before returning; answer synchronously or register onAborted; every late write inside one
// cork; status, then headers, then body; copy onData chunks; res never leaves this thread.

import type { HttpApp, HttpRequest, HttpResponse, HttpServer } from '../http/server/types.js';
import { ERRORS, statusLine } from '../wire/errors.js';
import { QueueFullError } from '../batch/pool.js';
import type { BatchRunner } from '../batch/runner.js';
import { REFUSE_KEYLESS, REFUSE_PLAN } from '../batch/protocol.js';
import { Gate, isAdmitted, type Admission, type GateResult } from './gate.js';
import { JsonHead } from './json-head.js';
import type { Config } from '../config.js';
import type { IndexSource } from '../index/loader.js';
import type { Logger } from '../log.js';
import { MAX_BATCH_ADDRESSES, answerBatch, decodeOutcome } from '../lookup/batch.js';
import { answerBytes, recordOf, writeAnswer } from '../lookup/answer.js';
import { NOT_ADDRESS, ParsedAddress, parseAddress } from '../net/address.js';
import { BodyMemory, readBody } from '../http/body.js';
import { RequestClient } from '../http/client.js';
import { late, sendError, type Pending } from '../http/reply.js';
import { RouteTable } from '../http/routes.js';
import { Cors } from '../http/cors.js';
import { Metrics } from '../http/metrics.js';
import { negotiate, writeCoding } from '../http/content-coding.js';
import { IDENTITY, type Coding } from '../wire/codings.js';
import { registerOpenApi } from './openapi.js';

export interface LookupApp {
  app: HttpApp;
  metrics: Metrics;
  /** This thread's request client, for the other APIs registered on the app. */
  client: RequestClient;
  /** Where the other APIs register their routes (for 405s). */
  routes: RouteTable;
}

/** Memory the lookup apps of several threads share (each made here when absent). */
export interface LookupShared {
  /** This thread's counters, which the admin thread reads (Metrics). */
  metrics?: SharedArrayBuffer;
  /** The process's batch-body budget (BodyMemory), and this thread's slot in it. */
  bodyMemory?: SharedArrayBuffer;
  bodyMemorySlot?: number;
}

/** Slots for views of every length up to n, filled so the array stays packed (fast to index). */
const viewSlots = (n: number): (Uint8Array | null)[] => new Array<Uint8Array | null>(n + 1).fill(null);

/** Owns the reusable output buffer of this thread's single-lookup answers. */
class SingleLookup {
  private readonly parsed = new ParsedAddress();
  private out = Buffer.allocUnsafeSlow(4096);
  /** views[n]: the first n bytes of out, made once (a view per answer costs an allocation). */
  private views = viewSlots(this.out.length);

  constructor(
    private readonly holder: IndexSource,
    private readonly gate: Gate,
    private readonly metrics: Metrics,
    private readonly head: JsonHead,
  ) {}

  /** Parses text[start, end) for answerParsed; false when it is not an address. */
  parse(text: string, start: number, end: number): boolean {
    return parseAddress(text, start, end, this.parsed) !== NOT_ADDRESS;
  }

  /**
   * Answers the address in text[start, end) for an admitted request: input (400), then the
   * allowance (429), then the lookup (500).
   */
  answer(res: HttpResponse, text: string, start: number, end: number, a: Admission, nowMs: number): void {
    if (!this.parse(text, start, end)) return sendError(res, ERRORS.notAddress, this.metrics);
    this.answerParsed(res, text, start, end, a, nowMs);
  }

  /** answer() for text[start, end) that parse() has just accepted. */
  answerParsed(res: HttpResponse, text: string, start: number, end: number, a: Admission, nowMs: number): void {
    const p = this.parsed;
    if (this.gate.spend(a, 1, nowMs) === 0) return sendError(res, a.refusal, this.metrics);
    const serving = this.holder.current;
    if (serving === null) {
      this.gate.refund(a, 1); // refusals are not counted
      return sendError(res, ERRORS.lookupFailed, this.metrics);
    }
    const index = serving.index;
    const record = recordOf(index, p);
    const need = answerBytes(index, record, a.tier);
    if (need > this.out.length) {
      this.out = Buffer.allocUnsafeSlow(Math.max(need, this.out.length * 2));
      this.views = viewSlots(this.out.length);
    }
    const n = writeAnswer(this.out, 0, text, start, end, p, index, record, a.tier);
    this.metrics.lookups++;
    this.head.writeOk(res, a, this.gate.used(a), nowMs);
    // The server copies what it cannot send at once, so the buffer is free again on return.
    res.end((this.views[n] ??= this.out.subarray(0, n)));
  }
}

/** Answers a request the gate refused (401, 403, or 429 with Retry-After). */
function refuse(res: HttpResponse, r: Exclude<GateResult, Admission>, metrics: Metrics, head: JsonHead, close = false): void {
  metrics.count(r.error.status);
  res.writeStatus(r.error.statusLine);
  head.write(res, r.rate ?? null, r.decision?.remaining ?? 0, null, 0, Date.now());
  if (r.retryAfter !== undefined) res.writeHeader('Retry-After', String(r.retryAfter));
  res.end(r.error.body, close);
}

const LOOKUP = { family: 'lookup' } as const;

/** GET /{ip}: one non-empty path segment other than the fixed routes'. */
function isAddressPath(url: string): boolean {
  return url.length > 1 && url.indexOf('/', 1) < 0 && url !== '/myip' && url !== '/batch';
}

export function createLookupApp(server: HttpServer, config: Config, holder: IndexSource, pool: BatchRunner, gate: Gate, log: Logger, shared: LookupShared = {}): LookupApp {
  const app = server.app();
  const metrics = new Metrics(shared.metrics);
  const head = new JsonHead();
  const single = new SingleLookup(holder, gate, metrics, head);
  const requestClient = new RequestClient(config.trustedProxies, config.keylessIpv6Prefix);
  const routes = new RouteTable(app, log, metrics, config.corsOrigins.length > 0 ? new Cors(config.corsOrigins) : null, config.accessLog);
  const batch = new BatchRoute(config, holder, pool, gate, metrics, head, routes, requestClient, log, shared);

  routes.get('/myip', (res, req) => {
    const now = Date.now();
    const client = requestClient.of(res, req);
    const a = gate.admit(Gate.keyOf(req), client, now);
    if (!isAdmitted(a)) return refuse(res, a, metrics, head);
    const text = client.text();
    single.answer(res, text, 0, text.length, a, now);
  }, LOOKUP);

  // GET /{ip} is the catch-all GET, so that every other GET path can be told 404 or 405.
  routes.get(
    '/*',
    (res, req) => {
      const url = req.getUrl();
      // An address holds no '/' and no '%': parse first, and route only what does not parse.
      const parsed = single.parse(url, 1, url.length);
      if (!parsed && !isAddressPath(url)) return routes.unrouted(res, url, false);
      const now = Date.now();
      const a = gate.admit(Gate.keyOf(req), requestClient.of(res, req), now);
      if (!isAdmitted(a)) return refuse(res, a, metrics, head);
      if (parsed) return single.answerParsed(res, url, 1, url.length, a, now);
      if (url.indexOf('%') < 0) return sendError(res, ERRORS.notAddress, metrics);
      let decoded: string;
      try {
        decoded = decodeURIComponent(url.slice(1));
      } catch {
        return sendError(res, ERRORS.notAddress, metrics);
      }
      single.answer(res, decoded, 0, decoded.length, a, now);
    },
    { listedAs: '/:ip', ...LOOKUP },
  );

  routes.post('/batch', (res, req) => batch.handle(res, req), { family: 'batch' });
  registerOpenApi(routes, '/api/v1/openapi.json', metrics);
  routes.fallback();
  return { app, metrics, client: requestClient, routes };
}

/**
 * POST /batch: admit (key, range, rate), read the body within its bounds, hand it to a
 * worker, answer from the worker's outcome. The worker answers every distinct valid address;
 * the allowance is then taken for exactly those (Meter: from this thread's lease, so no LMDB
 * transaction per batch), before the answer is sent. Nothing is reserved for what a batch
 * will not answer, so nothing is refused early and nothing needs giving back. When the
 * allowance grants fewer, the batch runs again with that budget (only at the limit).
 */
class BatchRoute {
  private readonly memory: BodyMemory;

  constructor(
    private readonly config: Config,
    private readonly holder: IndexSource,
    private readonly pool: BatchRunner,
    private readonly gate: Gate,
    private readonly metrics: Metrics,
    private readonly head: JsonHead,
    private readonly routes: RouteTable,
    private readonly requestClient: RequestClient,
    private readonly log: Logger,
    shared: LookupShared,
  ) {
    this.memory = new BodyMemory(config.batchBodyMemoryBytes, shared.bodyMemory, shared.bodyMemorySlot);
    metrics.bodyMemory = this.memory;
  }

  handle(res: HttpResponse, req: HttpRequest): void {
    const lengthHeader = req.getHeader('content-length');
    const coding = negotiate(req.getHeader('accept-encoding'));
    const p: Pending = { aborted: false };
    let reader: { abort(): void } | null = null;
    // Batches in progress, for graceful shutdown: counted until answered or aborted.
    let open = false;
    const finish = (): void => {
      if (open) this.metrics.inFlight--;
      open = false;
    };
    res.onAborted(() => {
      p.aborted = true;
      reader?.abort();
      finish();
    });
    const a = this.gate.admit(Gate.keyOf(req), this.requestClient.of(res, req), Date.now());
    // Refused before the body is read: answer and close rather than drain it.
    if (!isAdmitted(a)) return refuse(res, a, this.metrics, this.head, true);
    if (this.pool.full) return sendError(res, ERRORS.rateLimited, this.metrics, { headers: [['Retry-After', '1']], close: true });
    open = true;
    this.metrics.inFlight++;
    p.finish = finish;
    const declared = lengthHeader === '' ? -1 : /^\d{1,15}$/.test(lengthHeader) ? Number(lengthHeader) : Infinity;
    const later = <A extends unknown[]>(fn: (...args: A) => unknown) => this.routes.later(res, ERRORS.lookupFailed, fn);
    reader = readBody(res, declared, this.config.maxBatchBodyBytes, this.memory, this.config.bodyTimeoutMs, () => p.aborted, later, {
      done: (body) => this.run(res, p, a, body, MAX_BATCH_ADDRESSES, coding),
      tooLarge: (close) => {
        finish();
        late(res, p, () => sendError(res, ERRORS.bodyTooLarge, this.metrics, { close }));
      },
      busy: () => {
        finish();
        late(res, p, () => sendError(res, ERRORS.rateLimited, this.metrics, { headers: [['Retry-After', '1']], close: true }));
      },
    });
  }

  /** `prepaid`: the budget is already taken from the allowance (a re-run at the limit). */
  private run(res: HttpResponse, p: Pending, a: Admission, body: ArrayBuffer, budget: number, coding: Coding, prepaid = false): void {
    const serving = this.holder.current;
    // The server copies what it cannot send at once, so the slot is free again once answered.
    const slot = this.pool.takeSlot();
    const task = {
      body,
      tier: a.tier,
      generation: serving?.generation ?? 0,
      index: serving?.shared ?? null,
      budget,
      refusal: a.caller === null ? REFUSE_KEYLESS : REFUSE_PLAN,
      out: slot,
      coding,
    };
    const respond = this.routes.later(res, ERRORS.lookupFailed, (frame: Uint8Array) => {
      let again = false;
      try {
        const { status, answered, coding: sent, body: out } = decodeOutcome(frame);
        if (p.aborted) {
          if (prepaid) this.gate.refund(a, budget);
          return;
        }
        if (!prepaid && answered > 0) {
          const granted = this.gate.spend(a, answered, Date.now());
          if (granted < answered) {
            again = true;
            return this.run(res, p, a, body, granted, coding, true);
          }
        }
        if (status === 200) this.metrics.batches++;
        else this.metrics.count(status);
        res.cork(() => {
          if (status === 200) this.head.writeOk(res, a, this.gate.used(a), Date.now());
          else this.head.write(res.writeStatus(statusLine(status)), a.rate, a.decision.remaining, a, this.gate.used(a), Date.now());
          if (sent !== IDENTITY) writeCoding(res, sent);
          res.end(out);
        });
      } finally {
        // Done, however it ended (an exception is answered by the guard), unless it runs again.
        if (!again) p.finish?.();
      }
    });
    this.pool
      .run(task)
      .then(respond, (e: unknown) => {
        if (e instanceof QueueFullError) {
          p.finish?.();
          return late(res, p, () => sendError(res, ERRORS.rateLimited, this.metrics, { headers: [['Retry-After', '1']] }));
        }
        // Workers keep failing or the deadline passed: the dataset cannot be consulted, so every address is a 500.
        this.log.error('batch not answered by a worker (failures or its deadline); answering every address with 500', { reason: e instanceof Error ? e.message : String(e) });
        respond(answerBatch(new TextDecoder().decode(body), null, a.tier));
      })
      .finally(() => this.pool.releaseSlot(slot));
  }
}
