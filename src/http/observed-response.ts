// A response that reports how it ended — its status, the body's bytes, or that the client went
// away — for the latency histograms and the access log (routes.ts). Only requests that need it
// are wrapped: every request of the routes whose answer may come later (batches, database,
// account, files), and the requests the access log samples; single lookups answer before their
// handler returns and are timed without a wrapper.

import type { Bytes, HttpResponse } from './server/types.js';
import { ResponseWrapper, byteLength } from './response-wrapper.js';

/** The status code at the head of a status line ('200 OK', or a template starting with one). */
function statusOf(line: Bytes): number {
  if (typeof line === 'string') return Number(line.slice(0, 3)) || 0;
  const b = line instanceof Uint8Array ? line : new Uint8Array(line);
  return (b[0] - 48) * 100 + (b[1] - 48) * 10 + (b[2] - 48);
}

/** `status` 0 with bytes -1: the client aborted before the answer was complete. */
export type Ended = (status: number, bytes: number) => void;

class ObservedResponse extends ResponseWrapper {
  private status = 200;
  private done = false;

  constructor(
    res: HttpResponse,
    private readonly ended: Ended,
  ) {
    super(res);
  }

  private finish(status: number, bytes: number): void {
    if (this.done) return;
    this.done = true;
    this.ended(status, bytes);
  }

  override writeStatus(line: Bytes): HttpResponse {
    this.status = statusOf(line);
    this.res.writeStatus(line);
    return this;
  }

  override writeFields(line: string | null, fields: readonly string[]): HttpResponse {
    if (line !== null) this.status = statusOf(line);
    this.res.writeFields!(line, fields);
    return this;
  }

  // Counted before the answer leaves: a client that has its answer and then scrapes /metrics
  // finds its request there (another thread may serve the scrape).
  override end(body?: Bytes, closeConnection?: boolean): HttpResponse {
    this.finish(this.status, byteLength(body));
    this.res.end(body, closeConnection);
    return this;
  }

  override endWithoutBody(): HttpResponse {
    this.finish(this.status, 0);
    this.res.endWithoutBody();
    return this;
  }

  override tryEnd(chunk: Uint8Array, totalSize: number): [boolean, boolean] {
    const r = this.res.tryEnd(chunk, totalSize);
    if (r[1]) this.finish(this.status, totalSize);
    return r;
  }

  override endWithFile(file: string, start: number, length: number): HttpResponse {
    this.finish(this.status, length);
    this.res.endWithFile!(file, start, length);
    return this;
  }

  override close(): HttpResponse {
    this.res.close();
    this.finish(0, -1);
    return this;
  }

  override onAborted(handler: () => void): HttpResponse {
    this.res.onAborted(() => {
      handler();
      this.finish(0, -1);
    });
    return this;
  }
}

export function observed(res: HttpResponse, ended: Ended): HttpResponse {
  return new ObservedResponse(res, ended);
}
