// What a response wrapper (head-response.ts, cors.ts) passes through unchanged: the calls
// that neither write the head nor the body.

import type { Bytes, HttpResponse } from './server/types.js';

/** The bytes a body puts on the wire (before any transfer coding). */
export function byteLength(body: Bytes | undefined): number {
  if (body === undefined) return 0;
  return typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.byteLength;
}

type PassedThrough = Pick<HttpResponse, 'onWritable' | 'onAborted' | 'onData' | 'cork' | 'close' | 'getRemoteAddress'>;

/** `res`'s calls for the wrapper `out()`, which they return where the server returns itself. */
export function passThrough(res: HttpResponse, out: () => HttpResponse): PassedThrough {
  return {
    onWritable: (handler) => (res.onWritable(handler), out()),
    onAborted: (handler) => (res.onAborted(handler), out()),
    onData: (handler) => (res.onData(handler), out()),
    cork: (cb) => (res.cork(cb), out()),
    close: () => (res.close(), out()),
    getRemoteAddress: () => res.getRemoteAddress(),
  };
}
