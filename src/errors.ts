// The base of every error ipsift raises on purpose: a stable code for programs, a message for
// people (what went wrong and, where there is one, the fix), and the underlying cause. The
// CLI prints these as one line; anything else that escapes is a bug and keeps its stack.

export class IpsiftError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * A store a request needs cannot be reached now (Redis, PostgreSQL): the request is answered
 * 503 with Retry-After by the one error path (http/routes.ts), never 500.
 */
export class Unavailable extends IpsiftError {}

/** The message of anything thrown, for logs and one-line reports. */
export function reasonOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
