// The lookup front end: GET /{ip} and GET /myip answered inline on this thread from the
// shared index (POST /batch: batch.ts), and the public app those and the other APIs share.
//
// The boundary's discipline (server/types.ts, STYLE.md): copy everything from HttpRequest
// before returning; answer synchronously or register onAborted; every late write inside one
// cork; status, then headers, then body; copy onData chunks; res never leaves this thread.

import type { HttpResponse } from '../../http/server/types.js';
import { ERRORS, type ApiError } from '../../wire/errors.js';
import type { Caller } from '../../control/auth.js';
import { Gate, PENDING, type Admission } from '../admission/gate.js';
import { type JsonHead, sendRefusal } from '../admission/json-head.js';
import type { IndexSource } from '../../index/loader.js';
import { answerBytes, recordOf, writeAnswer } from '../../lookup/answer.js';
import { NOT_ADDRESS, ParsedAddress, parseAddress } from '../../net/address.js';
import { KeptClient, type Client } from '../../http/client.js';
import { sendError } from '../../http/reply.js';
import type { RouteTable } from '../../http/routes.js';
import type { Metrics } from '../../http/metrics.js';
import type { Edge } from '../admission/edge.js';

/** Before the first build serves: ask again in half a minute (a first fetch of the public sources takes seconds to a minute). */
export const NO_DATA_RETRY_AFTER_S = 30;
const NO_DATA_YET = { headers: [['Retry-After', String(NO_DATA_RETRY_AFTER_S)]] as [string, string][] };
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
    private readonly routes: RouteTable,
    /** Sources are configured: no build yet means their first fetch is still under way (503), not a data directory without data (500). */
    private readonly awaitingSources: boolean,
  ) {}

  /**
   * Runs `again` when the accounting lease the request waits on has changed (gate.wait), in a
   * cork, unless the client has gone; this thread serves other requests meanwhile. `again`
   * answers on the response it is given (timed until it ends: RouteTable.answerLater).
   */
  waitThen(res: HttpResponse, again: (res: HttpResponse) => void): void {
    const later = this.routes.answerLater(res);
    let aborted = false;
    later.onAborted(() => {
      aborted = true;
    });
    this.gate.wait(
      this.routes.later(later, ERRORS.lookupFailed, () => {
        if (!aborted) later.cork(() => again(later));
      }),
    );
  }

  /** Parses text[start, end) for answerParsed; false when it is not an address. */
  parse(text: string, start: number, end: number): boolean {
    return parseAddress(text, start, end, this.parsed) !== NOT_ADDRESS;
  }

  /**
   * Answers the address in text[start, end) for an admitted request: input (400), then the
   * allowance (429), then the lookup (500).
   */
  answer(res: HttpResponse, text: string, start: number, end: number, a: Admission, nowMs: number): void {
    if (!this.parse(text, start, end)) return this.notAddress(res, a.caller);
    this.answerParsed(res, text, start, end, a, nowMs);
  }

  /** 429: the allowance is spent (counted against the caller's key among its refusals). */
  allowanceSpent(res: HttpResponse, caller: Caller | null, refusal: ApiError): void {
    if (caller !== null) caller.limited++;
    sendError(res, refusal, this.metrics);
  }

  /**
   * 400: the input is not an address (counted against the caller's key among its refusals).
   * Given the caller, not the admission: an admission passed on to a call that is not inlined
   * must be made as an object, which cost every lookup 117 instructions (the budget's count).
   */
  notAddress(res: HttpResponse, caller: Caller | null): void {
    if (caller !== null) caller.refused++;
    sendError(res, ERRORS.notAddress, this.metrics);
  }

  /** answer() for text[start, end) that parse() has just accepted. */
  answerParsed(res: HttpResponse, text: string, start: number, end: number, a: Admission, nowMs: number): void {
    const p = this.parsed;
    const granted = this.gate.spend(a, 1, nowMs);
    if (granted === 0) return this.allowanceSpent(res, a.caller, a.refusal);
    if (granted === PENDING) {
      const address = text.slice(start, end);
      return this.waitThen(res, (later) => this.answer(later, address, 0, address.length, a, this.routes.nowMs()));
    }
    const serving = this.holder.current;
    if (serving === null) {
      this.gate.refund(a, 1); // refusals are not counted
      // No build serves yet. With sources configured this is a first start still fetching
      // them: temporary, so a 503 saying when to ask again. Without, the contract's 500.
      return this.awaitingSources ? sendError(res, ERRORS.unavailable, this.metrics, NO_DATA_YET) : sendError(res, ERRORS.lookupFailed, this.metrics);
    }
    const index = serving.index;
    const record = recordOf(index, p);
    const need = answerBytes(index, record, a.tier);
    if (need > this.out.length) {
      this.out = Buffer.allocUnsafeSlow(Math.max(need, this.out.length * 2));
      this.views = viewSlots(this.out.length);
    }
    const n = writeAnswer(this.out, 0, p, index, record, a.tier);
    this.metrics.lookups++;
    this.head.writeOk(res, a, this.gate.used(a), nowMs);
    // The server copies what it cannot send at once, so the buffer is free again on return.
    res.end((this.views[n] ??= this.out.subarray(0, n)));
  }
}

