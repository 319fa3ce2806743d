// The admission of a lookup request, in DESIGN.md §4's order: key (401) → allowed source
// ranges (403) → rate (429 + Retry-After); then, once the input is known to be valid, the
// allowance (429, no Retry-After). json-head.ts writes the quota headers from its admission.
//
// On a store across a network (Redis), admit() and spend() may answer that the request must
// wait for a lease being refilled (an admission of kind 'pending', PENDING): the route
// registers with wait() and handles the request again when it wakes, and its thread serves
// others meanwhile.

import type { HttpRequest } from '../../http/server/types.js';
import { ERRORS, type ApiError } from '../../wire/errors.js';
import type { KeyCache, Caller } from '../../control/auth.js';
import { presentedKeyOf } from './credentials.js';
import type { Plans, Rate } from '../../model/plans.js';
import { type Meter, PENDING, PENDING_TOKENS, leaseExtra, type RateDecision, type Wake } from '../../accounting/meter.js';
import type { EdgeCounts } from '../../accounting/edge-counts.js';
export { PENDING } from '../../accounting/meter.js';
import { WindowClock, keyBucket, orgCounter, sourceBucket, sourceCounter, type Window } from '../../accounting/windows.js';
import { NOT_ADDRESS, ParsedAddress, parseAddress } from '../../net/address.js';
import { inNetworks } from '../../net/network.js';
import type { Client } from '../../http/client.js';

export interface Admission {
  readonly kind: 'admitted';
  readonly caller: Caller | null;
  readonly tier: number;
  /**
   * The rate limit the request was admitted under. null: nothing is counted (keyless lookups
   * when Plans.keyless is null), and the other accounting fields are unused.
   */
  readonly rate: Rate | null;
  readonly decision: RateDecision;
  /** Allowance counter, its limit (null: none), lease extra and the per-entry refusal. */
  readonly counter: string;
  readonly limit: number | null;
  readonly quota: number;
  readonly extra: number;
  readonly window: Window;
  readonly refusal: ApiError;
  /** A keyless source counted at the edge (a store across a network: edge-counts.ts). */
  readonly atEdge: boolean;
}

/** A request the gate turns away: 401, 403, or 429 with Retry-After. */
export interface Refusal {
  readonly kind: 'refused';
  readonly error: ApiError;
  readonly retryAfter?: number;
  readonly decision?: RateDecision;
  readonly rate?: Rate;
}

/** admit()'s answer while the caller's token lease is being refilled: wait(), then admit again. */
export interface PendingAdmission {
  readonly kind: 'pending';
}

export type GateResult = Admission | Refusal | PendingAdmission;

const PENDING_ADMISSION: PendingAdmission = Object.freeze({ kind: 'pending' });

/**
 * One accounting identity (a key, or a keyless source address) with its LMDB names made
 * once: the same string objects each time keep map lookups to a cached hash.
 */
interface Party {
  readonly bucket: string;
  /** Names the allowance counter of a window (made once per window, see admit). */
  readonly counterOf: (w: Window) => string;
  windowId: string;
  counter: string;
}

const MAX_SOURCES = 100_000;
/** How often a key's last use (time and source) is noted on a thread: a second is close enough to read. */
const USE_NOTED_EVERY_MS = 1000;

/** A key's last use: out of the request path's way, once a second a key and thread. */
function noteUse(c: Caller, client: Client, nowMs: number): void {
  c.usedAtMs = nowMs;
  c.usedFrom = client.text();
}

/** 403 for a source outside the key's ranges, counted among the key's refusals. */
function outsideRanges(c: Caller): ApiError {
  c.refused++;
  c.requests++;
  return ERRORS.sourceNotAllowed;
}

