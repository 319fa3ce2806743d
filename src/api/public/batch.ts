// POST /batch: the body streamed in within bounded memory, answered by a Piscina worker over
// the shared index, the allowance taken for exactly what the worker answered.
//
// The boundary's discipline (http/server/types.ts): copy everything from HttpRequest before
// returning; answer synchronously or register onAborted; every late write inside one cork;
// status, then headers, then body; copy onData chunks; res never leaves this thread.

import type { HttpRequest, HttpResponse } from '../../http/server/types.js';
import { ERRORS, lookupBadRequest, statusLine, type ApiError } from '../../wire/errors.js';
import { QueueFullError } from '../../batch/pool.js';
import type { BatchRunner } from '../../batch/runner.js';
import { REFUSE_KEYLESS, REFUSE_PLAN } from '../../batch/protocol.js';
import { Gate, PENDING, type Admission } from '../admission/gate.js';
import { sendRefusal, type JsonHead } from '../admission/json-head.js';
import type { Config } from '../../config.js';
import type { IndexSource } from '../../index/loader.js';
import type { Logger } from '../../log.js';
import { MAX_BATCH_ADDRESSES, answerBatch, decodeOutcome, mentionsAt, parseBatchRequest, type BatchOutcome } from '../../lookup/batch.js';
import { asOfAnswer, parseAt } from '../../history/as-of.js';
import type { TimelineReader } from '../../history/timeline-file.js';
import { TIER_SCALE } from '../../model/projection.js';
import { NOT_ADDRESS, ParsedAddress, parseAddress } from '../../net/address.js';
import { BodyMemory, readBody } from '../../http/body.js';
import type { RequestClient } from '../../http/client.js';
import { late, sendError, type Pending } from '../../http/reply.js';
import type { RouteTable } from '../../http/routes.js';
import type { Metrics } from '../../http/metrics.js';
import { negotiate, writeCoding } from '../../http/content-coding.js';
import { IDENTITY, type Coding } from '../../wire/codings.js';
import type { Edge } from '../admission/edge.js';
import type { LookupShared } from './lookup-shared.js';

/** One batch request as its runs see it. */
interface Batch {
  readonly res: HttpResponse;
  readonly p: Pending;
  readonly a: Admission;
  readonly body: ArrayBuffer;
  readonly coding: Coding;
}

/**
 * POST /batch: admit (key, range, rate), read the body within its bounds, hand it to a
 * worker, answer from the worker's outcome. The worker answers every distinct valid address;
 * the allowance is then taken for exactly those (Meter: from this thread's lease, so no LMDB
 * transaction per batch), before the answer is sent. Nothing is reserved for what a batch
 * will not answer, so nothing is refused early and nothing needs giving back. When the
 * allowance grants fewer, the batch runs again with that budget (only at the limit).
 */
export class BatchApi {
  private readonly memory: BodyMemory;
  private metrics!: Metrics;
  private routes!: RouteTable;
  private requestClient!: RequestClient;

  constructor(
    private readonly config: Config,
    private readonly holder: IndexSource,
    private readonly pool: BatchRunner,
    private readonly gate: Gate,
    private readonly head: JsonHead,
    private readonly log: Logger,
    shared: LookupShared,
    /** The timeline a batch with `at` is answered from (null: none here). */
    private readonly timelines: TimelineReader | null = null,
  ) {
    this.memory = new BodyMemory(config.batchBodyMemoryBytes, shared.bodyMemory, shared.bodyMemorySlot);
  }

