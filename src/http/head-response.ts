// HEAD on every GET route (RFC 9110 §9.3.2): the GET handler runs as it is, against a response
// that sends its status and every header, and in place of the body the Content-Length the
// body would have had. So a HEAD is answered, and counted, exactly as the GET would be.

import type { Bytes, HttpResponse } from './server/types.js';
import { ResponseWrapper, byteLength } from './response-wrapper.js';

export function headOnly(res: HttpResponse): HttpResponse {
  return new HeadResponse(res);
}

class HeadResponse extends ResponseWrapper {
  constructor(res: HttpResponse) {
    super(res, true);
  }

  /** The header written by hand: this uWS build fails endWithoutBody(length). */
  private finish(length: number): HttpResponse {
    this.res.writeHeader('Content-Length', String(length));
    this.res.endWithoutBody();
    return this;
  }

  override end(body?: Bytes): HttpResponse {
    return this.finish(byteLength(body));
  }

  override tryEnd(_chunk: Uint8Array, totalSize: number): [boolean, boolean] {
    this.finish(totalSize);
    return [true, true];
  }

  override endWithFile(_file: string, _start: number, length: number): HttpResponse {
    return this.finish(length);
  }

  override getWriteOffset(): number {
    return 0;
  }
}
