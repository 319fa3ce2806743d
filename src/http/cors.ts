// CORS for browsers calling the public port (CORS_ORIGINS). A request from an allowed origin
// gets Access-Control-Allow-Origin and the quota headers exposed, on every answer, refusals
// included; a preflight (OPTIONS with Access-Control-Request-Method) on a known path gets 204
// with the methods the path takes and the request headers a key travels in. Requests without
// an Origin header, all the non-browser traffic, cost one header read.

import type { Bytes, HttpResponse } from './server/types.js';
import { passThrough } from './response-wrapper.js';

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
    const allowOrigin = this.any ? '*' : origin;
    let added = false;
    const add = (): void => {
      if (added) return;
      added = true;
      res.writeHeader('Access-Control-Allow-Origin', allowOrigin);
      if (!this.any) res.writeHeader('Vary', 'Origin');
      res.writeHeader('Access-Control-Expose-Headers', EXPOSED);
    };
    // Before the first header, or right after the status: uWS takes no header before a status
    // it has not been given, and a 200 needs none written.
    const out: HttpResponse = {
      writeStatus: (status) => (res.writeStatus(status), add(), out),
      writeHeader: (name, value) => (add(), res.writeHeader(name, value), out),
      ...(res.writeFields
        ? {
            writeFields: (status: string | null, fields: readonly string[]) => {
              if (status !== null) res.writeStatus(status);
              add();
              res.writeFields!(null, fields);
              return out;
            },
          }
        : {}),
      end: (body?: Bytes, close?: boolean) => (add(), res.end(body, close), out),
      endWithoutBody: () => (add(), res.endWithoutBody(), out),
      tryEnd: (chunk, total) => (add(), res.tryEnd(chunk, total)),
      ...(res.endWithFile ? { endWithFile: (file: string, start: number, length: number) => (add(), res.endWithFile!(file, start, length), out) } : {}),
      getWriteOffset: () => res.getWriteOffset(),
      ...passThrough(res, () => out),
    };
    return out;
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
