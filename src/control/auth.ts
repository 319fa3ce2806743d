// Who is asking: the key a request presents, resolved against the control database through
// a per-thread cache. The cache is dropped whenever the database changes (PRAGMA
// data_version, polled every AUTH_POLL_MS), so revocations, rotations and plan changes made
// by any process reach every server within that bound (the first of a process's threads to see
// a change drops every thread's cache); expiry is checked on every request.
// While the database cannot be reached (PostgreSQL), keys already resolved keep working for
// the grace period (CONTROL_GRACE_S), then the cache is dropped; a key not in the cache meets
// the database's failure, answered 503 by the route's error path. On PostgreSQL, lookups of
// keys not in the cache are budgeted per thread (a flood of made-up keys is a flood of round
// trips); past the budget a miss answers 503 too.

import type { ApiError } from '../wire/errors.js';
import { ERRORS } from '../wire/errors.js';
import { networksOf, type Network } from '../net/network.js';
import { effectiveHardLimit, findKeyBySecret, getKey, getOrganisation, planOf, withScopes, type ApiKey, type Organisation, type Scope } from './accounts.js';
import { TOKEN_TAG, isTokenRevoked, mintToken, readToken, tokenSigned, tokenSigningKey } from './tokens.js';
import { dataVersion, type ControlDb } from './control-db.js';
import type { Plan, Plans } from '../model/plans.js';
import { DEFAULTS } from '../config.js';
import { Unavailable } from '../errors.js';
import { every, systemClock, type Clock, type Timer } from '../clock.js';

export const AUTH_POLL_MS = 250;
/** Lookups of uncached keys a thread makes a second on PostgreSQL (a third of a thread at most). */
export const POSTGRES_LOOKUPS_PER_S = 1000;

/** Too many keys not in the cache at once: answered 503 with Retry-After by the route's error path. */
export class KeyLookupsThrottled extends Unavailable {
  constructor() {
    super('KEY_LOOKUPS_THROTTLED', `more than ${POSTGRES_LOOKUPS_PER_S} lookups of uncached keys a second on this thread`);
  }
}

/** Presented keys cached per thread (≤ MAX_KEY_LENGTH characters each: a few MiB at most). */
const MAX_CACHED = 20_000;

/** A valid key with everything a request needs, resolved once per cache lifetime. */
export interface Caller {
  readonly key: ApiKey;
  readonly org: Organisation;
  readonly plan: Plan;
  readonly hardLimit: number | null;
  readonly networks: readonly Network[];
  /** Expiry in ms since the epoch; Infinity for never. */
  readonly expiresMs: number;
  /** Set when the credential is a short-lived token (tokens.ts): its id; `key` then holds the token's scopes. */
  readonly tokenId: string | undefined;
  /**
   * What this thread saw of the caller since its counts were last harvested (KeyCache.harvest):
   * requests presenting it, those refused 429 and those refused with another 4xx; and when it
   * was last used, and from where (noted once a second at most). Plain fields on the object
   * the request already holds: a count costs an add.
   */
  requests: number;
  limited: number;
  refused: number;
  usedAtMs: number;
  usedFrom: string;
}

/** A caller's counts as harvested from a thread's cache: what the key activity log adds up. */
export interface KeyTally {
  keyId: string;
  orgId: string;
  requests: number;
  limited: number;
  refused: number;
  /** The last use seen (0: none since the last harvest) and its source address. */
  usedAtMs: number;
  usedFrom: string;
}

type Resolved = Caller | ApiError;

/** Moves a caller's counts into `out` when it was used since the last harvest, and resets them. */
function takeTally(c: Caller, out: KeyTally[]): void {
  if (c.requests === 0) return;
  out.push({ keyId: c.key.id, orgId: c.org.id, requests: c.requests, limited: c.limited, refused: c.refused, usedAtMs: c.usedAtMs, usedFrom: c.usedFrom });
  c.requests = 0;
  c.limited = 0;
  c.refused = 0;
}

/** JavaScript's \s (what the Bearer pattern allowed around the credential). */
function isSpace(c: number): boolean {
  if (c <= 32) return c === 32 || (c >= 9 && c <= 13);
  if (c < 160) return false;
  return (
    c === 160 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
  );
}

const BEARER = 'bearer';

/**
 * The header bearerToken read last, and what it found: a client sends the same key on every
 * request, so the next header is most often the same text. Comparing it costs a fraction of
 * scanning it, and the credential handed out again is the same string, whose hash the key
 * cache's lookup has already computed (measured: a fifth of a keyed lookup's instructions).
 */
let lastHeader = '';
let lastToken: string | null = null;

/** The credential of `Bearer <token>` (scheme in any case, whitespace around), or null. */
export function bearerToken(header: string): string | null {
  if (header === lastHeader) return lastToken;
  const token = scanBearer(header);
  lastHeader = header;
  lastToken = token;
  return token;
}

