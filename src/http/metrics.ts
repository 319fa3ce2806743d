// Counters for the admin port's Prometheus endpoint. Plain fields: the hot path only adds.

export class Metrics {
  /** Single lookups answered 200 (GET /{ip}, /myip). */
  lookups = 0;
  /** Batches answered 200. */
  batches = 0;
  private readonly refusals = new Map<number, number>();
  /** Batches being received or answered (graceful shutdown waits for them). */
  inFlight = 0;
  /** Handlers that failed unexpectedly (the route guard answered 500). */
  handlerFailures = 0;
  /** Bytes held by batch bodies being received (set by the batch route). */
  bodyMemory: { held: number } | null = null;

  /** Counts a non-200 answer; 200s are counted by the fields above. */
  count(status: number): void {
    if (status !== 200) this.refusals.set(status, (this.refusals.get(status) ?? 0) + 1);
  }

  responses(): Map<number, number> {
    return new Map([[200, this.lookups + this.batches], ...this.refusals]);
  }
}
