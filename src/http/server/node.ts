// node:http behind the boundary: the server for runtimes where the uWS binary cannot load
// (Node 22/24), and for setups uWS cannot serve (HTTP/1.0 clients and proxies, keep-alive
// idle timeouts longer than uWS's fixed 10 s). Slower than uWS, correct on every point:
// HTTP/1.0 answered, malformed requests (no Host, bare LF, obs-fold, conflicting
// Content-Length) refused at once with 400 by Node's strict parser.

import http from 'node:http';
import type { Duplex } from 'node:stream';
import { ERRORS, type ErrorAnswer } from '../../wire/errors.js';
import { arrayBufferOf, textOf } from './bytes.js';
import { peerBytes } from './peer.js';
import { Router, lowerMethod } from './router.js';
import { TextResponse } from './text-response.js';
import type { Bytes, HttpRequest, HttpResponse, HttpServer, Listener, ServerOptions } from './types.js';

/** A request's head must arrive within this long (slow-header clients). */
const HEADERS_TIMEOUT_MS = 20_000;
const EMPTY = Buffer.alloc(0);
/** The most of a body chunk one tryEnd hands node (see tryEnd). */
const MAX_TAKE = 64 * 1024;
const NO_BYTES = new ArrayBuffer(0);
const NO_PARAMS: readonly string[] = [];

class NodeRequest implements HttpRequest {
  constructor(
    private readonly req: http.IncomingMessage,
    private readonly path: string,
    private readonly query: string | undefined,
    private readonly params: readonly string[],
  ) {}

  getHeader(lowerCaseName: Bytes): string {
    return rawHeader(this.req, textOf(lowerCaseName)) ?? '';
  }

  forEach(cb: (name: string, value: string) => void): void {
    const raw = this.req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) cb(raw[i].toLowerCase(), raw[i + 1]);
  }

  getUrl(): string {
    return this.path;
  }

  getQuery(): string | undefined {
    return this.query;
  }

  getMethod(): string {
    return lowerMethod(this.req.method ?? '');
  }

  getParameter(index: number): string | undefined {
    return this.params[index];
  }
}

/** A copy of what a caller hands over (the caller may reuse its buffer once the call returns). */
function copyOf(b: Bytes): Buffer {
  if (typeof b === 'string') return Buffer.from(b, 'utf8');
  return Buffer.from(b instanceof ArrayBuffer ? new Uint8Array(b) : b);
}

/**
 * A connection's responses: how many are not finished, and whether the last one closes it. A
 * parse error on bytes after a request (a client that sent a body without framing, or
 * garbage pipelined behind a good request) is answered 400 only when nothing is being
 * answered and the connection is not closing; otherwise the connection just ends after what
 * is being sent, so that no answer is ever written into or after another.
 */
interface Connection {
  open: number;
  closing: boolean;
  /** The request read last: a parse error while its body is incomplete means it can never finish. */
  last: http.IncomingMessage | null;
  /** Set by a parse error while a response was open: end the connection once it is done. */
  endWhenDone: boolean;
  /** The response to `last`: refused with a 400 when its body turns out malformed. */
  response: NodeResponse | null;
}
/** Kept on the socket itself: a property read is cheaper per request than a WeakMap. */
const CONNECTION = Symbol('ipsift.connection');
type Socket = Duplex & { [CONNECTION]?: Connection };

function connectionOf(socket: Socket): Connection {
  let c = socket[CONNECTION];
  if (c === undefined) socket[CONNECTION] = c = { open: 0, closing: false, last: null, endWhenDone: false, response: null };
  return c;
}

/** A header's first value from the raw list (reading req.headers would build an object per request). */
function rawHeader(req: http.IncomingMessage, lowerCaseName: string): string | undefined {
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i].length === lowerCaseName.length && raw[i].toLowerCase() === lowerCaseName) return raw[i + 1];
  return undefined;
}

class NodeResponse extends TextResponse implements HttpResponse {
  private started = false;
  private drainHooked = false;
  private readonly connection: Connection;

  constructor(
    private readonly req: http.IncomingMessage,
    private readonly res: http.ServerResponse,
    private readonly unsent: { count: number },
  ) {
    super();
    // Counted until node has handed the whole response to the kernel, or it ends cut: 'close'
    // follows 'finish' in both cases.
    unsent.count++;
    const connection = (this.connection = connectionOf(req.socket));
    connection.open++;
    connection.last = req;
    connection.response = this;
    // node's parser decided from the version and Connection header whether this one closes.
    if (!res.shouldKeepAlive) connection.closing = true;
    res.on('close', this.closed); // emitted once; `on` spares the wrapper `once` makes per response
  }

