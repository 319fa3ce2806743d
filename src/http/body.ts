// Request bodies, read with bounded memory. A body's buffer grows with what has arrived
// (never from a declared Content-Length beyond a first small chunk), all bodies in reception
// together hold at most a configured number of bytes, and a body must arrive within a
// deadline. A body over its limit whose Content-Length is at most DRAIN_BYTES past it is
// drained (discarded) to its end and then answered 413, so that clients which send the whole
// body before they read see the 413 rather than a reset; a longer one, a chunked one, or one
// that misses the deadline is answered 413 at once and the connection closed.
// (This uWS build forbids touching a response once it has ended, so a 413 cannot be sent
// first and the connection closed later.)

import type { HttpResponse } from './server/types.js';
import type { RouteTable } from './routes.js';
import { RC } from '../wire/errors.js';
import { bodyProblem, MAX_BODY_DEPTH, nestsDeeper, type BodySchema } from '../wire/body-schema.js';
import type { Pending } from './reply.js';

/** What a client may send past the limit before the connection is closed. */
const DRAIN_BYTES = 8 * 1024 * 1024;
/** The first allocation for a body that arrives in several chunks. */
const FIRST_CHUNK = 16 * 1024;

/** A body's states: being read, handed on, being discarded past the limit, given up. */
const READING = 0;
const DONE = 1;
const DRAINING = 2;
const CLOSED = 3;

/**
 * Bytes held by the bodies being received, against one budget for the process: each
 * front-end thread counts its own in a slot of shared memory and takes only while the sum
 * of the slots stays within the budget. A thread that dies leaves its slot to be cleared
 * (clearSlot) rather than holding budget for ever.
 */
export class BodyMemory {
  private readonly counts: BigInt64Array;

  constructor(
    readonly budget: number,
    readonly shared = new SharedArrayBuffer(8),
    private readonly slot = 0,
  ) {
    this.counts = new BigInt64Array(shared);
  }

  /** Slots for `threads` threads. */
  static sharedFor(threads: number): SharedArrayBuffer {
    return new SharedArrayBuffer(8 * threads);
  }

  get held(): number {
    let n = 0n;
    for (let i = 0; i < this.counts.length; i++) n += Atomics.load(this.counts, i);
    return Number(n);
  }

  take(n: number): boolean {
    const big = BigInt(n);
    // Taken first, given back when over: threads racing near the budget may both be refused,
    // but what is held never passes it.
    Atomics.add(this.counts, this.slot, big);
    if (this.held <= this.budget) return true;
    Atomics.sub(this.counts, this.slot, big);
    return false;
  }

  give(n: number): void {
    Atomics.sub(this.counts, this.slot, BigInt(n));
  }

  /** Forgets what a dead thread held. */
  clearSlot(slot: number): void {
    Atomics.store(this.counts, slot, 0n);
  }
}

export interface BodyHandlers {
  /** The whole body (an exact-size buffer this reader no longer uses). */
  done(body: ArrayBuffer): void;
  /** The body passed `limit`: answer 413, closing the connection when `close` (not drained). */
  tooLarge(close: boolean): void;
  /** The memory budget is spent: answer and close the connection (the body is not read). */
  busy(): void;
}

/**
 * Reads the body of `res` (uWS chunks are copied: they are invalid once onData returns).
 * `declared` is the Content-Length, or -1. The caller has registered onAborted, passes its
 * flag, and calls the returned abort() from it; `later` wraps callbacks in the route guard.
 */
