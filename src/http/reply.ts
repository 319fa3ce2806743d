// The writers of every non-lookup answer: an error from the catalogue (wire/errors.ts), or a
// JSON document. Each counts its status for the metrics. Late answers (after an await or a
// worker) go through `late`, which corks the writes and skips a response the client aborted.

import type { HttpResponse } from './server/types.js';
import { statusLine, type ErrorAnswer, type RcError } from '../wire/errors.js';
import { writeJsonType } from './json.js';
import type { Metrics } from './metrics.js';

export interface ErrorOptions {
  /** Extra header lines, written after Content-Type. */
  headers?: readonly (readonly [string, string])[];
  /** Close the connection after the answer (the request body will not be read). */
  close?: boolean;
  /** A HEAD request: the head only (RFC 9110 §9.3.2). */
  head?: boolean;
}

/** Answers an error of the catalogue. */
export function sendError(res: HttpResponse, e: ErrorAnswer, metrics: Metrics, o?: ErrorOptions): void {
  metrics.count(e.status);
  writeJsonType(res.writeStatus(e.statusLine));
  if (o?.headers) for (const [name, value] of o.headers) res.writeHeader(name, value);
  endError(res, e.body, o);
}

/**
 * The body of an error answer, or for HEAD its length alone (RFC 9110 §9.3.2: the GET's
 * Content-Length). endWithoutBody takes no arguments here: this uWS build fails any call
 * that passes some, and the header written by hand works.
 */
function endError(res: HttpResponse, body: Buffer | string, o?: ErrorOptions): void {
  if (o?.head) res.writeHeader('Content-Length', String(Buffer.byteLength(body))).endWithoutBody();
  else res.end(body, o?.close);
}

/**
 * Answers a result code with a message saying what was wrong and how to put it right
 * ({"rc": code, "message": why}): the code is the contract's, the message is for a person.
 */
export function sendRc(res: HttpResponse, e: RcError, message: string, metrics: Metrics, o?: ErrorOptions): void {
  metrics.count(e.status);
  writeJsonType(res.writeStatus(e.statusLine));
  if (o?.headers) for (const [name, value] of o.headers) res.writeHeader(name, value);
  endError(res, JSON.stringify({ rc: e.code, message }), o);
}

/** Answers a JSON document; `revalidate`: one a private cache may keep (it carries an ETag). */
export function sendJson(
  res: HttpResponse,
  status: number,
  doc: unknown,
  metrics: Metrics,
  headers?: readonly (readonly [string, string])[],
  revalidate = false,
): void {
  metrics.count(status);
  writeJson(res, status, doc, headers, revalidate);
}

/** sendJson without counting: the admin port's own probes (health, readiness), which the request metrics leave out. */
export function writeJson(res: HttpResponse, status: number, doc: unknown, headers?: readonly (readonly [string, string])[], revalidate = false): void {
  writeJsonType(res.writeStatus(statusLine(status)), revalidate);
  if (headers) for (const [name, value] of headers) res.writeHeader(name, value);
  res.end(JSON.stringify(doc));
}

/** Whether a deferred answer may still be written; set by onAborted. */
export interface Pending {
  aborted: boolean;
  /** Marks the request done (in-flight accounting for graceful shutdown), where counted. */
  finish?: () => void;
}

/** Registers onAborted (uWS requires it before a handler returns unanswered); the flag it sets. */
export function pending(res: HttpResponse): Pending {
  const p: Pending = { aborted: false };
  res.onAborted(() => {
    p.aborted = true;
  });
  return p;
}

/** Runs a late answer corked, unless the client has gone. */
export function late(res: HttpResponse, p: Pending, write: () => void): void {
  if (!p.aborted) res.cork(write);
}
