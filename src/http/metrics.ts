// Counters for the admin port's Prometheus endpoint. Plain fields: the hot path only adds.

export class Metrics {
  lookups = 0;
  batches = 0;
  private readonly byStatus = new Map<number, number>();
  private okSingles = 0;

  count(status: number): void {
    if (status === 200) {
      this.okSingles++;
      return;
    }
    this.byStatus.set(status, (this.byStatus.get(status) ?? 0) + 1);
  }

  /** Responses by status, with single-lookup 200s folded in. */
  responses(): Map<number, number> {
    const all = new Map(this.byStatus);
    all.set(200, this.okSingles + this.lookups);
    return all;
  }
}