export function readBody(
  res: HttpResponse,
  declared: number,
  limit: number,
  memory: BodyMemory,
  timeoutMs: number,
  isAborted: () => boolean,
  later: <A extends unknown[]>(fn: (...args: A) => unknown) => (...args: A) => void,
  h: BodyHandlers,
): { abort(): void } {
  let body: Uint8Array | null = null;
  let length = 0;
  let state = READING;
  let drained = 0;
  const release = (): void => {
    if (body !== null) memory.give(body.byteLength);
    body = null;
  };
  const close = (): void => {
    const draining = state === DRAINING;
    state = CLOSED;
    release();
    if (isAborted()) return;
    if (draining) h.tooLarge(true);
    else res.close();
  };
  if (declared > limit + DRAIN_BYTES) {
    h.tooLarge(true);
    return { abort() {} };
  }
  if (declared > limit) state = DRAINING;
  const timer = setTimeout(
    later(() => {
      if (state === READING || state === DRAINING) close();
    }),
    timeoutMs,
  );
  timer.unref();
  res.onData(
    later((chunk: ArrayBuffer, isLast: boolean) => {
      if (isAborted() || state === DONE || state === CLOSED) {
        if (isAborted()) release();
        return;
      }
      const n = chunk.byteLength;
      if (n === 0 && !isLast) return; // uWS may call with nothing before the body comes
      if (state === READING && length + n > limit) {
        release();
        if (declared < 0) {
          // A chunked body has no known end to drain to: answer and close now.
          state = CLOSED;
          clearTimeout(timer);
          return h.tooLarge(true);
        }
        state = DRAINING;
      }
      if (state === DRAINING) {
        drained += n;
        if (isLast) {
          state = CLOSED;
          clearTimeout(timer);
          h.tooLarge(false);
        } else if (drained > DRAIN_BYTES) {
          clearTimeout(timer);
          close();
        }
        return;
      }
      if (isLast && length === 0) {
        // The whole body in one chunk, the common case: one exact copy.
        state = DONE;
        clearTimeout(timer);
        return h.done(chunk.slice(0));
      }
      if (body === null || length + n > body.byteLength) {
        const cap = Math.min(declared >= 0 ? Math.max(declared, length + n) : limit, Math.max(length + n, FIRST_CHUNK, (body?.byteLength ?? 0) * 2));
        const grown = memory.take(cap) ? new Uint8Array(new ArrayBuffer(cap)) : null;
        if (grown === null) {
          state = CLOSED;
          release();
          clearTimeout(timer);
          return h.busy();
        }
        if (body !== null) grown.set(body.subarray(0, length));
        release();
        body = grown;
      }
      body.set(new Uint8Array(chunk), length);
      length += n;
      if (!isLast) return;
      state = DONE;
      clearTimeout(timer);
      const whole = (body.byteLength === length ? body.buffer : body.buffer.slice(0, length)) as ArrayBuffer;
      release();
      h.done(whole);
    }),
  );
  // The client went away: give the memory back now, not at a next chunk that never comes.
  return {
    abort() {
      state = CLOSED;
      clearTimeout(timer);
      release();
    },
  };
}

/** The largest body of a small JSON request (key creation, a token, the admin API). */
export const MAX_SMALL_BODY = 64 * 1024;

/** A small body's bytes that are not UTF-8 (refused, never stored as U+FFFD). */
export const NOT_UTF8 = Symbol('not UTF-8');
/** A small body as read: its text, null when it is too large, or NOT_UTF8. */
export type SmallBody = string | null | typeof NOT_UTF8;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Reads a small request body; calls back once with the text, null when over the limit, or NOT_UTF8. */
export function readSmallBody(res: HttpResponse, p: Pending, routes: RouteTable, done: (text: SmallBody) => void): void {
  const parts: Buffer[] = [];
  let length = 0;
  let over = false;
  res.onData(
    routes.later(res, RC.INTERNAL, (chunk: ArrayBuffer, isLast: boolean) => {
      if (over || p.aborted) return;
      length += chunk.byteLength;
      if (length > MAX_SMALL_BODY) {
        over = true;
        return done(null);
      }
      parts.push(Buffer.from(chunk.slice(0)));
      if (!isLast) return;
      let text: SmallBody;
      try {
        text = UTF8.decode(Buffer.concat(parts));
      } catch {
        text = NOT_UTF8;
      }
      done(text);
    }),
  );
}

/**
 * A small body's text (readSmallBody) read as JSON and checked against its schema: the value,
 * or why it is refused, the message of a 400. `example` shows what a body looks like (else the
 * message names the schema's fields); with
 * `emptyIsObject`, no body at all is {} (every field optional).
 */
export function parseSmallBody<T>(text: SmallBody, schema: BodySchema, o: { example?: string; emptyIsObject?: boolean }): { value: T } | { refused: string } {
  if (text === null) return { refused: `body too large: at most ${MAX_SMALL_BODY} bytes` };
  if (text === NOT_UTF8) return { refused: 'body is not UTF-8: send JSON text encoded as UTF-8' };
  const fields = Object.keys(schema.properties ?? {});
  const like = o.example !== undefined ? `such as ${o.example}` : fields.length ? `of ${fields.join(', ')}` : 'with no fields';
  const shape = `body must be a JSON object ${like}${o.emptyIsObject ? ', or empty' : ''}`;
  let body: unknown = {};
  try {
    if (!o.emptyIsObject || text.trim() !== '') body = JSON.parse(text);
  } catch {
    return { refused: shape };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { refused: shape };
  // Checked before anything walks it: a value nested 30 000 deep overflows any recursion.
  if (nestsDeeper(body)) return { refused: `body nests deeper than ${MAX_BODY_DEPTH} levels: ${shape}` };
  const problem = bodyProblem(schema, body);
  return problem === null ? { value: body as T } : { refused: problem };
}
