// The last day of the public port's traffic, for the operator's console: every period, the
// counters the server keeps anyway (metrics.ts) are read and the difference since the last
// reading is kept as one sample. Nothing is added to the request path: a sample costs one
// read of the summed counters every 10 s, and the day is 8 640 small objects.
//
// The samples outlive a restart in a ring file of fixed size (history-file.ts): a sample goes
// to the slot its time names, so the file never grows and needs no index. The console asks for
// a window (1 h, 6 h, 24 h) and gets at most WINDOW_POINTS points, periods merged to fit.

import { type Clock, every, systemClock } from '../clock.js';
import type { Logger } from '../log.js';
import { HistoryFile, type TrafficSample } from './history-file.js';
import { FAMILIES, LATENCY_BOUNDS, type Metrics } from './metrics.js';

export type { TrafficSample } from './history-file.js';

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

/** The windows the console offers, and how long each is. */
export const WINDOWS = { '1h': 3_600_000, '6h': 6 * 3_600_000, '24h': 24 * 3_600_000 } as const;
export type HistoryWindow = keyof typeof WINDOWS;
/** Points a window answers at most: periods are merged (rates averaged, p50 averaged, p99 the worst) to fit. */
export const WINDOW_POINTS = 360;

export interface HistoryOptions {
  /** One sample every periodMs (10 s). */
  periodMs?: number;
  /** Samples kept (a day of them). */
  keep?: number;
  /** The ring file that keeps them across restarts (null: memory only). */
  file?: string | null;
  log?: Logger;
}

/** A window's points: the period each stands for, and the points, oldest first. */
export interface HistoryView {
  window: HistoryWindow;
  period_s: number;
  samples: TrafficSample[];
}

/** One route family's traffic over a window: requests, their rate, and latency quantiles. */
export interface RouteTraffic {
  family: string;
  requests: number;
  per_s: number;
  p50_ms: number | null;
  p99_ms: number | null;
}

/** How often the per-family counters are kept for the route table (a day of them is 1 440). */
const ROUTE_SNAPSHOT_MS = 60_000;

export class MetricsHistory {
  /** Samples with their time, oldest first. */
  private readonly kept: { atMs: number; sample: TrafficSample }[] = [];
  /** Each family's cumulative histogram once a minute (this process only), oldest first. */
  private readonly snapshots: { atMs: number; histograms: number[][] }[] = [];
  private last: Reading | null = null;
  readonly periodMs: number;
  readonly keep: number;
  private readonly file: HistoryFile | null;

  /** `read`: the counters summed over every front-end thread. */
  constructor(
    private readonly read: () => Metrics,
    o: HistoryOptions = {},
  ) {
    this.periodMs = o.periodMs ?? 10_000;
    this.keep = o.keep ?? 8640;
    this.file = o.file ? HistoryFile.open(o.file, this.periodMs, this.keep, o.log) : null;
  }

  /** Reads the counters now; from the second reading on, keeps the period's sample. */
  sample(nowMs: number): void {
    const m = this.read();
    const reading: Reading = { atMs: nowMs, statuses: m.responses(), histograms: FAMILIES.map((_, f) => m.histogram(f).cumulative) };
    const last = this.last;
    this.last = reading;
    const newest = this.snapshots[this.snapshots.length - 1];
    if (newest === undefined || nowMs - newest.atMs >= ROUTE_SNAPSHOT_MS) {
      this.snapshots.push({ atMs: nowMs, histograms: reading.histograms });
      while (this.snapshots.length > 1 && this.snapshots[0].atMs < nowMs - WINDOWS['24h'] - ROUTE_SNAPSHOT_MS) this.snapshots.shift();
    }
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
    const sample: TrafficSample = {
      at: new Date(nowMs).toISOString(),
      requests_per_s: rate(requests),
      client_errors_per_s: rate(client),
      rate_limited_per_s: rate(limited),
      server_errors_per_s: rate(server),
      lookup_p50_ms: ms(quantileMs(last.histograms[LOOKUP], reading.histograms[LOOKUP], 0.5)),
      lookup_p99_ms: ms(quantileMs(last.histograms[LOOKUP], reading.histograms[LOOKUP], 0.99)),
      batch_p99_ms: ms(quantileMs(last.histograms[BATCH], reading.histograms[BATCH], 0.99)),
    };
    this.kept.push({ atMs: nowMs, sample });
    this.file?.write(nowMs, sample);
    this.prune(nowMs);
  }