/** The admission of every keyless request when keyless lookups are not limited. */
function unlimitedAdmission(tier: number): Admission {
  return Object.freeze({
    kind: 'admitted',
    caller: null,
    tier,
    rate: null,
    decision: Object.freeze({ ok: true, retryAfter: 0, remaining: 0 }),
    counter: '',
    limit: null,
    quota: 0,
    extra: 0,
    window: Object.freeze({ id: '', startMs: 0, endMs: 0 }),
    refusal: ERRORS.keylessCap,
    atEdge: false,
  });
}

export class Gate {
  private readonly windows = new WindowClock();
  private readonly unlimited: Admission;
  private readonly parsed = new ParsedAddress();
  private readonly sources = new Map<number | string, Party>();
  private readonly keyParties = new WeakMap<Caller, Party>();
  private readonly edge: EdgeCounts | null;
  /** Whether the last PENDING came from the edge counts (else from the meter). */
  private pendingAtEdge = false;

  constructor(
    private readonly keys: KeyCache,
    private readonly meter: Meter,
    private readonly plans: Plans,
    private readonly keylessTier: number,
  ) {
    this.unlimited = unlimitedAdmission(keylessTier);
    this.edge = meter.edge;
  }

  /** The key the request presents (null: two different ones). Read before any await. */
  static keyOf(req: HttpRequest): string | null {
    return presentedKeyOf(req);
  }

  /** Key and source range only (the account endpoints). */
  caller(secret: string | null, client: Client, nowMs: number): Caller | ApiError | null {
    const c = this.key(secret, nowMs);
    if (c === null || !('key' in c)) return c;
    return this.fromAllowedSource(c, client) ? c : outsideRanges(c);
  }

  /** The key alone, its source ranges unchecked (null: none presented). */
  key(secret: string | null, nowMs: number): Caller | ApiError | null {
    if (secret === null) return ERRORS.keyInvalid;
    if (secret === '') return null;
    return this.keys.resolve(secret, nowMs);
  }

  /** Whether the client is inside the key's source ranges (none: any source). */
  fromAllowedSource(c: Caller, client: Client): boolean {
    if (c.networks.length === 0) return true;
    const text = client.text();
    const kind = parseAddress(text, 0, text.length, this.parsed);
    return kind !== NOT_ADDRESS && inNetworks(this.parsed, kind, c.networks);
  }

  /** The request's admission; 'pending' while its token lease is being refilled (then wait()). */
  admit(secret: string | null, client: Client, nowMs: number): GateResult {
    return this.admitting(secret, client, nowMs, true);
  }

  /**
   * admit() for a request that cannot wait (a batch, whose body is read from its handler on):
   * its token comes from the thread's own bucket while the lease is being refilled.
   */
  admitNow(secret: string | null, client: Client, nowMs: number): Admission | Refusal {
    const r = this.admitting(secret, client, nowMs, false);
    if (r.kind === 'pending') throw new Error('a token taken without deferring answered pending');
    return r;
  }

  private admitting(secret: string | null, client: Client, nowMs: number, defer: boolean): GateResult {
    const c = this.caller(secret, client, nowMs);
    if (c !== null && !('key' in c)) return { kind: 'refused', error: c };
    const keyless = this.plans.keyless;
    if (c === null && keyless === null) return this.unlimited;
    const rate = c === null ? keyless!.rate : c.plan.rate;
    const party = c === null ? this.sourceParty(client) : this.keyParty(c);
    const atEdge = c === null && this.edge !== null;
    const decision = atEdge ? this.edge!.take(party.bucket, rate, nowMs) : this.meter.take(party.bucket, rate, nowMs, defer);
    if (decision === PENDING_TOKENS) {
      // Admitted again once the lease is refilled: counted then, once.
      this.pendingAtEdge = false;
      return PENDING_ADMISSION;
    }
    if (c !== null) {
      c.requests++;
      if (nowMs - c.usedAtMs >= USE_NOTED_EVERY_MS) noteUse(c, client, nowMs);
    }
    if (!decision.ok) {
      if (c !== null) c.limited++;
      return { kind: 'refused', error: ERRORS.rateLimited, retryAfter: decision.retryAfter, decision, rate };
    }
    // Keyless callers have a daily cap per source; keys, their organisation's monthly allowance.
    const window = c === null ? this.windows.day(nowMs) : this.windows.month(nowMs);
    if (party.windowId !== window.id) {
      party.windowId = window.id;
      party.counter = party.counterOf(window);
    }
    return {
      kind: 'admitted',
      caller: c,
      tier: c === null ? this.keylessTier : c.plan.fieldTier,
      rate,
      decision,
      counter: party.counter,
      limit: c === null ? keyless!.dailyCap : c.hardLimit,
      quota: c === null ? keyless!.dailyCap : c.plan.quota,
      extra: leaseExtra(rate),
      window,
      refusal: c === null ? ERRORS.keylessCap : ERRORS.allowanceSpent,
      atEdge,
    };
  }