function scanBearer(header: string): string | null {
  const n = header.length;
  let i = 0;
  while (i < n && isSpace(header.charCodeAt(i))) i++;
  if (n - i < 7 || !isSpace(header.charCodeAt(i + 6))) return null;
  for (let j = 0; j < 6; j++) if ((header.charCodeAt(i + j) | 0x20) !== BEARER.charCodeAt(j)) return null;
  i += 7;
  while (i < n && isSpace(header.charCodeAt(i))) i++;
  const start = i;
  while (i < n && !isSpace(header.charCodeAt(i))) i++;
  const end = i;
  while (i < n && isSpace(header.charCodeAt(i))) i++;
  return end > start && i === n ? header.slice(start, end) : null;
}

/** A credential no key can match (malformed, undecodable, or too long to be one of ours). */
export const UNUSABLE_KEY = '\u0000invalid';

/** The longest credential looked up; ours are 36 characters. Longer ones are never cached. */
export const MAX_KEY_LENGTH = 128;

/** The key a request presents: '' for none, or null when it presents two different ones. */
export function presentedKey(authorization: string, xApiKey: string, queryKey: string | undefined): string | null {
  let key = '';
  if (authorization !== '') {
    // Anything but a Bearer credential is not a key of ours: it cannot be valid.
    key = bearerToken(authorization) ?? UNUSABLE_KEY;
  }
  if (xApiKey !== '') {
    const k = xApiKey.trim();
    if (k !== '') {
      if (key !== '' && key !== k) return null;
      key = k;
    }
  }
  if (queryKey !== undefined && queryKey !== '') {
    if (key !== '' && key !== queryKey) return null;
    key = queryKey;
  }
  return key;
}

export class KeyCache {
  private readonly cache = new Map<string, Resolved>();
  /** The key-change count this thread's cache is current with. */
  private epochSeen = 0;
  /** Counts of callers dropped from the cache since the last harvest. */
  private dropped: KeyTally[] = [];
  private version: number;
  /** When the change poll last reached the database. */
  private reachedMs: number;
  private readonly poller: Timer;
  /** The key caches of this process's other front-end threads on the same data: told of changes at once. */
  private readonly peers: BroadcastChannel | null;
  /** Lookups of keys not in the cache left (a token bucket of POSTGRES_LOOKUPS_PER_S); null: no limit. */
  private readonly lookupBudget: { left: number; atMs: number } | null;
  /** The data directory's token signing key, read when the first token arrives. */
  private signingKey: Buffer | null = null;

  constructor(
    private readonly db: ControlDb,
    private readonly plans: Plans,
    private readonly dataDir?: string,
    private readonly graceMs = DEFAULTS.controlGraceS * 1000,
    /** Times the polls and the grace period (a test's clock runs a poll when it moves). */
    private readonly clock: Clock = systemClock,
    /**
     * The process's front-end threads' key-change count (null: one front end). A message to
     * the other threads lands when their loop gets to it, after a request that came meanwhile
     * (seen on Bun); the count is read before each request's key.
     */
    private readonly epoch: Int32Array | null = null,
  ) {
    this.version = dataVersion(db);
    this.lookupBudget = db.driver === 'postgres' ? { left: POSTGRES_LOOKUPS_PER_S, atMs: Date.now() } : null;
    this.reachedMs = clock.now();
    this.poller = every(clock, AUTH_POLL_MS, () => this.poll());
    this.peers = dataDir === undefined ? null : new BroadcastChannel(`ipsift-keys:${dataDir}`);
    if (this.peers) {
      this.peers.onmessage = () => this.drop();
      (this.peers as { unref?(): void }).unref?.();
    }
  }

  private poll(): void {
    let v: number;
    try {
      v = dataVersion(this.db);
    } catch {
      // Unreachable: what is cached is served until the grace period ends, nothing after it.
      if (this.clock.now() - this.reachedMs > this.graceMs) this.drop();
      return;
    }
    this.reachedMs = this.clock.now();
    if (v !== this.version) {
      this.version = v;
      // Every thread of the process at once, not each at its own next poll: a thread whose
      // timer runs late (a busy loop) went on serving a revoked key after another refused it.
      this.drop();
      if (this.epoch !== null) this.epochSeen = Atomics.add(this.epoch, 0, 1) + 1;
    }
  }

  /** Presented keys cached on this thread. */
  get size(): number {
    return this.cache.size;
  }

  /** Drops the cache when another thread has changed keys since this one last looked. */
  private catchUp(epoch: Int32Array): void {
    const now = Atomics.load(epoch, 0);
    if (now === this.epochSeen) return;
    this.epochSeen = now;
    this.drop();
  }

  /** Forget everything now, on every thread (this process changed the database itself). */
  invalidate(): void {
    this.drop();
    if (this.epoch !== null) this.epochSeen = Atomics.add(this.epoch, 0, 1) + 1;
    this.peers?.postMessage(0);
  }

