// CORS for browsers calling the public port (CORS_ORIGINS). A request from an allowed origin
// gets Access-Control-Allow-Origin and the quota headers exposed, on every answer, refusals
// included; a preflight (OPTIONS with Access-Control-Request-Method) on a known path gets 204
// with the methods the path takes and the request headers a key travels in. Requests without
// an Origin header, all the non-browser traffic, cost one header read.

import type { Bytes, HttpResponse } from './server/types.js';
import { ResponseWrapper } from './response-wrapper.js';

/** The headers a script may read: the quota and rate headers, Retry-After, Location, ETag. */
const EXPOSED =
  'RateLimit-Policy, RateLimit, X-Allowance-Quota, X-Allowance-Used, X-Allowance-Reset, X-Allowance-Hard-Limit, Retry-After, Location, ETag, Content-Range, Content-Length';
/** How long a browser may keep a preflight's answer. */
const MAX_AGE_S = 600;

export class Cors {
  private readonly any: boolean;
  private readonly origins: ReadonlySet<string>;

  constructor(origins: readonly string[]) {
    this.any = origins.includes('*');
    this.origins = new Set(origins);
  }

  /** Whether an Origin header's value may call. */
  allows(origin: string): boolean {
    return origin !== '' && (this.any || this.origins.has(origin));
  }

  /** The response with the CORS headers of an actual request from `origin` added after its status. */
  wrap(res: HttpResponse, origin: string): HttpResponse {
    return new CorsResponse(res, this.any ? '*' : origin, !this.any);
  }

  /**
   * Answers a preflight from an allowed origin for a path that takes `methods`; `res` is the
   * wrapped response (wrap), which adds Allow-Origin.
   */
  preflight(res: HttpResponse, methods: readonly string[]): void {
    res.writeStatus('204 No Content');
    res.writeHeader('Access-Control-Allow-Methods', methods.join(', '));
    res.writeHeader('Access-Control-Allow-Headers', 'Authorization, X-Api-Key, Content-Type, If-None-Match, Range');
    res.writeHeader('Access-Control-Max-Age', String(MAX_AGE_S));
    res.endWithoutBody();
  }
}

/**
 * Adds the CORS headers once, before the first header or right after the status: uWS takes no
 * header before a status it has not been given, and a 200 needs none written.
 */
class CorsResponse extends ResponseWrapper {
  private added = false;

  constructor(
    res: HttpResponse,
    private readonly allowOrigin: string,
    private readonly vary: boolean,
  ) {
    super(res);
  }

  private add(): void {
    if (this.added) return;
    this.added = true;
    this.res.writeHeader('Access-Control-Allow-Origin', this.allowOrigin);
    if (this.vary) this.res.writeHeader('Vary', 'Origin');
    this.res.writeHeader('Access-Control-Expose-Headers', EXPOSED);
  }

  override writeStatus(status: Bytes): HttpResponse {
    this.res.writeStatus(status);
    this.add();
    return this;
  }

  override writeHeader(name: Bytes, value: Bytes): HttpResponse {
    this.add();
    this.res.writeHeader(name, value);
    return this;
  }

  override writeFields(status: string | null, fields: readonly string[]): HttpResponse {
    if (status !== null) this.res.writeStatus(status);
    this.add();
    this.res.writeFields!(null, fields);
    return this;
  }

  override end(body?: Bytes, close?: boolean): HttpResponse {
    this.add();
    this.res.end(body, close);
    return this;
  }

  override endWithoutBody(): HttpResponse {
    this.add();
    this.res.endWithoutBody();
    return this;
  }

  override tryEnd(chunk: Uint8Array, total: number): [boolean, boolean] {
    this.add();
    return this.res.tryEnd(chunk, total);
  }

  override endWithFile(file: string, start: number, length: number): HttpResponse {
    this.add();
    this.res.endWithFile!(file, start, length);
    return this;
  }
}