  private readonly closed = (): void => {
    this.unsent.count--;
    if (--this.connection.open === 0 && this.connection.endWhenDone) this.req.socket.end();
    this.gone();
  };

  private start(length: number | null, close = false): void {
    const h = this.head;
    if (close) {
      h.fields.push('Connection', 'close');
      this.connection.closing = true;
    }
    if (length !== null && !h.has('content-length')) h.fields.push('Content-Length', String(length));
    this.res.writeHead(h.status, h.reason, h.fields);
    this.started = true;
  }

  end(body?: Bytes, closeConnection?: boolean): this {
    if (this.done) return this;
    const data = body === undefined ? EMPTY : copyOf(body);
    this.done = true;
    this.start(data.length, closeConnection);
    this.res.end(data);
    return this;
  }

  endWithoutBody(): this {
    if (this.done) return this;
    this.done = true;
    this.start(null);
    this.res.end();
    return this;
  }

  tryEnd(chunk: Uint8Array, totalSize: number): [boolean, boolean] {
    if (this.done) return [false, true];
    if (!this.started) this.start(totalSize);
    // Node keeps what the socket cannot take yet: take at most MAX_TAKE per call, so that a
    // reader who stops reading holds that much here, not a whole chunk (uWS keeps nothing).
    const part = chunk.byteLength > MAX_TAKE ? chunk.subarray(0, MAX_TAKE) : chunk;
    const taken = this.res.write(copyOf(part)) && part === chunk;
    this.offset += part.byteLength;
    if (this.offset < totalSize) return [taken, false];
    this.done = true;
    this.res.end();
    return [true, true];
  }

  onWritable(handler: (offset: number) => boolean): this {
    this.waitWritable(handler);
    if (!this.drainHooked) {
      this.drainHooked = true;
      this.res.on('drain', () => this.fireWritable());
    }
    // Nothing waits in node's buffer (a partial take the socket swallowed): no 'drain' will come.
    if (!this.res.writableNeedDrain) setImmediate(() => this.fireWritable());
    return this;
  }

  onAborted(handler: () => void): this {
    this.aborted = handler;
    return this;
  }

  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): this {
    this.req.on('data', (b: Buffer) => handler(arrayBufferOf(b), false));
    this.req.once('end', () => handler(NO_BYTES, true));
    return this;
  }

  close(): this {
    this.req.socket.destroy();
    return this;
  }

  /**
   * The request's body cannot be parsed (bad chunked framing, say): the route is told its
   * client is gone (it stops waiting for the body and frees what it held), and the client gets
   * the 400 in its place, with the connection closed after it. False when an answer has begun.
   */
  refuseBody(e: ErrorAnswer): boolean {
    if (this.done || this.started) return false;
    const h = this.aborted;
    this.aborted = null;
    h?.();
    this.head.writeStatus(e.statusLine);
    this.head.writeHeader('Content-Type', 'application/json');
    this.done = true;
    this.start(e.body.length, true);
    this.res.end(e.body);
    return true;
  }

  getRemoteAddress(): ArrayBuffer {
    return peerBytes(this.req.socket.remoteAddress);
  }
}

class NodeApp extends Router {
  /** Responses of this app not yet handed to the kernel whole. */
  readonly unsent = { count: 0 };
  private readonly params: string[] = [];

  dispatch(req: http.IncomingMessage, res: http.ServerResponse): void {
    // A request pipelined behind one whose answer closes the connection is never answered: node
    // parsed it from the same packet, but its response would wait behind a closing one and no
    // 'close' would come for it (counted, it left every later shutdown waiting its whole grace).
    if ((req.socket as Socket)[CONNECTION]?.closing) return;
    // RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400 (answered here, in the catalogue's words).
    if (req.httpVersionMinor === 1 && rawHeader(req, 'host') === undefined) return refuse(req, res, ERRORS.malformedRequest, this.unsent);
    let target = req.url ?? '/';
    if (!target.startsWith('/')) {
      // absolute-form (RFC 9112 §3.2.2): route its path and query
      try {
        const u = new URL(target);
        target = u.pathname + u.search;
      } catch {
        return refuse(req, res, ERRORS.malformedRequest, this.unsent);
      }
    }
    const q = target.indexOf('?');
    const path = q < 0 ? target : target.slice(0, q);
    const handler = this.find(req.method ?? '', path, this.params);
    if (handler === null) return refuse(req, res, ERRORS.notFound, this.unsent);
    const params = this.params.length === 0 ? NO_PARAMS : this.params.slice();
    handler(new NodeResponse(req, res, this.unsent), new NodeRequest(req, path, q < 0 ? undefined : target.slice(q + 1), params));
  }
}

