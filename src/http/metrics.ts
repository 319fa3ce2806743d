// Counters for the admin port's Prometheus endpoint. Each front-end thread counts into its
// own shared memory, so the admin thread sums every thread's counters without asking them;
// the hot path only adds to a typed array.

const LOOKUPS = 0;
const BATCHES = 1;
const IN_FLIGHT = 2;
const HANDLER_FAILURES = 3;
/** Answers by status from here: slot STATUS_BASE + status - 100, for statuses 100–599. */
const STATUS_BASE = 4;
const SLOTS = STATUS_BASE + 500;

export class Metrics {
  readonly shared: SharedArrayBuffer;
  private readonly c: Float64Array;
  /** Bytes held by batch bodies being received (set by the batch route). */
  bodyMemory: { readonly held: number } | null = null;

  constructor(shared = new SharedArrayBuffer(SLOTS * 8)) {
    this.shared = shared;
    this.c = new Float64Array(shared);
  }

  /** Single lookups answered 200 (GET /{ip}, /myip). */
  get lookups(): number {
    return this.c[LOOKUPS];
  }
  set lookups(n: number) {
    this.c[LOOKUPS] = n;
  }

  /** Batches answered 200. */
  get batches(): number {
    return this.c[BATCHES];
  }
  set batches(n: number) {
    this.c[BATCHES] = n;
  }

  /** Batches being received or answered (graceful shutdown waits for them). */
  get inFlight(): number {
    return this.c[IN_FLIGHT];
  }
  set inFlight(n: number) {
    this.c[IN_FLIGHT] = n;
  }

  /** Handlers that failed unexpectedly (the route guard answered 500). */
  get handlerFailures(): number {
    return this.c[HANDLER_FAILURES];
  }
  set handlerFailures(n: number) {
    this.c[HANDLER_FAILURES] = n;
  }

  /** Counts a non-200 answer; 200s are counted by the fields above. */
  count(status: number): void {
    if (status !== 200 && status >= 100 && status < 600) this.c[STATUS_BASE + status - 100]++;
  }

  responses(): Map<number, number> {
    const out = new Map([[200, this.lookups + this.batches]]);
    for (let s = 100; s < 600; s++) if (this.c[STATUS_BASE + s - 100] !== 0) out.set(s, this.c[STATUS_BASE + s - 100]);
    return out;
  }

  /** The counters of every thread added up (a copy; bodyMemory is the process's one budget). */
  static sum(parts: readonly Metrics[], bodyMemory: Metrics['bodyMemory']): Metrics {
    const total = new Metrics(new SharedArrayBuffer(SLOTS * 8));
    for (const p of parts) for (let i = 0; i < SLOTS; i++) total.c[i] += p.c[i];
    total.bodyMemory = bodyMemory;
    return total;
  }
}
