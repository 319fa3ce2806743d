// What the responses of node:http and Bun.serve share: both take a head as status and header
// text (collected in a ResponseHead until the answer starts), both keep what the socket has
// not taken yet (so everything handed over counts as written), and both learn late that a
// client went. Each subclass sends the answer its server's way.

import { ResponseHead } from './head.js';
import type { Bytes } from './types.js';

export abstract class TextResponse {
  protected readonly head = new ResponseHead();
  /** The answer is complete (or the client went): nothing more is written. */
  protected done = false;
  /** Body bytes handed to the server so far. */
  protected offset = 0;
  protected aborted: (() => void) | null = null;
  private writable: ((offset: number) => boolean) | null = null;

  writeStatus(status: Bytes): this {
    this.head.writeStatus(status);
    return this;
  }

  writeHeader(name: Bytes, value: Bytes): this {
    this.head.writeHeader(name, value);
    return this;
  }

  writeFields(status: string | null, fields: readonly string[]): this {
    this.head.writeFields(status, fields);
    return this;
  }

  getWriteOffset(): number {
    // The server keeps what it could not send yet, so everything handed over counts as taken.
    return this.offset;
  }

  cork(cb: () => void): this {
    // A head and a whole body already leave together on both servers.
    cb();
    return this;
  }

  /** Keeps the route's onWritable handler until the server can take more. */
  protected waitWritable(handler: (offset: number) => boolean): void {
    this.writable = handler;
  }

  protected fireWritable(): void {
    const h = this.writable;
    this.writable = null;
    if (h && !h(this.offset)) this.writable = h;
  }

  /** The client went before the answer was done: the route's onAborted runs once. */
  protected gone(): void {
    if (this.done) return;
    this.done = true;
    const h = this.aborted;
    this.aborted = null;
    h?.();
  }
}
