// The one catalogue of error answers (interface.md §7, DESIGN.md §6): every `{"error": …}` of
// the lookup group and every `{"rc": …}` of the database and key groups, each with its status
// line and its JSON body prebuilt once. Handlers answer errors only from here (http/reply.ts).

/** An error answer: status, status line and body, made once. */
export interface ErrorAnswer {
  readonly status: number;
  /** Status line for HttpResponse.writeStatus. */
  readonly statusLine: string;
  readonly body: Buffer;
}

/** A lookup-group error: {"error": message}. */
export interface ApiError extends ErrorAnswer {
  readonly message: string;
  /** {"status":N,"error":"<message>"}: a batch errors entry. */
  readonly entry: Buffer;
}

/** A database- or key-group error: {"rc": code}. */
export interface RcError extends ErrorAnswer {
  readonly code: string;
}

const REASONS: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No Content',
  206: 'Partial Content',
  302: 'Found',
  304: 'Not Modified',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Payload Too Large',
  416: 'Range Not Satisfiable',
  431: 'Request Header Fields Too Large',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

function apiError(status: number, message: string): ApiError {
  return Object.freeze({
    status,
    statusLine: statusLine(status),
    message,
    body: Buffer.from(JSON.stringify({ error: message })),
    entry: Buffer.from(JSON.stringify({ status, error: message })),
  });
}

/** A 400 of the lookup group whose message names what was wrong (a batch body's unknown field). */
export function lookupBadRequest(message: string): ApiError {
  return apiError(400, message);
}

export const ERRORS = Object.freeze({
  notAddress: apiError(400, 'not a valid IP address'),
  batchShape: apiError(400, 'body must be a JSON object whose ips member is an array of strings'),
  batchSize: apiError(400, 'ips must hold between 1 and 1000 addresses'),
  bodyTooLarge: apiError(413, 'request body too large'),
  keyInvalid: apiError(401, 'invalid API key'),
  keyRevoked: apiError(401, 'API key revoked'),
  keyExpired: apiError(401, 'API key expired'),
  keyRequired: apiError(401, 'an API key is required'),
  /** `at` asked of a key whose plan keeps no history (decisions.md: scale and max keep it). */
  historyNotInPlan: apiError(403, 'lookups as of a time (at) are not in this plan: the scale and max plans include them'),
  sourceNotAllowed: apiError(403, 'source address not allowed for this API key'),
  rateLimited: apiError(429, 'rate limit exceeded'),
  keylessCap: apiError(429, 'daily limit for unauthenticated requests exceeded; use an API key'),
  allowanceSpent: apiError(429, 'request allowance exceeded; raise or remove your overage limit'),
  usageUnavailable: apiError(503, 'usage is temporarily unavailable'),
  /** A store the request needs (the control database) cannot be reached now; with Retry-After. */
  unavailable: apiError(503, 'service temporarily unavailable'),
  lookupFailed: apiError(500, 'lookup failed'),
  notFound: apiError(404, 'not found'),
  methodNotAllowed: apiError(405, 'method not allowed'),
  // Refused by the HTTP parser, before any route (node:http; uWS drops such requests).
  malformedRequest: apiError(400, 'malformed request'),
  requestTimeout: apiError(408, 'request head not received in time'),
  headersTooLarge: apiError(431, 'request headers too large'),
});

function rcError(status: number, code: string): RcError {
  return Object.freeze({ status, statusLine: statusLine(status), code, body: Buffer.from(JSON.stringify({ rc: code })) });
}

/** Result codes (DESIGN.md §6) with their statuses (interface.md §7 rule 3). */
export const RC = Object.freeze({
  BAD_REQUEST: rcError(400, 'BAD_REQUEST'),
  UNAUTHORIZED: rcError(401, 'UNAUTHORIZED'),
  FORBIDDEN: rcError(403, 'FORBIDDEN'),
  NOT_FOUND: rcError(404, 'NOT_FOUND'),
  /** The admin API: the subject's state forbids the change (rotating a revoked key). */
  CONFLICT: rcError(409, 'CONFLICT'),
  /** The organisation holds as many live keys as it may (MAX_KEYS_PER_ORG). */
  KEY_LIMIT: rcError(409, 'KEY_LIMIT'),
  /** Key changes come faster than KEY_CHANGES_PER_MIN; with Retry-After. */
  RATE_LIMITED: rcError(429, 'RATE_LIMITED'),
  FORMAT_NOT_BUILT: rcError(400, 'FORMAT_NOT_BUILT'),
  NO_LICENSE: rcError(403, 'NO_LICENSE'),
  LICENSE_EXPIRED: rcError(403, 'LICENSE_EXPIRED'),
  NOT_PUBLISHED: rcError(503, 'NOT_PUBLISHED'),
  INTERNAL: rcError(500, 'INTERNAL'),
  /** The server's own failure, told as temporary: a store it needs cannot be reached now. */
  UNAVAILABLE: rcError(503, 'INTERNAL'),
  /** A Range outside the file (/files): the request's fault, told by its status. */
  RANGE_NOT_SATISFIABLE: rcError(416, 'BAD_REQUEST'),
  /** The admin API: a known path, another method (with Allow). */
  METHOD_NOT_ALLOWED: rcError(405, 'BAD_REQUEST'),
});

