// The error catalogue of the lookup group (interface.md §7): status line and exact message,
// with the JSON body prebuilt once.

export interface ApiError {
  readonly status: number;
  /** Status line for uWebSockets.js writeStatus. */
  readonly statusLine: string;
  readonly message: string;
  /** {"error":"<message>"} */
  readonly body: Buffer;
  /** {"status":N,"error":"<message>"}: a batch errors entry. */
  readonly entry: Buffer;
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  413: 'Payload Too Large',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

function apiError(status: number, message: string): ApiError {
  return Object.freeze({
    status,
    statusLine: `${status} ${REASONS[status]}`,
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
  lookupFailed: apiError(500, 'lookup failed'),
  notFound: apiError(404, 'not found'),
  methodNotAllowed: apiError(405, 'method not allowed'),
  internal: apiError(500, 'internal error'),
});

export function statusLine(status: number): string {
  return `${status} ${REASONS[status] ?? ''}`.trimEnd();
}