  /** The caller for a presented secret, or the 401 it earns. */
  resolve(secret: string, nowMs: number): Resolved {
    // Nothing that long is a key of ours: refused without a lookup and never cached, so the
    // cache holds at most MAX_CACHED entries of at most MAX_KEY_LENGTH characters.
    if (secret.length > MAX_KEY_LENGTH) return ERRORS.keyInvalid;
    if (this.epoch !== null) this.catchUp(this.epoch);
    let r = this.cache.get(secret);
    if (r === undefined) {
      if (this.lookupBudget !== null) this.spendLookup(nowMs);
      r = this.load(secret);
      if (this.cache.size >= MAX_CACHED) this.drop(); // key-guessing floods
      this.cache.set(secret, r);
    }
    if ('key' in r && nowMs >= r.expiresMs) return ERRORS.keyExpired;
    return r;
  }

  /**
   * A database lookup for a key not in the cache, within the thread's budget: on PostgreSQL a
   * miss is a round trip (about 0.3 ms), so a flood of made-up keys could hold a front-end
   * thread; past the budget a miss answers 503 with Retry-After, while cached keys go on.
   */
  private spendLookup(nowMs: number): void {
    const b = this.lookupBudget!;
    b.left = Math.min(POSTGRES_LOOKUPS_PER_S, b.left + ((nowMs - b.atMs) * POSTGRES_LOOKUPS_PER_S) / 1000);
    b.atMs = nowMs;
    if (b.left < 1) throw new KeyLookupsThrottled();
    b.left--;
  }

  private load(secret: string): Resolved {
    if (secret.startsWith(TOKEN_TAG)) return this.loadToken(secret);
    const key = findKeyBySecret(this.db, secret);
    if (!key) return ERRORS.keyInvalid;
    return this.callerOf(key);
  }

  /** One object shape for every caller, key or token, so the hot path stays monomorphic. */
  private callerOf(key: ApiKey, tokenId?: string, tokenExpiresMs = Infinity): Resolved {
    if (key.revokedAt) return ERRORS.keyRevoked;
    const org = getOrganisation(this.db, key.orgId);
    if (!org) return ERRORS.keyInvalid;
    const plan = planOf(this.plans, org);
    return {
      key,
      org,
      plan,
      hardLimit: effectiveHardLimit(org, plan),
      networks: networksOf(key.allowedCidrs),
      expiresMs: Math.min(key.expires ? Date.parse(key.expires) : Infinity, tokenExpiresMs),
      tokenId,
      requests: 0,
      limited: 0,
      refused: 0,
      usedAtMs: 0,
      usedFrom: '',
    };
  }

  /**
   * The counts of every caller used since the last harvest, taken and reset (the front end
   * harvests every few seconds; callers dropped from the cache meanwhile are included).
   */
  harvest(): KeyTally[] {
    const out = this.dropped;
    this.dropped = [];
    for (const r of this.cache.values()) if ('key' in r) takeTally(r, out);
    return out;
  }

  /**
   * Empties the cache, keeping what its callers counted for the next harvest (up to a cache's
   * worth: a thread nobody harvests, or one emptied by a key-guessing flood, stays bounded).
   */
  private drop(): void {
    if (this.dropped.length < MAX_CACHED) for (const r of this.cache.values()) if ('key' in r) takeTally(r, this.dropped);
    this.cache.clear();
  }

  private key(): Buffer | null {
    if (this.dataDir === undefined) return null;
    return (this.signingKey ??= tokenSigningKey(this.dataDir));
  }

  /** A new token for a key (null: this cache has no data directory to sign with). */
  mint(key: ApiKey, scopes: readonly Scope[], expiresMs: number): { token: string; id: string } | null {
    const k = this.key();
    return k === null ? null : mintToken(k, key, scopes, expiresMs);
  }

  /** A token stands for its key, narrowed to the token's scopes and expiry; refused with it. */
  private loadToken(token: string): Resolved {
    const t = readToken(token);
    const signingKey = this.key();
    if (t === null || signingKey === null) return ERRORS.keyInvalid;
    const key = getKey(this.db, t.keyId);
    // Signed under the key's current epoch: a rotated key's tokens are void.
    if (!key || !tokenSigned(signingKey, t, key.tokenEpoch)) return ERRORS.keyInvalid;
    if (isTokenRevoked(this.db, t.id)) return ERRORS.keyRevoked;
    // The key as the token holds it: its scopes narrowed (revokedAt still the key's own).
    return this.callerOf(
      withScopes(
        key,
        key.scopes.filter((s) => t.scopes.includes(s)),
      ),
      t.id,
      t.expiresMs,
    );
  }

  close(): void {
    this.poller.cancel();
    this.peers?.close();
  }
}
