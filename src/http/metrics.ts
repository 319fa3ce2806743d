// Counters for the admin port's Prometheus endpoint. Each front-end thread counts into its
// own shared memory, so the admin thread sums every thread's counters without asking them;
// the hot path only adds to a typed array.

import { monitorEventLoopDelay } from 'node:perf_hooks';

const LOOKUPS = 0;
const BATCHES = 1;
const IN_FLIGHT = 2;
const HANDLER_FAILURES = 3;
/** The thread's event-loop delay over the last period, in seconds: median, 99th percentile, max. */
const LOOP_DELAY = 4;
/** Answers by status from here: slot STATUS_BASE + status - 100, for statuses 100–599. */
const STATUS_BASE = 8;

/** Route families timed for the latency histograms (RouteOptions.family). */
export const FAMILIES = ['lookup', 'batch', 'account', 'database', 'files'] as const;
export type Family = (typeof FAMILIES)[number];

/**
 * Upper bounds of the latency buckets, in seconds: from a single lookup's ten microseconds
 * to a slow download's seconds.
 */
export const LATENCY_BOUNDS = [0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Per family: a count per bucket (not cumulative; the last is +Inf), then the sum of seconds. */
const FAMILY_SLOTS = LATENCY_BOUNDS.length + 2;
const HISTOGRAM_BASE = STATUS_BASE + 500;
const SLOTS = HISTOGRAM_BASE + FAMILIES.length * FAMILY_SLOTS;

/** How often a thread's event-loop delay figures are renewed, and the monitor's timer. */
const LOOP_PERIOD_MS = 5000;
const LOOP_RESOLUTION_MS = 10;

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

  /** Records how long a request of a family took (`family`: its index in FAMILIES). */
  observe(family: number, seconds: number): void {
    const base = HISTOGRAM_BASE + family * FAMILY_SLOTS;
    let b = 0;
    while (b < LATENCY_BOUNDS.length && seconds > LATENCY_BOUNDS[b]) b++;
    this.c[base + b]++;
    this.c[base + FAMILY_SLOTS - 1] += seconds;
  }

  /** A family's histogram: cumulative counts per bound (the last is +Inf, the count), and the sum. */
  histogram(family: number): { cumulative: number[]; sum: number } {
    const base = HISTOGRAM_BASE + family * FAMILY_SLOTS;
    const cumulative: number[] = [];
    let n = 0;
    for (let b = 0; b <= LATENCY_BOUNDS.length; b++) cumulative.push((n += this.c[base + b]));
    return { cumulative, sum: this.c[base + FAMILY_SLOTS - 1] };
  }

  /** The thread's event-loop delay (seconds) over the last period; zeros before the first. */
  get loopDelay(): { p50: number; p99: number; max: number } {
    return { p50: this.c[LOOP_DELAY], p99: this.c[LOOP_DELAY + 1], max: this.c[LOOP_DELAY + 2] };
  }

  /**
   * Measures the calling thread's event-loop delay into these counters until the returned
   * function is called (where the runtime can measure it; Bun has no loop-delay monitor).
   */
  watchEventLoop(): () => void {
    let h: ReturnType<typeof monitorEventLoopDelay>;
    try {
      h = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
      h.enable();
    } catch {
      return () => {};
    }
    const timer = setInterval(() => {
      // Nanoseconds, each sample the whole wait of a timer of the resolution's length: the delay
      // is what exceeds it. A period with no sample reads as zero, not as the histogram's sentinel.
      const ok = h.count > 0;
      const delay = (ns: number): number => (ok ? Math.max(0, ns / 1e9 - LOOP_RESOLUTION_MS / 1000) : 0);
      this.c[LOOP_DELAY] = delay(h.percentile(50));
      this.c[LOOP_DELAY + 1] = delay(h.percentile(99));
      this.c[LOOP_DELAY + 2] = delay(h.max);
      h.reset();
    }, LOOP_PERIOD_MS);
    timer.unref();
    return () => {
      clearInterval(timer);
      h.disable();
    };
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
