// node:http behind the boundary: the server for runtimes where the uWS binary cannot load
// (Node 22/24), and for setups uWS cannot serve (HTTP/1.0 clients and proxies, keep-alive
// idle timeouts longer than uWS's fixed 10 s). Slower than uWS, correct on every point:
// HTTP/1.0 answered, malformed requests (no Host, bare LF, obs-fold, conflicting
// Content-Length) refused at once with 400 by Node's strict parser.

import http from 'node:http';
import type { Duplex } from 'node:stream';
import { ERRORS, type ErrorAnswer } from '../../api/errors.js';
import { IPV4, IPV4_MAPPED, IPV6, ParsedAddress, parseAddress } from '../../net/address.js';
import { textOf } from './bytes.js';
import { compareSpecificity, matchPattern, parsePattern, type Pattern } from './patterns.js';
import type { Bytes, Handler, HttpApp, HttpRequest, HttpResponse, HttpServer, Listener, ServerOptions } from './types.js';

/** A request's head must arrive within this long (slow-header clients). */
const HEADERS_TIMEOUT_MS = 20_000;
const EMPTY = Buffer.alloc(0);
/** The most of a body chunk one tryEnd hands node (see tryEnd). */
const MAX_TAKE = 64 * 1024;
const NO_BYTES = new ArrayBuffer(0);

class NodeRequest implements HttpRequest {
  constructor(
    private readonly req: http.IncomingMessage,
    private readonly path: string,
    private readonly query: string | undefined,
    private readonly params: readonly string[],
  ) {}

  getHeader(lowerCaseName: Bytes): string {
    const name = textOf(lowerCaseName);
    const raw = this.req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) if (raw[i].length === name.length && raw[i].toLowerCase() === name) return raw[i + 1];
    return '';
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
    return (this.req.method ?? '').toLowerCase();
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

/** A request chunk as an ArrayBuffer of its own bytes. */
function arrayBufferOf(b: Buffer): ArrayBuffer {
  if (b.byteOffset === 0 && b.byteLength === b.buffer.byteLength) return b.buffer as ArrayBuffer;
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
}

const peer = new ParsedAddress();

/** A socket's remote address as uWS gives it: 4 bytes for IPv4 (mapped too), else 16. */
function peerBytes(text: string | undefined): ArrayBuffer {
  const t = text ?? '';
  const kind = parseAddress(t, 0, t.length, peer);
  if (kind === IPV4 || kind === IPV4_MAPPED) {
    const v = peer.v4;
    return new Uint8Array([v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255]).buffer;
  }
  const out = new DataView(new ArrayBuffer(16));
  if (kind === IPV6) for (let i = 0; i < 4; i++) out.setUint32(4 * i, peer.w[i]);
  return out.buffer;
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
}
const connections = new WeakMap<Duplex, Connection>();

function connectionOf(socket: Duplex): Connection {
  let c = connections.get(socket);
  if (c === undefined) connections.set(socket, (c = { open: 0, closing: false, last: null, endWhenDone: false }));
  return c;
}

/** Whether the request asks to close the connection after its answer. */
function asksClose(req: http.IncomingMessage): boolean {
  const c = (req.headers.connection ?? '').toLowerCase();
  return c.includes('close') || (req.httpVersionMinor === 0 && !c.includes('keep-alive'));
}

class NodeResponse implements HttpResponse {
  private status = 200;
  private reason = 'OK';
  /** Header names and values, alternating (writeHead's flat form). */
  private readonly head: string[] = [];
  private started = false;
  private done = false;
  private offset = 0;
  private aborted: (() => void) | null = null;
  private writable: ((offset: number) => boolean) | null = null;
  private drainHooked = false;

  constructor(
    private readonly req: http.IncomingMessage,
    private readonly res: http.ServerResponse,
    unsent: { count: number },
  ) {
    // Counted until node has handed the whole response to the kernel ('finish'), or it ends cut.
    unsent.count++;
    let counted = true;
    const sent = (): void => {
      if (counted) unsent.count--;
      counted = false;
    };
    res.once('finish', sent);
    res.once('close', sent);
    const connection = connectionOf(req.socket);
    connection.open++;
    connection.last = req;
    if (asksClose(req)) connection.closing = true;
    res.once('close', () => {
      if (--connection.open === 0 && connection.endWhenDone) req.socket.end();
      if (this.done) return;
      this.done = true;
      const h = this.aborted;
      this.aborted = null;
      h?.();
    });
  }

  /** Adds "Name: value" lines of text[from..] (CRLF-separated) to the head. */
  private addLines(lines: string[], from: number): void {
    for (let i = from; i < lines.length; i++) {
      const line = lines[i];
      const colon = line.indexOf(':');
      this.head.push(line.slice(0, colon), line.slice(colon + 1).trim());
    }
  }

  writeStatus(status: Bytes): this {
    const lines = textOf(status).split('\r\n');
    const space = lines[0].indexOf(' ');
    this.status = Number(space < 0 ? lines[0] : lines[0].slice(0, space));
    this.reason = space < 0 ? '' : lines[0].slice(space + 1);
    this.addLines(lines, 1);
    return this;
  }

  writeHeader(name: Bytes, value: Bytes): this {
    const v = textOf(value);
    if (v.includes('\r\n')) {
      const lines = v.split('\r\n');
      this.head.push(textOf(name), lines[0].trim());
      this.addLines(lines, 1);
    } else this.head.push(textOf(name), v);
    return this;
  }

