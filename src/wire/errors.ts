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

export const ERRORS = Object.freeze({
  notAddress: apiError(400, 'not a valid IP address'),
  batchShape: apiError(400, 'body must be a JSON object whose ips member is an array of strings'),
  batchSize: apiError(400, 'ips must hold between 1 and 1000 addresses'),
  bodyTooLarge: apiError(413, 'request body too large'),
  keyInvalid: apiError(401, 'invalid API key'),
  keyRevoked: apiError(401, 'API key revoked'),
  keyExpired: apiError(401, 'API key expired'),
  keyRequired: apiError(401, 'an API key is required'),
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
});

export type RcCode = Exclude<keyof typeof RC, 'RANGE_NOT_SATISFIABLE' | 'UNAVAILABLE'>;

export function statusLine(status: number): string {
  return `${status} ${REASONS[status] ?? ''}`.trimEnd();
}
