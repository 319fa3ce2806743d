// A response that reports how it ended — its status, the body's bytes, or that the client went
// away — for the latency histograms and the access log (routes.ts). Only requests that need it
// are wrapped: every request of the routes whose answer may come later (batches, database,
// account, files), and the requests the access log samples; single lookups answer before their
// handler returns and are timed without a wrapper.

import type { Bytes, HttpResponse } from './server/types.js';
import { byteLength, passThrough } from './response-wrapper.js';

/** The status code at the head of a status line ('200 OK', or a template starting with one). */
function statusOf(line: Bytes): number {
  if (typeof line === 'string') return Number(line.slice(0, 3)) || 0;
  const b = line instanceof Uint8Array ? line : new Uint8Array(line);
  return (b[0] - 48) * 100 + (b[1] - 48) * 10 + (b[2] - 48);
}

/** `status` 0 with bytes -1: the client aborted before the answer was complete. */
export type Ended = (status: number, bytes: number) => void;

export function observed(res: HttpResponse, ended: Ended): HttpResponse {
  let status = 200;
  let done = false;
  const finish = (s: number, bytes: number): void => {
    if (done) return;
    done = true;
    ended(s, bytes);
  };
  const out: HttpResponse = {
    ...passThrough(res, () => out),
    writeStatus: (line) => ((status = statusOf(line)), res.writeStatus(line), out),
    writeHeader: (name, value) => (res.writeHeader(name, value), out),
    ...(res.writeFields
      ? {
          writeFields: (line: string | null, fields: readonly string[]) => {
            if (line !== null) status = statusOf(line);
            res.writeFields!(line, fields);
            return out;
          },
        }
      : {}),
    // Counted before the answer leaves: a client that has its answer and then scrapes /metrics
    // finds its request there (another thread may serve the scrape).
    end: (body, closeConnection) => {
      finish(status, byteLength(body));
      res.end(body, closeConnection);
      return out;
    },
    endWithoutBody: () => {
      finish(status, 0);
      res.endWithoutBody();
      return out;
    },
    tryEnd: (chunk, totalSize) => {
      const r = res.tryEnd(chunk, totalSize);
      if (r[1]) finish(status, totalSize);
      return r;
    },
    ...(res.endWithFile ? { endWithFile: (file: string, start: number, length: number) => (finish(status, length), res.endWithFile!(file, start, length), out) } : {}),
    getWriteOffset: () => res.getWriteOffset(),
    close: () => (res.close(), finish(0, -1), out),
    onAborted: (handler) => {
      res.onAborted(() => {
        handler();
        finish(0, -1);
      });
      return out;
    },
  };
  return out;
}
