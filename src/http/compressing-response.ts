// Compression for the routes whose JSON answers can be long (the catalogue, a download history,
// a key list): the handler writes as always; the body it ends with goes out in the coding the
// request asked for, where it is long enough to be worth it (content-coding.ts). Batches do
// not come here: their worker compresses them (lookup/batch.ts).

import type { Bytes, HttpResponse } from './server/types.js';
import { ResponseWrapper } from './response-wrapper.js';
import { CODING_NAMES, IDENTITY, MIN_COMPRESSED_BYTES, compress, type Coding } from '../wire/codings.js';
import { writeCoding } from './content-coding.js';

function bytesOf(body: Bytes): Uint8Array {
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  return body instanceof Uint8Array ? body : new Uint8Array(body);
}

/**
 * A strong ETag names one representation (RFC 9110 §8.8.3), so an answer to a client that
 * accepts a coding carries its own: `"v"` becomes `"v-gzip"` (`"v-br"`), whether or not this
 * body was long enough to compress. `sameEntity` reads such a tag back.
 */
function codedTag(tag: string, coding: Coding): string {
  return tag.endsWith('"') ? `${tag.slice(0, -1)}-${CODING_NAMES[coding]}"` : tag;
}

/** Whether an If-None-Match member names `etag` in any coding. */
export function sameEntity(member: string, etag: string): boolean {
  const t = member.trim();
  if (t === etag || t === '*') return true;
  const close = etag.slice(0, -1);
  return t === `${close}-gzip"` || t === `${close}-br"`;
}

/** Bodies that are the same bytes for every request (staticBody), with their coded forms once made. */
const codedForms = new WeakMap<Uint8Array, (Uint8Array | null)[]>();

/**
 * Marks a body as static: the same bytes answer every request (the OpenAPI document). Each
 * coding of it is then compressed once and served from memory, so an unauthenticated client
 * asking for br or gzip costs what an identity answer costs, not a compression each time.
 */
export function staticBody(bytes: Buffer): Buffer {
  codedForms.set(bytes, [null, null, null]);
  return bytes;
}

/** The body in `coding`, or null where compressing it saves nothing; made once for a static body. */
function codedForm(plain: Uint8Array, coding: Coding): Uint8Array | null {
  const forms = codedForms.get(plain);
  const made = forms?.[coding];
  if (made) return made.byteLength < plain.byteLength ? made : null;
  const packed = compress(plain, coding);
  if (forms) forms[coding] = packed;
  return packed.byteLength < plain.byteLength ? packed : null;
}

export function compressing(res: HttpResponse, coding: Coding): HttpResponse {
  return coding === IDENTITY ? res : new CompressingResponse(res, coding);
}

class CompressingResponse extends ResponseWrapper {
  constructor(
    res: HttpResponse,
    private readonly coding: Exclude<Coding, typeof IDENTITY>,
  ) {
    super(res);
  }

  override writeHeader(name: Bytes, value: Bytes): HttpResponse {
    this.res.writeHeader(name, typeof name === 'string' && typeof value === 'string' && name.toLowerCase() === 'etag' ? codedTag(value, this.coding) : value);
    return this;
  }

  // Streamed answers (tryEnd; none of the JSON routes stream) go out as they are.
  override end(body?: Bytes, closeConnection?: boolean): HttpResponse {
    if (body !== undefined) {
      const plain = bytesOf(body);
      if (plain.byteLength >= MIN_COMPRESSED_BYTES) {
        const packed = codedForm(plain, this.coding);
        if (packed !== null) {
          writeCoding(this.res, this.coding);
          this.res.end(packed, closeConnection);
          return this;
        }
      }
    }
    this.res.end(body, closeConnection);
    return this;
  }
}