  private start(length: number | null, close = false): void {
    if (close) {
      this.head.push('Connection', 'close');
      connectionOf(this.req.socket).closing = true;
    }
    if (length !== null && !this.hasHeader('content-length')) this.head.push('Content-Length', String(length));
    this.res.writeHead(this.status, this.reason, this.head);
    this.started = true;
  }

  private hasHeader(lowerCaseName: string): boolean {
    for (let i = 0; i < this.head.length; i += 2) if (this.head[i].toLowerCase() === lowerCaseName) return true;
    return false;
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

  getWriteOffset(): number {
    // Node keeps what it could not send yet, so everything handed over counts as taken.
    return this.offset;
  }

  onWritable(handler: (offset: number) => boolean): this {
    this.writable = handler;
    if (!this.drainHooked) {
      this.drainHooked = true;
      this.res.on('drain', () => this.fireWritable());
    }
    // Nothing waits in node's buffer (a partial take the socket swallowed): no 'drain' will come.
    if (!this.res.writableNeedDrain) setImmediate(() => this.fireWritable());
    return this;
  }

  private fireWritable(): void {
    const h = this.writable;
    this.writable = null;
    if (h && !h(this.offset)) this.writable = h;
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

  cork(cb: () => void): this {
    // writeHead and end(body) already leave in one write.
    cb();
    return this;
  }

  close(): this {
    this.req.socket.destroy();
    return this;
  }

  getRemoteAddress(): ArrayBuffer {
    return peerBytes(this.req.socket.remoteAddress);
  }
}

interface NodeRoute {
  pattern: Pattern;
  handler: Handler;
}

class NodeApp implements HttpApp {
  /** Responses of this app not yet handed to the kernel whole. */
  readonly unsent = { count: 0 };
  private readonly byMethod = new Map<string, NodeRoute[]>();
  private readonly anyMethod: NodeRoute[] = [];

  get = (pattern: string, handler: Handler): this => this.add('GET', pattern, handler);
  post = (pattern: string, handler: Handler): this => this.add('POST', pattern, handler);
  del = (pattern: string, handler: Handler): this => this.add('DELETE', pattern, handler);
  head = (pattern: string, handler: Handler): this => this.add('HEAD', pattern, handler);
  any = (pattern: string, handler: Handler): this => this.add('*', pattern, handler);

  private add(method: string, text: string, handler: Handler): this {
    let list = this.anyMethod;
    if (method !== '*') {
      list = this.byMethod.get(method) ?? [];
      this.byMethod.set(method, list);
    }
    list.push({ pattern: parsePattern(text), handler });
    list.sort((a, b) => compareSpecificity(a.pattern, b.pattern));
    return this;
  }

  dispatch(req: http.IncomingMessage, res: http.ServerResponse): void {
    // RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400 (answered here, in the catalogue's words).
    if (req.httpVersionMinor === 1 && req.headers.host === undefined) return refuse(req, res, ERRORS.malformedRequest, this.unsent);
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
    const segments = path.split('/');
    const params: string[] = [];
    const route = find(this.byMethod.get(req.method ?? ''), segments, params) ?? find(this.anyMethod, segments, params);
    if (route === null) return refuse(req, res, ERRORS.notFound, this.unsent);
    route.handler(new NodeResponse(req, res, this.unsent), new NodeRequest(req, path, q < 0 ? undefined : target.slice(q + 1), params));
  }
}

function find(routes: NodeRoute[] | undefined, segments: string[], params: string[]): NodeRoute | null {
  if (routes === undefined) return null;
  for (const r of routes) {
    params.length = 0;
    if (matchPattern(r.pattern, segments, params)) return r;
  }
  return null;
}

/** Answers a request no route may take, in its turn among pipelined ones, and closes the connection. */
function refuse(req: http.IncomingMessage, res: http.ServerResponse, e: ErrorAnswer, unsent: { count: number }): void {
  new NodeResponse(req, res, unsent).writeStatus(e.statusLine).writeHeader('Content-Type', 'application/json').end(e.body, true);
}

/** Answers bytes the parser refused (nothing else is being answered) and closes the connection. */
function clientError(socket: Duplex, e: ErrorAnswer): void {
  if (!socket.writable) return void socket.destroy();
  socket.end(`HTTP/1.1 ${e.statusLine}\r\nContent-Type: application/json\r\nContent-Length: ${e.body.length}\r\nConnection: close\r\n\r\n${e.body.toString('latin1')}`);
}

/** Parser errors that mean the client has gone. */
const GONE = new Set(['ECONNRESET', 'EPIPE', 'HPE_INVALID_EOF_STATE']);

/** What a parser error answers: headers too large 431, a head too slow 408, the rest 400. */
function parserRefusal(code: string | undefined): ErrorAnswer {
  if (code === 'HPE_HEADER_OVERFLOW') return ERRORS.headersTooLarge;
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return ERRORS.requestTimeout;
  return ERRORS.malformedRequest;
}

export function nodeServer(o: ServerOptions): HttpServer {
  return {
    kind: 'node',
    app: () => new NodeApp(),
    listen: (app, host, port) =>
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
        server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
          const c = connections.get(socket);
          // The client is gone (a reset, or the end of its stream in a body), or its request can
          // never finish (bad framing in its body): drop the connection; onAborted runs.
          if (GONE.has(err.code ?? '') || (c?.last && !c.last.complete)) return void socket.destroy();
          if (c && c.open > 0) return void (c.endWhenDone = true);
          if (c?.closing) return void socket.destroy();
          clientError(socket, parserRefusal(err.code));
        });
        server.once('error', reject);
        server.listen({ host, port }, () => {
          server.off('error', reject);
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