const LOOKUP = { family: 'lookup' } as const;

/** GET /{ip}: one non-empty path segment other than the fixed routes'. */
function isAddressPath(url: string): boolean {
  return url.length > 1 && url.indexOf('/', 1) < 0 && url !== '/myip' && url !== '/batch';
}

/** GET /{ip} and GET /myip, answered inline on this thread. */
export class LookupApi {
  constructor(
    private readonly holder: IndexSource,
    private readonly gate: Gate,
    private readonly head: JsonHead,
    private readonly awaitingSources: boolean,
  ) {}

  register(routes: RouteTable, edge: Edge): void {
    // Locals, not fields, in the handlers: the hot path reads each from its closure.
    const { gate, head } = this;
    const { metrics, client: requestClient } = edge;
    const single = new SingleLookup(this.holder, gate, metrics, head, routes, this.awaitingSources);

    const myip = (res: HttpResponse, key: string | null, client: Client): void => {
      const now = routes.nowMs();
      const a = gate.admit(key, client, now);
      if (a.kind === 'pending') {
        const kept = new KeptClient(client);
        return single.waitThen(res, (later) => myip(later, key, kept));
      }
      if (a.kind === 'refused') return sendRefusal(res, a, metrics, head);
      const text = client.text();
      single.answer(res, text, 0, text.length, a, now);
    };
    routes.get('/myip', (res, req) => myip(res, Gate.keyOf(req), requestClient.of(res, req)), LOOKUP);

    /** GET /{ip} once routed: `parsed` says whether url[1..] is an address as it stands. */
    const byPath = (res: HttpResponse, url: string, parsed: boolean, key: string | null, client: Client): void => {
      const now = routes.nowMs();
      const a = gate.admit(key, client, now);
      if (a.kind === 'pending') {
        const kept = new KeptClient(client);
        return single.waitThen(res, (later) => byPath(later, url, single.parse(url, 1, url.length), key, kept));
      }
      if (a.kind === 'refused') return sendRefusal(res, a, metrics, head);
      if (parsed) return single.answerParsed(res, url, 1, url.length, a, now);
      if (url.indexOf('%') < 0) return single.notAddress(res, a.caller);
      let decoded: string;
      try {
        decoded = decodeURIComponent(url.slice(1));
      } catch {
        return single.notAddress(res, a.caller);
      }
      single.answer(res, decoded, 0, decoded.length, a, now);
    };

    // GET /{ip} is the catch-all GET, so that every other GET path can be told 404 or 405.
    routes.get(
      '/*',
      (res, req) => {
        const url = req.getUrl();
        // An address holds no '/' and no '%': parse first, and route only what does not parse.
        const parsed = single.parse(url, 1, url.length);
        if (!parsed && !isAddressPath(url)) return routes.unrouted(res, url, false);
        byPath(res, url, parsed, Gate.keyOf(req), requestClient.of(res, req));
      },
      { listedAs: '/:ip', ...LOOKUP },
    );
  }
}