  private sourceParty(client: Client): Party {
    const id = client.id();
    let party = this.sources.get(id);
    if (party === undefined) {
      if (this.sources.size >= MAX_SOURCES) this.sources.clear();
      const src = typeof id === 'number' ? client.text() : id;
      party = { bucket: sourceBucket(src), counterOf: (w) => sourceCounter(src, w), windowId: '', counter: '' };
      this.sources.set(id, party);
    }
    return party;
  }

  /** The key's accounting identity. */
  private keyParty(c: Caller): Party {
    let party = this.keyParties.get(c);
    if (party === undefined) {
      const org = c.org.id;
      party = { bucket: keyBucket(c.key.id), counterOf: (w) => orgCounter(org, w), windowId: '', counter: '' };
      this.keyParties.set(c, party);
    }
    return party;
  }

  /**
   * A token from another rate of the caller's (its organisation's key-list pages): the same
   * buckets as lookups' rates, shared by every thread and node through the accounting store.
   */
  take(bucket: string, rate: Rate, nowMs: number): RateDecision {
    return this.meter.take(bucket, rate, nowMs, false);
  }

  /** Registers a request whose admission is pending, or that got PENDING: `wake` runs when it may ask again. */
  wait(wake: Wake): void {
    if (this.pendingAtEdge) this.edge!.wait(wake);
    else this.meter.wait(wake);
  }

  /**
   * Spends up to `units` lookups of the admission's allowance; returns those granted, or
   * PENDING (then wait()). `bulk`: a batch's.
   */
  spend(a: Admission, units: number, nowMs: number, bulk = false): number {
    if (a.rate === null) return units;
    // A batch's units go through a lease even for a keyless source: a share at the edge is
    // a few lookups, and a batch answered from memory could pass the daily cap by its size.
    const atEdge = a.atEdge && !bulk;
    const granted = atEdge ? this.edge!.spend(a.counter, units, a.limit!, nowMs) : this.meter.spend(a.counter, units, a.extra, a.limit, nowMs);
    if (granted === PENDING) this.pendingAtEdge = atEdge;
    return granted;
  }

  /** Gives back units spent and not used; `bulk` as they were spent. */
  refund(a: Admission, units: number, bulk = false): void {
    if (a.rate === null) return;
    if (a.atEdge && !bulk) this.edge!.refund(a.counter, units);
    else this.meter.refund(a.counter, units);
  }

  /** Estimated lookups used in the admission's window, for X-Allowance-Used. */
  used(a: Admission): number {
    if (a.rate === null) return 0;
    return a.atEdge ? Math.max(this.edge!.used(a.counter), this.meter.used(a.counter)) : this.meter.used(a.counter);
  }

  /** Units used in the caller's current month (exact but for other threads' unused leases). */
  monthUsage(c: Caller, nowMs: number): { used: number; window: Window } {
    const window = this.windows.month(nowMs);
    return { used: this.meter.usage(orgCounter(c.org.id, window)), window };
  }
}
