// The lookup front end on uWebSockets.js: GET /{ip} and GET /myip answered inline on this
// thread from the shared index; POST /batch streamed in and answered by a Piscina worker.
//
// uWS discipline (STYLE.md): copy everything from HttpRequest before returning; answer
// synchronously or register onAborted; every late write inside one cork; status, then
// headers, then body; copy onData chunks; res never leaves this thread.

import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { ERRORS, statusLine, type ApiError } from '../api/errors.js';
import { BatchPool, QueueFullError } from '../batch/pool.js';
import { REFUSE_KEYLESS, REFUSE_PLAN } from '../batch/protocol.js';
import { Gate, isAdmitted, type Admission, type GateResult } from './gate.js';
import { JsonHead, writeJsonType } from './json-head.js';
import type { Config } from '../config.js';
import type { IndexHolder } from '../index/loader.js';
import type { Logger } from '../log.js';
import { MAX_BATCH_ADDRESSES, answerBatch, decodeOutcome } from '../lookup/batch.js';
import { answerBytes, recordOf, writeAnswer } from '../lookup/answer.js';
import { NOT_ADDRESS, ParsedAddress, parseAddress } from '../net/address.js';
import { RequestClient } from './client.js';
import { RouteTable } from './routes.js';
import { Metrics } from './metrics.js';
import { uWS } from './uws.js';

export interface LookupApp {
  app: TemplatedApp;
  metrics: Metrics;
  /** This thread's request client, for the other APIs registered on the app. */
  client: RequestClient;
  /** Where the other APIs register their routes (for 405s). */
  routes: RouteTable;
}

