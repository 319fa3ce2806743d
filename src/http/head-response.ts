// HEAD on every GET route (RFC 9110 §9.3.2): the GET handler runs as it is, against a response
// that sends its status and every header, and in place of the body the Content-Length the
// body would have had. So a HEAD is answered, and counted, exactly as the GET would be.

import type { HttpResponse } from './server/types.js';
import { byteLength, passThrough } from './response-wrapper.js';

export function headOnly(res: HttpResponse): HttpResponse {
  const finish = (length: number): HttpResponse => {
    // The header written by hand: this uWS build fails endWithoutBody(length).
    res.writeHeader('Content-Length', String(length));
    res.endWithoutBody();
    return out;
  };
  const out: HttpResponse = {
    writeStatus: (status) => (res.writeStatus(status), out),
    writeHeader: (name, value) => (res.writeHeader(name, value), out),
    ...(res.writeFields ? { writeFields: (status: string | null, fields: readonly string[]) => (res.writeFields!(status, fields), out) } : {}),
    end: (body) => finish(byteLength(body)),
    endWithoutBody: () => (res.endWithoutBody(), out),
    tryEnd: (_chunk, totalSize) => (finish(totalSize), [true, true]),
    endWithFile: (_file, _start, length) => finish(length),
    getWriteOffset: () => 0,
    ...passThrough(res, () => out),
  };
  return out;
}
