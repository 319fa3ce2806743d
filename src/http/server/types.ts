// The HTTP boundary: what the routes, the gate and the answer writers need from a server, and
// nothing more. The shape is uWebSockets.js's own (its objects satisfy it as they are, so the
// fast path pays nothing for the boundary); the node:http server implements it.
//
// Rules every implementation keeps, and every caller may rely on:
// - A request is valid only while its handler runs synchronously: copy what is needed.
// - A response is written status, then headers, then body; after end()/endWithoutBody(), or
//   once tryEnd() reports done, it is not touched again.
// - writeStatus takes "200 OK", optionally followed by CRLF-separated header lines; a
//   writeHeader value may also be followed by CRLF-separated header lines (json-head.ts packs
//   a whole head into one call this way). Only the service's own text is written so.
// - Bytes given to end()/tryEnd() are the server's once the call returns: the caller may
//   reuse its buffer at once.
// - A handler that does not answer before it returns registers onAborted first.

/** What a server accepts as text: a string, or latin1 bytes (cheaper for native servers). */
export type Bytes = string | ArrayBuffer | Uint8Array;

export interface HttpRequest {
  /** The first value of a header (lower-case name), or '' when absent. */
  getHeader(lowerCaseName: Bytes): string;
  /** Every header line in order, names in lower case (repeats joined where joinsRepeatedHeaders). */
  forEach(cb: (name: string, value: string) => void): void;
  /** Set where the server hands a header that came more than once as one value joined with ", " (Bun.serve). */
  readonly joinsRepeatedHeaders?: boolean;
  /** The path, undecoded, without the query. */
  getUrl(): string;
  /** The raw query after '?' (undefined or '' when there is none). */
  getQuery(): string | undefined;
  /** The method in lower case. */
  getMethod(): string;
  /** The route's n-th ':name' segment, undecoded. */
  getParameter(index: number): string | undefined;
}

export interface HttpResponse {
  writeStatus(status: Bytes): HttpResponse;
  writeHeader(name: Bytes, value: Bytes): HttpResponse;
  /**
   * Where the server takes headers as text (node:http, Bun.serve): a status line ("200 OK", or
   * null to keep the one written) and header names and values, alternating, copied before the
   * call returns. Cheaper there than bytes it would have to parse back.
   */
  writeFields?(status: string | null, fields: readonly string[]): HttpResponse;
  /** Sends the body with its Content-Length; closes the connection after it when asked. */
  end(body?: Bytes, closeConnection?: boolean): HttpResponse;
  /** Ends a response that has no body (HEAD, 304). */
  endWithoutBody(): HttpResponse;
  /**
   * Sends a chunk of a body of totalSize bytes: [taken whole, response done]. When not taken
   * whole, send again from getWriteOffset() once onWritable calls back.
   */
  tryEnd(chunk: Uint8Array, totalSize: number): [boolean, boolean];
  /**
   * Where the server has it (Bun.serve): sends bytes [start, start + length) of a file as the
   * whole body, with its Content-Length, from the kernel. Servers without it take the file
   * through tryEnd.
   */
  endWithFile?(file: string, start: number, length: number): HttpResponse;
  /** Body bytes taken so far. */
  getWriteOffset(): number;
  /** Called when the connection can take more (return true when the handler is done with it). */
  onWritable(handler: (offset: number) => boolean): HttpResponse;
  /** Called once if the connection goes before the response is done. */
  onAborted(handler: () => void): HttpResponse;
  /** The request body in chunks (each valid only during the call), the last with isLast. */
  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): HttpResponse;
  /** Runs the writes of a late answer together (one send where the server can). */
  cork(cb: () => void): HttpResponse;
  /** Drops the connection now; onAborted runs. */
  close(): HttpResponse;
  /** The TCP peer: 4 bytes (IPv4) or 16 (IPv6, IPv4-mapped included). */
  getRemoteAddress(): ArrayBuffer;
}

export type Handler = (res: HttpResponse, req: HttpRequest) => void;

/** Where routes are registered; only http/routes.ts calls these (a test checks). */
export interface HttpApp {
  get(pattern: string, handler: Handler): unknown;
  post(pattern: string, handler: Handler): unknown;
  del(pattern: string, handler: Handler): unknown;
  head(pattern: string, handler: Handler): unknown;
  /** Every method; the lowest priority, after every method's own routes. */
  any(pattern: string, handler: Handler): unknown;
}

/** A listening socket of an app. */
export interface Listener {
  readonly port: number;
  /** Stops taking new connections; requests on open ones may still finish. */
  stop(): void;
  /** Stops listening and drops every connection. */
  close(): void;
  /**
   * Responses begun and not yet handed to the kernel whole (0 where the server cannot tell):
   * a graceful shutdown waits for them, or closing would cut what is still buffered.
   */
  unsent(): number;
}

/** The servers behind the boundary. */
export type ServerKind = 'uws' | 'bun' | 'node';

/** Settings a server applies where it can (uWS fixes its own timeouts). */
export interface ServerOptions {
  /** How long an idle keep-alive connection is kept open. */
  keepAliveTimeoutMs: number;
}

/** One kind of server: makes apps and listens with them. */
export interface HttpServer {
  readonly kind: ServerKind;
  app(): HttpApp;
  /**
   * Listens; `shared`: beside other threads listening on the same port (SO_REUSEPORT), the
   * kernel spreading connections over them. Only where canSharePort says so.
   */
  listen(app: HttpApp, host: string, port: number, shared?: boolean): Promise<Listener>;
  /** Why threads cannot share a port with this server here, or null when they can. */
  readonly cannotSharePort: string | null;
}