export function sendError(res: HttpResponse, e: ApiError, metrics: Metrics, extraHeader?: [string, string], close = false): void {
  metrics.count(e.status);
  writeJsonType(res.writeStatus(e.statusLine));
  if (extraHeader) res.writeHeader(extraHeader[0], extraHeader[1]);
  res.end(e.body, close);
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
    private readonly holder: IndexHolder,
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
    // uWS copies what it cannot send at once, so the buffer is free again on return.
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

/** GET /{ip}: one non-empty path segment other than the fixed routes'. */
function isAddressPath(url: string): boolean {
  return url.length > 1 && url.indexOf('/', 1) < 0 && url !== '/myip' && url !== '/batch';
}

/** 404 for a path no route has, 405 with Allow for a path asked with another method. */
function notRouted(res: HttpResponse, url: string, routes: RouteTable, metrics: Metrics): void {
  const allowed = routes.allowed(url);
  if (allowed.length === 0) return sendError(res, ERRORS.notFound, metrics);
  sendError(res, ERRORS.methodNotAllowed, metrics, ['Allow', allowed.join(', ')]);
}

/** Guards a handler: an unexpected exception answers 500 instead of taking the process down. */
function guarded(log: Logger, metrics: Metrics, handler: (res: HttpResponse, req: HttpRequest) => void) {
  return (res: HttpResponse, req: HttpRequest): void => {
    try {
      handler(res, req);
    } catch (e) {
      log.error('request handler failed', { reason: e instanceof Error ? e.stack : String(e) });
      try {
        sendError(res, ERRORS.internal, metrics);
      } catch {
        // the response was already ended or aborted
      }
    }
  };
}

export function createLookupApp(config: Config, holder: IndexHolder, pool: BatchPool, gate: Gate, log: Logger): LookupApp {
  const app = uWS.App();
  const metrics = new Metrics();
  const head = new JsonHead();
  const single = new SingleLookup(holder, gate, metrics, head);

  const requestClient = new RequestClient(config.trustedProxies);
  const routes = new RouteTable(app);

  routes.get(
    '/myip',
    guarded(log, metrics, (res, req) => {
      const now = Date.now();
      const client = requestClient.of(res, req);
      const a = gate.admit(Gate.keyOf(req), client, now);
      if (!isAdmitted(a)) return refuse(res, a, metrics, head);
      const text = client.text();
      single.answer(res, text, 0, text.length, a, now);
    }),
  );

  // GET /{ip} is the catch-all GET, so that every other GET path can be told 404 or 405.
  routes.add('GET', '/:ip');
  app.get(
    '/*',
    guarded(log, metrics, (res, req) => {
      const url = req.getUrl();
      // An address holds no '/' and no '%': parse first, and route only what does not parse.
      const parsed = single.parse(url, 1, url.length);
      if (!parsed && !isAddressPath(url)) return notRouted(res, url, routes, metrics);
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
    }),
  );

  routes.post(
    '/batch',
    guarded(log, metrics, (res, req) => {
      const lengthHeader = req.getHeader('content-length');
      let aborted = false;
      res.onAborted(() => {
        aborted = true;
      });
      const a = gate.admit(Gate.keyOf(req), requestClient.of(res, req), Date.now());
      // Refused before the body is read: answer and close rather than drain it.
      if (!isAdmitted(a)) return refuse(res, a, metrics, head, true);
      if (pool.full) return sendError(res, ERRORS.rateLimited, metrics, ['Retry-After', '1'], true);
      const declared = lengthHeader === '' ? -1 : Number(lengthHeader);
      if (declared > config.maxBatchBodyBytes) return sendError(res, ERRORS.bodyTooLarge, metrics, undefined, true);
      let body = new Uint8Array(new ArrayBuffer(declared >= 0 ? declared : 16 * 1024));
      let length = 0;
      let done = false;
      res.onData((chunk, isLast) => {
        if (done || aborted) return;
        const n = chunk.byteLength;
        if (length + n > config.maxBatchBodyBytes) {
          done = true;
          // Stop reading: answer and close rather than drain the rest.
          res.cork(() => sendError(res, ERRORS.bodyTooLarge, metrics, undefined, true));
          return;
        }
        if (length + n > body.length) {
          const grown = new Uint8Array(new ArrayBuffer(Math.min(config.maxBatchBodyBytes, Math.max(length + n, body.length * 2))));
          grown.set(body.subarray(0, length));
          body = grown;
        }
        body.set(new Uint8Array(chunk), length); // the chunk is invalid once we return
        length += n;
        if (!isLast) return;
        done = true;
        const exact = length === body.buffer.byteLength ? (body.buffer as ArrayBuffer) : body.buffer.slice(0, length);
        runBatch(exact);
      });

      const runBatch = (bodyBytes: ArrayBuffer): void => {
        const serving = holder.current;
        // Reserve what the batch could cost at most (a listed address takes ≥ 5 bytes:
        // "::",), hand the worker that budget, and refund what it did not answer.
        const now = Date.now();
        const budget = gate.spend(a, Math.min(MAX_BATCH_ADDRESSES, Math.max(1, Math.floor(bodyBytes.byteLength / 5))), now);
        const refusal = a.caller === null ? REFUSE_KEYLESS : REFUSE_PLAN;
        const settle = (answered: number): void => gate.refund(a, budget - answered);
        const respond = (frame: Uint8Array): void => {
          const { status, answered, body: out } = decodeOutcome(frame);
          settle(answered);
          if (aborted) return;
          if (status === 200) metrics.batches++;
          else metrics.count(status);
          res.cork(() => {
            if (status === 200) head.writeOk(res, a, gate.used(a), Date.now());
            else head.write(res.writeStatus(statusLine(status)), a.rate, a.decision.remaining, a, gate.used(a), Date.now());
            res.end(out);
          });
        };
        // uWS copies what it cannot send at once, so the slot is free again once answered.
        const slot = pool.takeSlot();
        pool
          .run({ body: bodyBytes, tier: a.tier, generation: serving?.generation ?? 0, index: serving?.shared ?? null, budget, refusal, out: slot })
          .then(
            (frame) => respond(frame),
            (e: unknown) => {
              if (e instanceof QueueFullError) {
                settle(0);
                if (!aborted) res.cork(() => sendError(res, ERRORS.rateLimited, metrics, ['Retry-After', '1']));
                return;
              }
              // Workers keep failing: the dataset cannot be consulted, so every address is a 500.
              log.error('batch worker failed twice; answering every address with 500', {
                reason: e instanceof Error ? e.message : String(e),
              });
              respond(answerBatch(new TextDecoder().decode(bodyBytes), null, a.tier));
            },
          )
          .finally(() => pool.releaseSlot(slot));
      };

    }),
  );

  app.any(
    '/*',
    guarded(log, metrics, (res, req) => notRouted(res, req.getUrl(), routes, metrics)),
  );
  return { app, metrics, client: requestClient, routes };
}

export function listen(app: TemplatedApp, host: string, port: number): Promise<{ socket: us_listen_socket; port: number }> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (!socket) return reject(new Error(`cannot listen on ${host}:${port}`));
      resolve({ socket, port: uWS.us_socket_local_port(socket) });
    });
  });
}

export function closeListen(socket: us_listen_socket): void {
  uWS.us_listen_socket_close(socket);
}
