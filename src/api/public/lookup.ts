// The lookup front end: GET /{ip} and GET /myip answered inline on this thread from the
// shared index (POST /batch: batch.ts), and the public app those and the other APIs share.
//
// The boundary's discipline (server/types.ts, STYLE.md): copy everything from HttpRequest
// before returning; answer synchronously or register onAborted; every late write inside one
// cork; status, then headers, then body; copy onData chunks; res never leaves this thread.

import type { HttpResponse } from '../../http/server/types.js';
import { ERRORS, lookupBadRequest, type ApiError } from '../../wire/errors.js';
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
import { lastQueryAt } from '../admission/credentials.js';
import { asOfAnswer, parseAt } from '../../history/as-of.js';
import type { TimelineReader } from '../../history/timeline-file.js';
import { TIER_SCALE } from '../../model/projection.js';

/** The lowest tier whose plans keep history (decisions.md): scale, and max above it. */
const HISTORY_TIER = TIER_SCALE;

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
    /** The timeline `at` lookups read (null: none kept here). */
    private readonly timelines: TimelineReader | null,
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

  /**
   * GET /{ip}?at=… and /myip?at=…: the answer the service gave at that time (history/), for a
   * key whose plan keeps history. Input first (the address, then the time), then who may ask,
   * then how far the timeline reaches, then the allowance: a refusal spends nothing.
   */
  answerAsOf(res: HttpResponse, text: string, start: number, end: number, a: Admission, nowMs: number, rawAt: string | null): void {
    if (!this.parse(text, start, end)) return this.notAddress(res, a.caller);
    const at = rawAt === null ? { refused: 'at was given twice with different values: give one' } : parseAt(rawAt, nowMs);
    if ('refused' in at) return sendError(res, lookupBadRequest(at.refused), this.metrics);
    if (a.caller === null) return sendError(res, ERRORS.keyRequired, this.metrics);
    if (a.tier < HISTORY_TIER) return sendError(res, ERRORS.historyNotInPlan, this.metrics);
    const serving = this.holder.current;
    const timeline = this.timelines?.get(nowMs) ?? null;
    if (serving === null || timeline === null)
      return sendError(res, lookupBadRequest('no history is kept here yet: it starts with the first build that serves'), this.metrics);
    const found = asOfAnswer(this.parsed, timeline, serving.index, a.tier, at.seconds);
    if ('outside' in found) return sendError(res, lookupBadRequest(`at is outside the history kept: ${found.outside}`), this.metrics);
    const granted = this.gate.spend(a, 1, nowMs);
    if (granted === 0) return this.allowanceSpent(res, a.caller, a.refusal);
    if (granted === PENDING) {
      const address = text.slice(start, end);
      return this.waitThen(res, (later) => this.answerAsOf(later, address, 0, address.length, a, this.routes.nowMs(), rawAt));
    }
    this.metrics.lookups++;
    this.head.writeOk(res, a, this.gate.used(a), nowMs);
    res.end(found.body);
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
    private readonly timelines: TimelineReader | null = null,
  ) {}

  register(routes: RouteTable, edge: Edge): void {
    // Locals, not fields, in the handlers: the hot path reads each from its closure.
    const { gate, head } = this;
    const { metrics, client: requestClient } = edge;
    const single = new SingleLookup(this.holder, gate, metrics, head, routes, this.awaitingSources, this.timelines);

    const myip = (res: HttpResponse, key: string | null, client: Client, at: string | null | undefined): void => {
      const now = routes.nowMs();
      const a = gate.admit(key, client, now);
      if (a.kind === 'pending') {
        const kept = new KeptClient(client);
        return single.waitThen(res, (later) => myip(later, key, kept, at));
      }
      if (a.kind === 'refused') return sendRefusal(res, a, metrics, head);
      const text = client.text();
      if (at !== undefined) return single.answerAsOf(res, text, 0, text.length, a, now, at);
      single.answer(res, text, 0, text.length, a, now);
    };
    routes.get('/myip', (res, req) => myip(res, Gate.keyOf(req), requestClient.of(res, req), lastQueryAt()), LOOKUP);

    /** GET /{ip}?at=…: admitted as any lookup, then answered from the timeline. */
    const byPathAsOf = (res: HttpResponse, url: string, key: string | null, client: Client, at: string | null): void => {
      const now = routes.nowMs();
      const a = gate.admit(key, client, now);
      if (a.kind === 'pending') {
        const kept = new KeptClient(client);
        return single.waitThen(res, (later) => byPathAsOf(later, url, key, kept, at));
      }
      if (a.kind === 'refused') return sendRefusal(res, a, metrics, head);
      let decoded = url.slice(1);
      if (url.indexOf('%') >= 0) {
        try {
          decoded = decodeURIComponent(decoded);
        } catch {
          return single.notAddress(res, a.caller);
        }
      }
      single.answerAsOf(res, decoded, 0, decoded.length, a, now, at);
    };

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
        const key = Gate.keyOf(req);
        // Noted while the key's query was read: a lookup without `at` pays this comparison only.
        const at = lastQueryAt();
        if (at !== undefined) return byPathAsOf(res, url, key, requestClient.of(res, req), at);
        byPath(res, url, parsed, key, requestClient.of(res, req));
      },
      { listedAs: '/:ip', ...LOOKUP },
    );
  }
}
