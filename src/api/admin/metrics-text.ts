// The admin port's /metrics in the Prometheus text format (version 0.0.4): the lookup group's
// answers, latency histograms per route family, the batch pool, the index being served and how
// old it is, each front-end thread's event loop, the process, and what this ipsift is.

import fs from 'node:fs';
import type { FollowerState } from '../../replica/index-replica.js';
import type { BatchPool } from '../../batch/pool.js';
import type { IndexHolder } from '../../index/loader.js';
import { RUNTIME, VERSION } from '../../version.js';
import type { SourceStatus } from '../../feeds/source-state.js';
import { FAMILIES, LATENCY_BOUNDS, type Metrics } from '../../http/metrics.js';

export interface MetricsView {
  holder: IndexHolder;
  pool: BatchPool;
  /** Every front-end thread's counters, summed. */
  metrics: Metrics;
  /** Each front-end thread's own counters (null: one front end, `metrics`). */
  threads: readonly Metrics[] | null;
  serverKind: string;
  lastPublishedAt(): Date | null;
  /** A serving node's view of the builds published to the store (null: not a follower). */
  replica?: FollowerState | null;
  /** The configured sources (null: none). */
  sources?: readonly SourceStatus[] | null;
  /** What the threads answered from memory while the accounting store refused writes (null: not known here). */
  owed?: OwedReading | null;
}

/** The accounting store's debt: counters and units answered from memory, not yet written. */
export interface OwedReading {
  counters: number;
  units: number;
}

/** A label value as the text format quotes it. */
const label = (v: string): string => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

const seconds = (d: Date | null | undefined): number => (d ? d.getTime() / 1000 : 0);

/** Open file descriptors of the process (null where /proc is not there). */
export function openFds(): number | null {
  try {
    return fs.readdirSync('/proc/self/fd').length;
  } catch {
    return null;
  }
}

/** When the process started (Unix ms): process_start_time_seconds, and the console's overview. */
export const PROCESS_STARTED_MS = Date.now() - process.uptime() * 1000;

