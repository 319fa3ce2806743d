// Bun.serve behind the boundary: Bun's own native server, the default on Bun (where neither
// the uWS addon nor better-sqlite3 loads). Bun hands the app a fetch Request and takes a
// Response (or a promise of one); this adapter turns the routes' writes into that Response:
// a whole body at once, a body in chunks with backpressure (a ReadableStream pulled by Bun),
// or a store file by range (Bun.file, sent by the kernel with its Content-Length).
//
// What Bun decides for itself, and the README states: malformed requests (no Host on
// HTTP/1.1, bare LF, conflicting Content-Length, garbage) get Bun's bodiless 400 (505 for a
// request line it cannot read), heads over its limit 431; dot segments are resolved before
// routing; two headers of one name arrive joined with ", " (two different keys still answer
// 401 `invalid API key`); a streamed body is sent chunked (Bun drops a Content-Length set on
// a stream), so file downloads go through endWithFile, which has one.

import { ERRORS, type ErrorAnswer } from '../../wire/errors.js';
import { arrayBufferOf, textOf } from './bytes.js';
import { peerBytes } from './peer.js';
import { Router, lowerMethod } from './router.js';
import { TextResponse } from './text-response.js';
import type { Bytes, HttpRequest, HttpResponse, HttpServer, Listener, ServerOptions } from './types.js';

/** The parts of Bun's API used here (the project does not depend on Bun's type package). */
interface BunServer {
  readonly port: number;
  readonly pendingRequests: number;
  requestIP(req: Request): { address: string } | null;
  stop(closeActiveConnections?: boolean): Promise<void> | void;
}
interface BunFile extends Blob {
  slice(start: number, end: number): Blob;
}
interface BunRuntime {
  serve(options: {
    hostname: string;
    port: number;
    reusePort?: boolean;
    development: boolean;
    idleTimeout: number;
    maxRequestBodySize: number;
    fetch(req: Request, server: BunServer): Response | Promise<Response>;
    error(e: Error): Response;
  }): BunServer;
  file(path: string): BunFile;
}

/** Bun's runtime object, or null on Node. */
export function bunRuntime(): BunRuntime | null {
  return ((globalThis as { Bun?: BunRuntime }).Bun ?? null) as BunRuntime | null;
}

const NO_BYTES = new ArrayBuffer(0);
const NO_PARAMS: readonly string[] = [];
/** Bun's longest idle timeout, in seconds. */
const MAX_IDLE_S = 255;
/** Bodies are bounded by http/body.ts (with its drain past the limit), not by Bun. */
const MAX_BODY_BYTES = 2 ** 31;
/** How much of a chunked body waits for the socket before tryEnd reports backpressure. */
const STREAM_HIGH_WATER = 256 * 1024;

/** A copy of what a caller hands over (the caller may reuse its buffer once the call returns). */
function copyOf(b: Bytes): string | Uint8Array<ArrayBuffer> {
  if (typeof b === 'string') return b;
  return b instanceof ArrayBuffer ? new Uint8Array(b.slice(0)) : (b.slice() as Uint8Array<ArrayBuffer>);
}

/**
 * Response headers from the head's alternating list: a record, which Bun takes in about two
 * thirds of the time of a list of pairs (measured with seven headers); pairs only where a name
 * comes twice, which a record cannot hold.
 */
function headersOf(fields: readonly string[]): Record<string, string> | [string, string][] {
  const record: Record<string, string> = {};
  for (let i = 0; i < fields.length; i += 2) {
    if (record[fields[i]] !== undefined) return pairsOf(fields);
    record[fields[i]] = fields[i + 1];
  }
  return record;
}

function pairsOf(fields: readonly string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i < fields.length; i += 2) pairs.push([fields[i], fields[i + 1]]);
  return pairs;
}

/**
 * One exchange: the handler gets it as both its response and its request (the two interfaces
 * share no member), one object per request fewer for JavaScriptCore to make and collect.
 */
class BunExchange extends TextResponse implements HttpResponse, HttpRequest {
  /** The answer given while the handler ran; later answers resolve the promise given to Bun. */
  private answered: Response | null = null;
  private resolve: ((r: Response) => void) | null = null;
  private stream: ReadableStreamDefaultController<Uint8Array> | null = null;
  private reader: ReadableStreamDefaultReader<Uint8Array> | null = null;

  constructor(
    private readonly req: Request,
    private readonly server: BunServer,
    private readonly bun: BunRuntime,
    private readonly path: string,
    private readonly query: string | undefined,
    private readonly params: readonly string[],
  ) {
    super();
  }

  // The request's side.

  getHeader(lowerCaseName: Bytes): string {
    return this.req.headers.get(textOf(lowerCaseName)) ?? '';
  }

  get joinsRepeatedHeaders(): boolean {
    return true;
  }

  forEach(cb: (name: string, value: string) => void): void {
    this.req.headers.forEach((value, name) => {
      cb(name, value);
    });
  }

  getUrl(): string {
    return this.path;
  }

  getQuery(): string | undefined {
    return this.query;
  }

  getMethod(): string {
    return lowerMethod(this.req.method);
  }

  getParameter(index: number): string | undefined {
    return this.params[index];
  }

  // The response's side.

  /** What fetch returns once the handler has run. */
  settle(): Response | Promise<Response> {
    if (this.answered !== null) return this.answered;
    return new Promise((resolve) => (this.resolve = resolve));
  }