  /** Drops what is older than `keep` periods, or beyond `keep` samples. */
  private prune(nowMs: number): void {
    const oldest = nowMs - this.keep * this.periodMs;
    let drop = 0;
    while (drop < this.kept.length && (this.kept[drop].atMs <= oldest || this.kept.length - drop > this.keep)) drop++;
    if (drop > 0) this.kept.splice(0, drop);
  }

  /** Takes up what the ring file kept, then samples every period from now on, until the returned function is called. */
  start(clock: Clock = systemClock): () => void {
    const now = clock.now;
    if (this.file) {
      const nowMs = now();
      for (const k of this.file.read()) if (k.atMs < nowMs) this.kept.push(k);
      this.kept.sort((a, b) => a.atMs - b.atMs);
      this.prune(nowMs);
    }
    this.sample(now());
    const timer = every(clock, this.periodMs, () => this.sample(now()));
    return () => {
      timer.cancel();
      this.file?.close();
    };
  }

  /** Stops writing the ring file (a history that was never started). */
  close(): void {
    this.file?.close();
  }

  /** The samples kept, oldest first. */
  samples(): readonly TrafficSample[] {
    return this.kept.map((k) => k.sample);
  }

  /**
   * Traffic per route family over the last `window` (or since this process started, where it
   * is younger), from the counters read at the last sample: the busiest first.
   */
  routes(window: HistoryWindow, nowMs: number): RouteTraffic[] {
    const latest = this.last;
    if (latest === null) return [];
    const from = nowMs - WINDOWS[window];
    const base = this.snapshots.find((x) => x.atMs >= from) ?? this.snapshots[0];
    const seconds = Math.max(1, (latest.atMs - base.atMs) / 1000);
    const ms = (v: number | null): number | null => (v === null ? null : Math.round(v * 1000) / 1000);
    return FAMILIES.map((family, f) => {
      const before = base.histograms[f];
      const after = latest.histograms[f];
      const requests = after[after.length - 1] - before[before.length - 1];
      return {
        family,
        requests,
        per_s: Math.round((requests / seconds) * 100) / 100,
        p50_ms: ms(quantileMs(before, after, 0.5)),
        p99_ms: ms(quantileMs(before, after, 0.99)),
      };
    }).sort((a, b) => b.requests - a.requests);
  }

  /** The last `window` up to nowMs, in WINDOW_POINTS points at most. */
  view(window: HistoryWindow, nowMs: number): HistoryView {
    const from = nowMs - WINDOWS[window];
    const merge = Math.max(1, Math.ceil(WINDOWS[window] / this.periodMs / WINDOW_POINTS));
    const spanMs = merge * this.periodMs;
    const out: TrafficSample[] = [];
    let group: TrafficSample[] = [];
    let groupKey = Number.NaN;
    const flush = (): void => {
      if (group.length) out.push(merged(group));
      group = [];
    };
    for (const k of this.kept) {
      if (k.atMs <= from || k.atMs > nowMs) continue;
      const key = Math.floor((k.atMs - 1) / spanMs); // a period's end on a boundary closes the span before it
      if (key !== groupKey) flush(), (groupKey = key);
      group.push(k.sample);
    }
    flush();
    return { window, period_s: spanMs / 1000, samples: out };
  }
}

/** Periods merged into one point: rates and p50 averaged, p99 the worst, at the last one's end. */
function merged(g: TrafficSample[]): TrafficSample {
  if (g.length === 1) return g[0];
  const mean = (f: (s: TrafficSample) => number): number => Math.round((g.reduce((a, s) => a + f(s), 0) / g.length) * 100) / 100;
  const present = (f: (s: TrafficSample) => number | null): number[] => g.map(f).filter((v): v is number => v !== null);
  const p50 = present((s) => s.lookup_p50_ms);
  const worst = (f: (s: TrafficSample) => number | null): number | null => {
    const v = present(f);
    return v.length ? Math.max(...v) : null;
  };
  return {
    at: g[g.length - 1].at,
    requests_per_s: mean((s) => s.requests_per_s),
    client_errors_per_s: mean((s) => s.client_errors_per_s),
    rate_limited_per_s: mean((s) => s.rate_limited_per_s),
    server_errors_per_s: mean((s) => s.server_errors_per_s),
    lookup_p50_ms: p50.length ? Math.round((p50.reduce((a, b) => a + b, 0) / p50.length) * 1000) / 1000 : null,
    lookup_p99_ms: worst((s) => s.lookup_p99_ms),
    batch_p99_ms: worst((s) => s.batch_p99_ms),
  };
}