export function metricsText(v: MetricsView): string {
  const s = v.holder.current;
  const m = v.metrics;
  const out: string[] = [];
  const family = (name: string, type: string, help: string, samples: readonly string[]): void => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples);
  };
  family('ipsift_build_info', 'gauge', 'What this ipsift is: version, runtime and HTTP server (always 1).', [
    `ipsift_build_info{version="${label(VERSION)}",runtime="${label(RUNTIME)}",http_server="${label(v.serverKind)}"} 1`,
  ]);
  family(
    'ipsift_responses_total',
    'counter',
    'Lookup-group responses by HTTP status.',
    [...m.responses()].map(([status, n]) => `ipsift_responses_total{status="${status}"} ${n}`),
  );
  family('ipsift_batches_total', 'counter', 'Batches answered with 200.', [`ipsift_batches_total ${m.batches}`]);
  const latency: string[] = [];
  FAMILIES.forEach((name, f) => {
    const h = m.histogram(f);
    for (const [b, le] of LATENCY_BOUNDS.entries()) latency.push(`ipsift_request_duration_seconds_bucket{family="${name}",le="${le}"} ${h.cumulative[b]}`);
    const count = h.cumulative[LATENCY_BOUNDS.length];
    latency.push(
      `ipsift_request_duration_seconds_bucket{family="${name}",le="+Inf"} ${count}`,
      `ipsift_request_duration_seconds_sum{family="${name}"} ${h.sum}`,
      `ipsift_request_duration_seconds_count{family="${name}"} ${count}`,
    );
  });
  family(
    'ipsift_request_duration_seconds',
    'histogram',
    'Time from a request reaching its route to its answer being handed to the server, by route family (lookup: GET /{ip} and /myip; files: until the last byte is handed over). Requests the client abandoned are not counted.',
    latency,
  );
  family('ipsift_index_generation', 'gauge', 'Serving index generation (0: none loaded).', [`ipsift_index_generation ${s?.generation ?? 0}`]);
  family('ipsift_index_bytes', 'gauge', 'Size of the shared serving index.', [`ipsift_index_bytes ${s?.shared.byteLength ?? 0}`]);
  family('ipsift_index_build_timestamp_seconds', 'gauge', 'When the serving build was made (Unix time; 0: none loaded). Its age is time() minus this.', [
    `ipsift_index_build_timestamp_seconds ${seconds(s?.builtAt)}`,
  ]);
  family('ipsift_index_loaded_timestamp_seconds', 'gauge', 'When the serving build was loaded (Unix time; 0: none).', [
    `ipsift_index_loaded_timestamp_seconds ${seconds(s?.loadedAt)}`,
  ]);
  family('ipsift_last_publish_timestamp_seconds', 'gauge', 'When a database export was last published (Unix time; 0: never).', [
    `ipsift_last_publish_timestamp_seconds ${seconds(v.lastPublishedAt())}`,
  ]);
  if (v.owed) {
    family(
      'ipsift_accounting_owed_counters',
      'gauge',
      'Counters answered from memory while the accounting store refused writes, not yet written to it (0: the store takes writes; above 0: degraded, within ACCOUNTING_GRACE_S).',
      [`ipsift_accounting_owed_counters ${v.owed.counters}`],
    );
    family('ipsift_accounting_owed_units', 'gauge', 'Units (requests, batch entries) answered from memory and not yet written to the accounting store.', [
      `ipsift_accounting_owed_units ${v.owed.units}`,
    ]);
  }
  if (v.replica) {
    const r = v.replica;
    family(
      'ipsift_replica_in_sync',
      'gauge',
      'Whether this serving node serves the build published to the store (ROLE=serve; 0 while fetching, or when the published build failed its check).',
      [`ipsift_replica_in_sync ${r.published !== null && r.published === s?.buildId ? 1 : 0}`],
    );
    family('ipsift_replica_check_timestamp_seconds', 'gauge', "When this serving node last read the store's pointer (Unix time; 0: never).", [
      `ipsift_replica_check_timestamp_seconds ${seconds(r.checkedAt)}`,
    ]);
  }
  if (v.sources) {
    const src = v.sources;
    family(
      'ipsift_source_age_seconds',
      'gauge',
      "Seconds since each source's good copy was last confirmed (fetched, or answered 304); absent: never fetched.",
      src.filter((x) => x.age_s !== null).map((x) => `ipsift_source_age_seconds{source="${label(x.name)}"} ${x.age_s}`),
    );
    family(
      'ipsift_source_content_age_seconds',
      'gauge',
      "Seconds since each source's content last changed (a new body; the same bytes with a new Last-Modified are not a change); absent: no content yet.",
      src.filter((x) => x.content_age_s !== null).map((x) => `ipsift_source_content_age_seconds{source="${label(x.name)}"} ${x.content_age_s}`),
    );
    family(
      'ipsift_source_max_age_seconds',
      'gauge',
      "How long each source's content may go unchanged before it is stale (its claims fall a band; past twice this they stop counting); absent: no limit.",
      src.filter((x) => x.max_age_s !== null).map((x) => `ipsift_source_max_age_seconds{source="${label(x.name)}"} ${x.max_age_s}`),
    );
    family(
      'ipsift_source_entries',
      'gauge',
      "Entries of each source's copy that answers (0: none).",
      src.map((x) => `ipsift_source_entries{source="${label(x.name)}"} ${x.entries}`),
    );
    family(
      'ipsift_source_state',
      'gauge',
      "Each source's state, 1 on its current one: ok, stale (content unchanged past its max_age, or not confirmed within two intervals), expired (content unchanged past twice its max_age: its claims no longer count), refused (bad data, the last good copy answers), failed, never, disabled (set aside by an operator: neither fetched nor built from).",
      src.map((x) => `ipsift_source_state{source="${label(x.name)}",state="${x.state}"} 1`),
    );
  }
  family('ipsift_batch_queue', 'gauge', 'Batches waiting for a worker.', [`ipsift_batch_queue ${v.pool.queued}`]);
  family('ipsift_batch_worker_failures_total', 'counter', 'Batch attempts lost to a failed worker.', [
    `ipsift_batch_worker_failures_total ${v.pool.workerFailures}`,
  ]);
  family('ipsift_batch_body_bytes', 'gauge', 'Bytes held by batch bodies being received.', [`ipsift_batch_body_bytes ${m.bodyMemory?.held ?? 0}`]);
  family('ipsift_handler_failures_total', 'counter', 'Requests whose handler failed unexpectedly (answered 500).', [
    `ipsift_handler_failures_total ${m.handlerFailures}`,
  ]);
  const threads = v.threads ?? [m];
  family(
    'ipsift_frontend_thread_responses_total',
    'counter',
    'Lookup-group responses by front-end thread (how evenly connections spread).',
    threads.map((t, n) => `ipsift_frontend_thread_responses_total{thread="${n}"} ${[...t.responses().values()].reduce((a, b) => a + b, 0)}`),
  );
  family(
    'ipsift_event_loop_delay_seconds',
    'gauge',
    "Each front-end thread's event-loop delay over the last 5 s: median, 99th percentile and max (0 before the first period, and on Bun).",
    threads.flatMap((t, n) => {
      const d = t.loopDelay;
      return [
        `ipsift_event_loop_delay_seconds{thread="${n}",quantile="0.5"} ${d.p50}`,
        `ipsift_event_loop_delay_seconds{thread="${n}",quantile="0.99"} ${d.p99}`,
        `ipsift_event_loop_delay_seconds{thread="${n}",quantile="1"} ${d.max}`,
      ];
    }),
  );
  const cpu = process.cpuUsage();
  const mem = process.memoryUsage();
  family('process_cpu_seconds_total', 'counter', 'User and system CPU time of the process (every thread).', [
    `process_cpu_seconds_total ${(cpu.user + cpu.system) / 1e6}`,
  ]);
  family('process_resident_memory_bytes', 'gauge', 'Resident memory of the process.', [`process_resident_memory_bytes ${mem.rss}`]);
  family('process_start_time_seconds', 'gauge', 'When the process started (Unix time).', [
    `process_start_time_seconds ${Math.round(PROCESS_STARTED_MS / 1000)}`,
  ]);
  const fds = openFds();
  if (fds !== null) family('process_open_fds', 'gauge', 'Open file descriptors.', [`process_open_fds ${fds}`]);
  family('nodejs_heap_used_bytes', 'gauge', "The main thread's JavaScript heap in use.", [`nodejs_heap_used_bytes ${mem.heapUsed}`]);
  family('nodejs_external_memory_bytes', 'gauge', 'Memory held outside the JavaScript heaps (buffers, the shared index).', [
    `nodejs_external_memory_bytes ${mem.external}`,
  ]);
  return out.join('\n') + '\n';
}