  register(routes: RouteTable, edge: Edge): void {
    this.routes = routes;
    this.metrics = edge.metrics;
    this.requestClient = edge.client;
    edge.metrics.bodyMemory = this.memory;
    routes.post('/batch', (res, req) => this.handle(res, req), { family: 'batch' });
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
    // Not deferred: the body must be read from this handler on.
    const a = this.gate.admitNow(Gate.keyOf(req), this.requestClient.of(res, req), this.routes.nowMs());
    // Refused before the body is read: answer and close rather than drain it.
    if (a.kind === 'refused') return sendRefusal(res, a, this.metrics, this.head, true);
    if (this.pool.full) return sendError(res, ERRORS.rateLimited, this.metrics, { headers: [['Retry-After', '1']], close: true });
    open = true;
    this.metrics.inFlight++;
    p.finish = finish;
    const declared = lengthHeader === '' ? -1 : /^\d{1,15}$/.test(lengthHeader) ? Number(lengthHeader) : Infinity;
    const later = <A extends unknown[]>(fn: (...args: A) => unknown) => this.routes.later(res, ERRORS.lookupFailed, fn);
    reader = readBody(res, declared, this.config.maxBatchBodyBytes, this.memory, this.config.bodyTimeoutMs, () => p.aborted, later, {
      done: (body) => {
        const batch: Batch = { res, p, a, body, coding };
        // As of a time: answered here from the timeline, not by a worker over today's index.
        if (this.timelines !== null && mentionsAt(body)) return this.asOf(batch);
        this.lookUp(batch, MAX_BATCH_ADDRESSES, (frame) => this.charge(batch, frame));
      },
      tooLarge: (close) => {
        if (a.caller !== null) a.caller.refused++;
        finish();
        late(res, p, () => sendError(res, ERRORS.bodyTooLarge, this.metrics, { close }));
      },
      busy: () => {
        finish();
        late(res, p, () => sendError(res, ERRORS.rateLimited, this.metrics, { headers: [['Retry-After', '1']], close: true }));
      },
    });
  }

  /**
   * Hands the batch to a worker, answering at most `budget` addresses; `outcome` gets the
   * worker's frame (or, when no worker can answer, every address as a 500). `unanswered`: what
   * to undo when the batch is turned away before a worker sees it.
   */
  private lookUp(batch: Batch, budget: number, outcome: (frame: Uint8Array) => void, unanswered?: () => void): void {
    const { res, p, a, body, coding } = batch;
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
    const respond = this.routes.later(res, ERRORS.lookupFailed, outcome);
    this.pool
      .run(task)
      .then(respond, (e: unknown) => {
        if (e instanceof QueueFullError) {
          unanswered?.();
          p.finish?.();
          return late(res, p, () => sendError(res, ERRORS.rateLimited, this.metrics, { headers: [['Retry-After', '1']] }));
        }
        // Workers keep failing or the deadline passed: the dataset cannot be consulted, so every address is a 500.
        this.log.error('batch not answered by a worker (failures or its deadline); answering every address with 500', {
          reason: e instanceof Error ? e.message : String(e),
        });
        respond(answerBatch(new TextDecoder().decode(body), null, a.tier));
      })
      .finally(() => this.pool.releaseSlot(slot));
  }

  /**
   * A first run's outcome: the addresses it answered are taken from the allowance, then it is
   * sent. While the allowance's lease is being refilled the outcome waits, copied (its slot is
   * given back when this returns); at the limit the batch runs again within what was granted.
   */
  private charge(batch: Batch, frame: Uint8Array): void {
    const { res, p, a } = batch;
    let handedOn = false;
    try {
      const outcome = decodeOutcome(frame);
      if (p.aborted) return;
      if (outcome.answered > 0) {
        const granted = this.gate.spend(a, outcome.answered, this.routes.nowMs(), true);
        if (granted === PENDING) {
          handedOn = true;
          const kept = frame.slice();
          const again = this.routes.later(res, ERRORS.lookupFailed, (f: Uint8Array) => this.charge(batch, f));
          return this.gate.wait(() => again(kept));
        }
        if (granted < outcome.answered) {
          handedOn = true;
          return this.lookUp(
            batch,
            granted,
            (f) => this.sendPaid(batch, granted, f),
            () => this.gate.refund(a, granted, true),
          );
        }
      }
      this.send(batch, outcome);
    } finally {
      // Done, however it ended (an exception is answered by the guard), unless handed on.
      if (!handedOn) p.finish?.();
    }
  }

  /** A run within a budget already taken from the allowance: sent, or the budget given back. */
  private sendPaid(batch: Batch, budget: number, frame: Uint8Array): void {
    try {
      const outcome = decodeOutcome(frame);
      if (batch.p.aborted) return this.gate.refund(batch.a, budget, true);
      this.send(batch, outcome);
    } finally {
      batch.p.finish?.();
    }
  }

