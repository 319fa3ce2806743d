// What every API registers with, besides its route table: this thread's metrics, request
// client and clock. Each API is a class whose constructor takes what it serves from and whose
// register(routes, edge) adds its routes.

import type { RequestClient } from '../../http/client.js';
import type { Metrics } from '../../http/metrics.js';
import { sendRc } from '../../http/reply.js';
import type { HttpRequest, HttpResponse } from '../../http/server/types.js';
import { ERRORS, RC } from '../../wire/errors.js';
import { bearerToken, type Caller } from '../../control/auth.js';
import { Gate } from './gate.js';
import type { Clock } from '../../clock.js';

/** Why a route that takes only a Bearer credential refused a request without one. */
export const BEARER_REQUIRED = 'a key or token is required here as Authorization: Bearer <key> (alone: no X-Api-Key or apikey beside it)';

export interface Edge {
  metrics: Metrics;
  client: RequestClient;
  /** The time handlers read: the system's, or a test's. */
  clock: Clock;
}

/**
 * The caller of a Bearer credential (key or token; no other credential beside it) from an
 * allowed source, or null once refused (401, or 403 for a source outside the key's ranges).
 */
export function bearerCaller(gate: Gate, edge: Edge, res: HttpResponse, req: HttpRequest): Caller | null {
  const secret = Gate.keyOf(req);
  if (secret === null || secret === '' || bearerToken(req.getHeader('authorization')) !== secret) {
    sendRc(res, RC.UNAUTHORIZED, BEARER_REQUIRED, edge.metrics);
    return null;
  }
  const c = gate.caller(secret, edge.client.of(res, req), edge.clock.now());
  if (c === null || !('key' in c)) {
    // The lookup group's words for it: invalid, revoked, expired, or a source outside the ranges.
    const why = c !== null && 'message' in c ? c.message : ERRORS.keyInvalid.message;
    sendRc(res, c === ERRORS.sourceNotAllowed ? RC.FORBIDDEN : RC.UNAUTHORIZED, why, edge.metrics);
    return null;
  }
  return c;
}
