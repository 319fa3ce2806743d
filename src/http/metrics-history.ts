// The last hour of the public port's traffic, for the operator's console: every period, the
// counters the server keeps anyway (metrics.ts) are read and the difference since the last
// reading is kept as one sample. Nothing is added to the request path: a sample costs one
// read of the summed counters every 10 s, and the hour is 360 small objects.

import { FAMILIES, LATENCY_BOUNDS, type Metrics } from './metrics.js';

/** One period of traffic: rates per second and lookup latency percentiles in milliseconds. */
export interface TrafficSample {
  /** The end of the period (ISO 8601). */
  at: string;
  requests_per_s: number;
  /** 4xx other than 429: what clients got wrong. */
  client_errors_per_s: number;
  rate_limited_per_s: number;
  /** 5xx: what the service got wrong or could not do. */
  server_errors_per_s: number;
  /** Single lookups (GET /{ip}, /myip) answered in the period; null where there were none. */
  lookup_p50_ms: number | null;
  lookup_p99_ms: number | null;
  batch_p99_ms: number | null;
}

const LOOKUP = FAMILIES.indexOf('lookup');
const BATCH = FAMILIES.indexOf('batch');

/** What a sample needs of a reading of the counters. */
interface Reading {
  atMs: number;
  statuses: Map<number, number>;
  histograms: number[][];
}

/**
 * The `q` quantile (0..1) of the requests counted between two cumulative histograms, in
 * milliseconds: linear within the bucket it falls in, as Prometheus's histogram_quantile
 * does; the last bucket (beyond 10 s) reads as its lower bound.
 */
export function quantileMs(before: readonly number[], after: readonly number[], q: number): number | null {
  const total = after[after.length - 1] - before[before.length - 1];
  if (total <= 0) return null;
  const rank = q * total;
  let below = 0;
  for (let b = 0; b < after.length; b++) {
    const upTo = after[b] - before[b];
    if (upTo >= rank) {
      if (b >= LATENCY_BOUNDS.length) return LATENCY_BOUNDS[LATENCY_BOUNDS.length - 1] * 1000;
      const lower = b === 0 ? 0 : LATENCY_BOUNDS[b - 1];
      const inBucket = upTo - below;
      const share = inBucket === 0 ? 1 : (rank - below) / inBucket;
      return (lower + (LATENCY_BOUNDS[b] - lower) * share) * 1000;
    }
    below = upTo;
  }
  return null;
}

export class MetricsHistory {
  private readonly kept: TrafficSample[] = [];
  private last: Reading | null = null;

  /**
   * `read`: the counters summed over every front-end thread; `periodMs` and `keep`: one sample
   * every 10 s, an hour of them.
   */
  constructor(
    private readonly read: () => Metrics,
    readonly periodMs = 10_000,
    readonly keep = 360,
  ) {}

  /** Reads the counters now; from the second reading on, keeps the period's sample. */
  sample(nowMs: number): void {
    const m = this.read();
    const reading: Reading = { atMs: nowMs, statuses: m.responses(), histograms: FAMILIES.map((_, f) => m.histogram(f).cumulative) };
    const last = this.last;
    this.last = reading;
    if (last === null || nowMs <= last.atMs) return;
    const seconds = (nowMs - last.atMs) / 1000;
    let requests = 0;
    let client = 0;
    let limited = 0;
    let server = 0;
    for (const [status, n] of reading.statuses) {
      const d = n - (last.statuses.get(status) ?? 0);
      requests += d;
      if (status === 429) limited += d;
      else if (status >= 500) server += d;
      else if (status >= 400) client += d;
    }
    const rate = (n: number): number => Math.round((n / seconds) * 100) / 100;
    const ms = (v: number | null): number | null => (v === null ? null : Math.round(v * 1000) / 1000);
    this.kept.push({
      at: new Date(nowMs).toISOString(),
      requests_per_s: rate(requests),
      client_errors_per_s: rate(client),
      rate_limited_per_s: rate(limited),
      server_errors_per_s: rate(server),
      lookup_p50_ms: ms(quantileMs(last.histograms[LOOKUP], reading.histograms[LOOKUP], 0.5)),
      lookup_p99_ms: ms(quantileMs(last.histograms[LOOKUP], reading.histograms[LOOKUP], 0.99)),
      batch_p99_ms: ms(quantileMs(last.histograms[BATCH], reading.histograms[BATCH], 0.99)),
    });
    if (this.kept.length > this.keep) this.kept.shift();
  }

  /** Samples every period from now on, until the returned function is called. */
  start(now: () => number = Date.now): () => void {
    this.sample(now());
    const timer = setInterval(() => this.sample(now()), this.periodMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** The samples kept, oldest first. */
  samples(): readonly TrafficSample[] {
    return this.kept;
  }
}