export type RcCode = Exclude<keyof typeof RC, 'RANGE_NOT_SATISFIABLE' | 'UNAVAILABLE' | 'METHOD_NOT_ALLOWED'>;

/** `<code> <reason>`; RFC 9112 keeps the space after the code even where the reason is empty. */
export function statusLine(status: number): string {
  return `${status} ${REASONS[status] ?? ''}`;
}

/** When each lookup-group error is answered, and what the client can do: the error catalogue in the docs. */
export const ERROR_HELP: Readonly<Record<keyof typeof ERRORS, string>> = Object.freeze({
  notAddress:
    'The path of `GET /{ip}` is not an IPv4 or IPv6 address (in a batch: that entry). Send a dotted quad or a textual IPv6 address, without brackets, port or zone.',
  batchShape: 'The body of `POST /batch` is not `{"ips": [...]}` with strings in the array.',
  batchSize: 'A batch holds no address or more than 1 000. Split larger lists.',
  bodyTooLarge: 'The body is larger than MAX_BATCH_BODY_BYTES (512 KiB by default). 1 000 addresses fit well within it.',
  keyInvalid: 'No key or token has this secret. Check for a copy-paste cut, or make a new key.',
  keyRevoked: 'The key was revoked (or rotated: the old secret ends). Use its replacement.',
  keyExpired: 'The key or token is past its expiry. Make a new token from the key, or a new key.',
  keyRequired: '`GET /api/v1/account/me`, and a lookup as of a time (`at`), need a key. Send `Authorization: Bearer <key>` or `X-Api-Key: <key>`.',
  historyNotInPlan:
    'A lookup as of a time (`at`) was asked with a key whose plan keeps no history. The scale and max plans include it; ask without `at` for the answer of now.',
  sourceNotAllowed: "The caller's address is outside the key's allowed networks. Call from an allowed network or change the key's `allowed_cidrs`.",
  rateLimited:
    "The key's (or keyless source's) rate bucket is empty, or the batch queue is full. Wait for `Retry-After` seconds; the `RateLimit` header says when the bucket refills.",
  keylessCap: 'A keyless source has spent its daily lookups. Use an API key.',
  allowanceSpent: "The organisation's overage limit is reached for this month. Raise or remove the limit, or wait for the next month.",
  usageUnavailable: 'The accounting store cannot be read now, so usage cannot be shown. Retry shortly.',
  unavailable: 'A store the request needs (the control database) cannot be reached now. Retry after `Retry-After` seconds.',
  lookupFailed: 'The server failed while answering. It is logged with the request; retry, and report it if it persists.',
  notFound: 'No route has this path.',
  methodNotAllowed: 'The path exists but not with this method; the `Allow` header lists the methods it takes.',
  malformedRequest: 'The request is not valid HTTP/1.1 (a bad request line, header or framing). Fix the client.',
  requestTimeout: 'The request head did not arrive in time. Fix the client or the network path.',
  headersTooLarge: 'The request headers are larger than the server takes. Send fewer or smaller headers.',
});

/** When each result code is answered, and what the client can do. */
export const RC_HELP: Readonly<Record<keyof typeof RC, string>> = Object.freeze({
  BAD_REQUEST: 'A parameter or body field is missing or invalid; the `message` names it and the rule.',
  UNAUTHORIZED:
    'No key, an unknown, revoked or expired key, or a key without the scope the route needs (`db.download` for databases, `apikeys.manage` for keys); the `message` says which.',
  FORBIDDEN: "The caller's address is outside the key's allowed networks, or a download link is unknown, altered or expired.",
  NOT_FOUND: 'No database, key or organisation has this id.',
  CONFLICT: "The admin API: the subject's state forbids the change (rotating a revoked key, a key past MAX_KEYS_PER_ORG); the `message` says which.",
  KEY_LIMIT: 'The organisation holds as many live keys as it may (MAX_KEYS_PER_ORG). Revoke keys it no longer uses.',
  RATE_LIMITED: 'Key changes or key listings come faster than the organisation may make them (KEY_CHANGES_PER_MIN). Wait for `Retry-After` seconds.',
  FORMAT_NOT_BUILT: 'The database is not built in this format. The catalogue (`/api/v1/database/list`) lists the formats of each database.',
  NO_LICENSE: 'The organisation holds no licence for this database. Ask the operator for one.',
  LICENSE_EXPIRED: "The organisation's licence for this database has ended. Ask the operator to renew it.",
  NOT_PUBLISHED: "Today's copy of the database is not published yet. Retry after `Retry-After` seconds.",
  INTERNAL: 'The server failed while answering. It is logged; retry, and report it if it persists.',
  UNAVAILABLE: 'Answered as `INTERNAL` with 503 and `Retry-After`: a store the request needs cannot be reached now.',
  RANGE_NOT_SATISFIABLE: 'Answered as `BAD_REQUEST` with 416: the `Range` lies outside the file; `Content-Range` gives its size.',
  METHOD_NOT_ALLOWED: 'Answered as `BAD_REQUEST` with 405 on the admin port: the path exists but not with this method; `Allow` lists the methods it takes.',
});
