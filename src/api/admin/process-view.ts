// The process as the console's overview shows it: memory, CPU, open files, the batch pool and
// each front-end thread's event-loop delay, from the same readings /metrics exposes.

import type { BatchPool } from '../../batch/pool.js';
import type { Metrics } from '../../http/metrics.js';
import { openFds } from './metrics-text.js';

export interface ProcessView {
  rss_bytes: number;
  heap_used_bytes: number;
  external_bytes: number;
  cpu_seconds: number;
  /** Cores' worth of CPU the process used over the last reading's span (at least 1 s); null before one. */
  cpu_cores: number | null;
  open_fds: number | null;
  batch: { workers: number; running: number; queued: number; utilization: number };
  threads: { thread: number; loop_delay_ms: { p50: number; p99: number; max: number } }[];
}

export class ProcessReadings {
  private last: { atMs: number; cpuS: number } | null = null;
  private cores: number | null = null;

  constructor(
    private readonly pool: BatchPool,
    /** Each front-end thread's counters, in thread order. */
    private readonly threads: () => readonly Metrics[],
    private readonly now: () => number = Date.now,
  ) {}

  read(): ProcessView {
    const cpu = process.cpuUsage();
    const cpuS = (cpu.user + cpu.system) / 1e6;
    const atMs = this.now();
    // A rate needs a span: readings closer than a second keep the last rate.
    if (this.last === null || atMs - this.last.atMs >= 1000) {
      if (this.last !== null) this.cores = (cpuS - this.last.cpuS) / ((atMs - this.last.atMs) / 1000);
      this.last = { atMs, cpuS };
    }
    const mem = process.memoryUsage();
    const ms = (s: number): number => Math.round(s * 1e5) / 100;
    return {
      rss_bytes: mem.rss,
      heap_used_bytes: mem.heapUsed,
      external_bytes: mem.external,
      cpu_seconds: Math.round(cpuS * 100) / 100,
      cpu_cores: this.cores === null ? null : Math.round(this.cores * 100) / 100,
      open_fds: openFds(),
      batch: {
        workers: this.pool.workers.length,
        running: this.pool.running,
        queued: this.pool.queued,
        utilization: Math.round(this.pool.utilization * 1000) / 1000,
      },
      threads: this.threads().map((m, thread) => {
        const d = m.loopDelay;
        return { thread, loop_delay_ms: { p50: ms(d.p50), p99: ms(d.p99), max: ms(d.max) } };
      }),
    };
  }
}
