// The head every JSON answer of the service carries: Content-Type and Cache-Control in one
// native call. Lookups (api/admission/json-head.ts), errors and documents (reply.ts) all write it from
// here, so the caching rule is stated once.

import type { HttpResponse } from './server/types.js';
import { nativeString } from './server/bytes.js';

export const CONTENT_TYPE = nativeString('Content-Type');
/**
 * Every JSON answer depends on the caller (its key's plan, its quota, its licences, its rate
 * bucket): no shared cache may keep it, and no cache at all a lookup's quota numbers.
 */
export const NO_STORE = 'private, no-store';
/** Documents with an ETag (metadata, checksum): a private cache may keep them and revalidate. */
export const REVALIDATE = 'private, no-cache';
const JSON_TYPE = nativeString(`application/json\r\nCache-Control: ${NO_STORE}`);
const JSON_TYPE_REVALIDATED = nativeString(`application/json\r\nCache-Control: ${REVALIDATE}`);

const JSON_TYPE_PUBLIC = nativeString('application/json\r\nCache-Control: public, max-age=300');

/** Content-Type: application/json and Cache-Control, for every JSON answer of the service. */
export function writeJsonType(res: HttpResponse, revalidate = false): HttpResponse {
  return res.writeHeader(CONTENT_TYPE, revalidate ? JSON_TYPE_REVALIDATED : JSON_TYPE);
}

/** The same for a document that is the same for every caller (the OpenAPI document): any cache may keep it a while. */
export function writePublicJsonType(res: HttpResponse): HttpResponse {
  return res.writeHeader(CONTENT_TYPE, JSON_TYPE_PUBLIC);
}