  /**
   * A batch with `at`: the shape as any batch's, then the time and who may ask (as GET
   * /{ip}?at=), then the allowance for its distinct addresses, each answered from the
   * timeline; those past what the allowance grants are the plan's refusal, as in any batch.
   */
  private asOf(batch: Batch): void {
    const { res, p, a } = batch;
    const done = (e: ApiError | null, body = '', answered = 0): void => {
      p.finish?.();
      late(res, p, () =>
        e !== null ? sendError(res, e, this.metrics) : this.send(batch, { status: 200, answered, coding: IDENTITY, body: Buffer.from(body) }),
      );
    };
    const text = new TextDecoder().decode(batch.body);
    const body = parseBatchRequest(text, true);
    if (!('ips' in body)) return done(body);
    const { ips, at: raw } = body;
    // "at" was an entry of ips, not a field: a batch as any other.
    if (raw === undefined) return this.lookUp(batch, MAX_BATCH_ADDRESSES, (frame) => this.charge(batch, frame));
    if (typeof raw !== 'string') return done(lookupBadRequest('at must be a string: an RFC 3339 time such as 2026-11-01T12:00:00Z'));
    const now = this.routes.nowMs();
    const at = parseAt(encodeURIComponent(raw), now);
    if ('refused' in at) return done(lookupBadRequest(at.refused));
    if (a.caller === null) return done(ERRORS.keyRequired);
    if (a.tier < TIER_SCALE) return done(ERRORS.historyNotInPlan);
    const serving = this.holder.current;
    const timeline = this.timelines!.get(now);
    if (serving === null || timeline === null) return done(lookupBadRequest('no history is kept here yet: it starts with the first build that serves'));
    // Distinct inputs in order; those that are no address answer 400 and cost nothing.
    const answers = new Map<string, string>();
    const errors: string[] = [];
    const parsed = new ParsedAddress();
    const inputs = [...new Set(ips)];
    const addresses: string[] = [];
    for (const ip of inputs) {
      if (parseAddress(ip, 0, ip.length, parsed) === NOT_ADDRESS) errors.push(`${JSON.stringify(ip)}:${ERRORS.notAddress.entry.toString('latin1')}`);
      else addresses.push(ip);
    }
    for (const ip of addresses) {
      parseAddress(ip, 0, ip.length, parsed);
      const found = asOfAnswer(parsed, timeline, serving.index, a.tier, at.seconds);
      if ('outside' in found) return done(lookupBadRequest(`at is outside the history kept: ${found.outside}`));
      answers.set(ip, found.body.toString('utf8'));
    }
    const granted = addresses.length === 0 ? 0 : this.gate.spend(a, addresses.length, now, true);
    if (granted === PENDING) {
      const again = this.routes.later(res, ERRORS.lookupFailed, () => this.asOf(batch));
      return this.gate.wait(() => again());
    }
    const refusal = a.caller === null ? ERRORS.keylessCap : a.refusal;
    const results: string[] = [];
    addresses.forEach((ip, k) => {
      if (k < granted) results.push(`${JSON.stringify(ip)}:${answers.get(ip)}`);
      else errors.push(`${JSON.stringify(ip)}:${refusal.entry.toString('latin1')}`);
    });
    done(null, `{"results":{${results.join(',')}},"errors":{${errors.join(',')}}}`, results.length);
  }

  private send({ res, a }: Batch, outcome: BatchOutcome): void {
    const { status, coding, body } = outcome;
    if (status === 200) this.metrics.batches++;
    else this.metrics.count(status);
    res.cork(() => {
      if (status === 200) this.head.writeOk(res, a, this.gate.used(a), this.routes.nowMs());
      else this.head.write(res.writeStatus(statusLine(status)), a.rate, a.decision.remaining, a, this.gate.used(a), this.routes.nowMs());
      if (coding !== IDENTITY) writeCoding(res, coding);
      res.end(body);
    });
  }
}