  private answer(body: BodyInit | null, close = false): void {
    const h = this.head;
    if (close) h.fields.push('Connection', 'close');
    const headers = headersOf(h.fields);
    const r = h.status === 200 && h.reason === 'OK' ? new Response(body, { headers }) : new Response(body, { status: h.status, statusText: h.reason, headers });
    const resolve = this.resolve;
    this.resolve = null;
    if (resolve !== null) resolve(r);
    else this.answered = r;
  }

  end(body?: Bytes, closeConnection?: boolean): this {
    if (this.done) return this;
    this.done = true;
    this.answer(body === undefined ? '' : copyOf(body), closeConnection);
    return this;
  }

  endWithoutBody(): this {
    if (this.done) return this;
    this.done = true;
    this.answer(null);
    return this;
  }

  /** Sends bytes [start, start + length) of a file, with its Content-Length, from the kernel. */
  endWithFile(file: string, start: number, length: number): this {
    if (this.done) return this;
    this.done = true;
    this.answer(this.bun.file(file).slice(start, start + length));
    return this;
  }

  tryEnd(chunk: Uint8Array, totalSize: number): [boolean, boolean] {
    if (this.done) return [false, true];
    if (this.stream === null) {
      const body = new ReadableStream<Uint8Array>(
        {
          start: (c) => void (this.stream = c),
          pull: () => this.fireWritable(),
        },
        { highWaterMark: STREAM_HIGH_WATER, size: (c) => c.byteLength },
      );
      this.answer(body);
    }
    const s = this.stream!;
    s.enqueue(chunk.slice());
    this.offset += chunk.byteLength;
    if (this.offset < totalSize) return [(s.desiredSize ?? 0) > 0, false];
    this.done = true;
    s.close();
    return [true, true];
  }

  onWritable(handler: (offset: number) => boolean): this {
    this.waitWritable(handler);
    if ((this.stream?.desiredSize ?? 0) > 0) setImmediate(() => this.fireWritable());
    return this;
  }

  onAborted(handler: () => void): this {
    if (this.aborted === null) this.req.signal.addEventListener('abort', () => this.goneNow(), { once: true });
    this.aborted = handler;
    return this;
  }

  private goneNow(): void {
    void this.reader?.cancel().catch(() => {});
    this.gone();
  }

  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): this {
    const body = this.req.body;
    if (body === null) {
      queueMicrotask(() => handler(NO_BYTES, true));
      return this;
    }
    const reader = (this.reader = body.getReader());
    const next = (): void => {
      reader.read().then(
        (r) => {
          if (r.done) return handler(NO_BYTES, true);
          handler(arrayBufferOf(r.value), false);
          next();
        },
        () => {}, // the client went: onAborted tells the route
      );
    };
    next();
    return this;
  }

  close(): this {
    void this.reader?.cancel().catch(() => {});
    // An errored body makes Bun drop the connection without finishing the answer.
    const cut = new Error('answer cut');
    if (this.stream !== null) this.stream.error(cut);
    else if (!this.done) this.answer(new ReadableStream({ start: (c) => c.error(cut) }));
    this.done = true;
    return this;
  }

  getRemoteAddress(): ArrayBuffer {
    return peerBytes(this.server.requestIP(this.req)?.address);
  }
}

/** A plain answer from the catalogue, outside any route. */
function catalogueAnswer(e: ErrorAnswer): Response {
  const [status, ...reason] = e.statusLine.split(' ');
  return new Response(new Uint8Array(e.body), { status: Number(status), statusText: reason.join(' '), headers: [['Content-Type', 'application/json']] });
}

class BunApp extends Router {
  private readonly params: string[] = [];

  dispatch(req: Request, server: BunServer, bun: BunRuntime): Response | Promise<Response> {
    // Bun gives the absolute URL (origin-form targets too; only HTTP/1.0 without Host stays relative).
    const url = req.url;
    let from = 0;
    if (url.charCodeAt(0) !== 47) {
      from = url.indexOf('/', url.indexOf('//') + 2);
      if (from < 0) return catalogueAnswer(ERRORS.notFound);
    }
    const q = url.indexOf('?', from);
    const path = q < 0 ? url.slice(from) : url.slice(from, q);
    const handler = this.find(req.method, path, this.params);
    if (handler === null) return catalogueAnswer(ERRORS.notFound);
    const params = this.params.length === 0 ? NO_PARAMS : this.params.slice();
    const exchange = new BunExchange(req, server, bun, path, q < 0 ? undefined : url.slice(q + 1), params);
    handler(exchange, exchange);
    return exchange.settle();
  }
}

export function bunServer(bun: BunRuntime, o: ServerOptions): HttpServer {
  return {
    kind: 'bun',
    app: () => new BunApp(),
    cannotSharePort: null,
    listen: async (app, host, port, shared = false) => {
      let server: BunServer;
      try {
        server = bun.serve({
          hostname: host,
          port,
          reusePort: shared,
          development: false, // never Bun's HTML error page, which shows source
          idleTimeout: Math.min(MAX_IDLE_S, Math.ceil(o.keepAliveTimeoutMs / 1000)),
          maxRequestBodySize: MAX_BODY_BYTES,
          fetch: (req, s) => (app as BunApp).dispatch(req, s, bun),
          // Routes answer their own failures (routes.ts); this is for a fault in the adapter.
          error: () => catalogueAnswer(ERRORS.lookupFailed),
        });
      } catch (e) {
        throw new Error(`cannot listen on ${host}:${port}: ${e instanceof Error ? e.message : String(e)}`);
      }
      return {
        port: server.port,
        stop: () => void server.stop(false),
        close: () => void server.stop(true),
        unsent: () => server.pendingRequests,
      } satisfies Listener;
    },
  };
}
