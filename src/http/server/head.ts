// A response head as the routes write it (types.ts: writeStatus may carry header lines after
// CRLFs, and so may a writeHeader value), collected for servers that take a status and a
// header list (node:http, Bun.serve). Only the service's own text arrives here.

import { textOf } from './bytes.js';
import type { Bytes } from './types.js';

const OK = '200 OK';

export class ResponseHead {
  status = 200;
  reason = 'OK';
  /** Header names and values, alternating. */
  readonly fields: string[] = [];

  writeStatus(status: Bytes): void {
    if (status === OK) {
      // Most answers (JsonHead.writeOk): nothing to parse.
      this.status = 200;
      this.reason = 'OK';
      return;
    }
    const text = textOf(status);
    const eol = text.indexOf('\r\n');
    const line = eol < 0 ? text : text.slice(0, eol);
    const space = line.indexOf(' ');
    this.status = Number(space < 0 ? line : line.slice(0, space));
    this.reason = space < 0 ? '' : line.slice(space + 1);
    if (eol >= 0) this.addLines(text, eol + 2);
  }

  writeFields(status: string | null, fields: readonly string[]): void {
    if (status !== null) this.writeStatus(status);
    for (let i = 0; i < fields.length; i++) this.fields.push(fields[i]);
  }

  writeHeader(name: Bytes, value: Bytes): void {
    const v = textOf(value);
    const eol = v.indexOf('\r\n');
    if (eol < 0) return void this.fields.push(textOf(name), v);
    this.fields.push(textOf(name), v.slice(0, eol).trim());
    this.addLines(v, eol + 2);
  }

  has(lowerCaseName: string): boolean {
    const f = this.fields;
    for (let i = 0; i < f.length; i += 2) if (f[i].length === lowerCaseName.length && f[i].toLowerCase() === lowerCaseName) return true;
    return false;
  }

  /** Adds the "Name: value" lines of text from `at` on (CRLF-separated). */
  private addLines(text: string, at: number): void {
    while (at < text.length) {
      let eol = text.indexOf('\r\n', at);
      if (eol < 0) eol = text.length;
      const colon = text.indexOf(':', at);
      this.fields.push(text.slice(at, colon), text.slice(colon + 1, eol).trim());
      at = eol + 2;
    }
  }
}