/** Answers a request no route may take, in its turn among pipelined ones, and closes the connection. */
function refuse(req: http.IncomingMessage, res: http.ServerResponse, e: ErrorAnswer, unsent: { count: number }): void {
  new NodeResponse(req, res, unsent).writeStatus(e.statusLine).writeHeader('Content-Type', 'application/json').end(e.body, true);
}

/** Answers bytes the parser refused (nothing else is being answered) and closes the connection. */
function clientError(socket: Duplex, e: ErrorAnswer): void {
  if (!socket.writable) return void socket.destroy();
  socket.end(
    `HTTP/1.1 ${e.statusLine}\r\nContent-Type: application/json\r\nContent-Length: ${e.body.length}\r\nConnection: close\r\n\r\n${e.body.toString('latin1')}`,
  );
}

/** Parser errors that mean the client has gone. */
const GONE = new Set(['ECONNRESET', 'EPIPE', 'HPE_INVALID_EOF_STATE']);

/** What a parser error answers: headers too large 431, a head too slow 408, the rest 400. */
function parserRefusal(code: string | undefined): ErrorAnswer {
  if (code === 'HPE_HEADER_OVERFLOW') return ERRORS.headersTooLarge;
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return ERRORS.requestTimeout;
  return ERRORS.malformedRequest;
}

/** net.Server's reusePort: Node 22.12 and later (Bun's node:http refuses a second listener). */
function nodeReusesPorts(): boolean {
  if (process.versions.bun !== undefined) return false;
  const [major, minor] = process.versions.node.split('.').map(Number);
  return major > 22 || (major === 22 && minor >= 12);
}

export function nodeServer(o: ServerOptions): HttpServer {
  return {
    kind: 'node',
    app: () => new NodeApp(),
    cannotSharePort: nodeReusesPorts()
      ? null
      : process.versions.bun !== undefined
        ? 'node:http on Bun does not share a port between threads (Bun.serve does: HTTP_SERVER=bun)'
        : `node:http shares a port between threads from Node 22.12 (reusePort); this is Node ${process.versions.node}`,
    listen: (app, host, port, shared = false) =>
      new Promise<Listener>((resolve, reject) => {
        const server = http.createServer(
          {
            keepAliveTimeout: o.keepAliveTimeoutMs,
            headersTimeout: HEADERS_TIMEOUT_MS,
            requireHostHeader: false, // checked in dispatch, answered with the catalogue's body
            joinDuplicateHeaders: false,
          },
          (req, res) => (app as NodeApp).dispatch(req, res),
        );
        // A client that half-closes after sending its request (shutdown(SHUT_WR), `nc -N`)
        // still reads: answers pending then (a batch on the pool) are written before the
        // connection closes, instead of the socket being ended under them.
        (server as http.Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
        server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
          const c = (socket as Socket)[CONNECTION];
          // The client is gone (a reset, or the end of its stream in a body), or its request can
          // never finish (bad framing in its body): drop the connection; onAborted runs.
          if (GONE.has(err.code ?? '')) return void socket.destroy();
          // Bad framing in a body: its request can never finish; its 400, where none has begun.
          if (c?.last && !c.last.complete) return void (c.response?.refuseBody(parserRefusal(err.code)) || socket.destroy());
          if (c && c.open > 0) return void (c.endWhenDone = true);
          if (c?.closing) return void socket.destroy();
          clientError(socket, parserRefusal(err.code));
        });
        // In the words of the other servers (uws.ts, bun.ts): the front-end threads start again
        // on another port when a free one is taken before they bind it.
        const refused = (e: Error): void => reject(new Error(`cannot listen on ${host}:${port}: ${e.message}`, { cause: e }));
        server.once('error', refused);
        server.listen({ host, port, ...(shared ? { reusePort: true } : {}) }, () => {
          server.off('error', refused);
          const address = server.address();
          resolve({
            port: typeof address === 'object' && address ? address.port : port,
            stop: () => void server.close(),
            close: () => {
              server.close();
              server.closeAllConnections();
            },
            unsent: () => (app as NodeApp).unsent.count,
          });
        });
      }),
  };
}
