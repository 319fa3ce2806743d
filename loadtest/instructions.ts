// The request paths in process, for counting their instructions under callgrind (issue #33;
// instruction-budget.ts runs it). Wall-clock benches on a shared machine cannot see a 1 %
// step; an instruction count can: the same work gives the same count whatever else runs.
//
// The real front end (startFrontEnd: route table, gate, accounting in LMDB, key cache in
// SQLite, lookup, answer bytes, JSON head) is started on a server whose app records the
// handlers, and each request is a call of the handler with a request and response that do
// what uWS does for them (hand out headers, take the body). Batches run the batch
// worker's function inline. Nothing waits on a timer, so no timer runs inside a measurement.
//
//   node dist/loadtest/instructions.js prepare DIR
//   node dist/loadtest/instructions.js run DIR WORKLOAD WARMUP N [STRETCHES]
//
// `run` marks each of its STRETCHES measured stretches of N requests with two native calls
// that nothing else makes: os.loadavg() (callgrind --zero-before=uv_loadavg) before it,
// os.getPriority() (--dump-before=uv_os_getpriority) after it; callgrind writes one dump each.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.js';
import { createKey, createOrganisation } from '../src/control/accounts.js';
import { openControlDb } from '../src/control/control-db.js';
import { loadPlans } from '../src/model/plans.js';
import { importFeed } from '../src/feeds/import.js';
import { runBuild } from '../src/build/build.js';
import { IndexHolder } from '../src/index/loader.js';
import { silentLogger } from '../src/log.js';
import { startFrontEnd } from '../src/frontend/front-end.js';
import { OwedTable } from '../src/accounting/owed-table.js';
import { OutputSlots } from '../src/batch/slots.js';
import type { BatchRunner } from '../src/batch/runner.js';
import type { BatchTask } from '../src/batch/protocol.js';
import type { Bytes, Handler, HttpApp, HttpRequest, HttpResponse, HttpServer } from '../src/http/server/types.js';
import { textOf } from '../src/http/server/bytes.js';
import { prng, writeFeedCsv } from '../scripts/gen-feeds.js';
import { valueSymbol } from 'piscina';
import answerBatchTask from '../workers/batch.js';
import { tuneV8 } from '../src/cli/v8-tuning.js';

export const WORKLOADS = ['keyed', 'keyless', 'batch', 'build', 'exports'] as const;
export type Workload = (typeof WORKLOADS)[number];

/** Ranges of the fixed feed the requests read (gen-feeds, seed 7): a realistic index depth, quick to build. */
export const FEED_RANGES = 50_000;
/** Ranges of the fixed feed the build workloads build (seed 8): small enough to export on the building thread. */
export const BUILD_RANGES = 1_000;
const BUILD_DATA = 'build-data';
export const KEY_FILE = 'bench-key.txt';
export const PLANS_FILE = 'bench-plans.json';

/** The fixed data: FEED_RANGES synthetic ranges built into an index, and a max-plan key. */
export function prepare(dir: string): void {
  fs.mkdirSync(dir, { recursive: true });
  const csv = path.join(dir, 'feed.csv');
  writeFeedCsv(csv, { ranges: FEED_RANGES, seed: 7 });
  importFeed({ dataDir: dir, file: csv, name: 'synthetic', allowLargeBlocks: true });
  fs.rmSync(csv);
  runBuild({ dataDir: dir, exports: false, now: new Date('2026-11-01T00:00:00Z') });
  const buildData = path.join(dir, BUILD_DATA);
  fs.mkdirSync(buildData);
  writeFeedCsv(csv, { ranges: BUILD_RANGES, seed: 8 });
  importFeed({ dataDir: buildData, file: csv, name: 'synthetic', allowLargeBlocks: true });
  fs.rmSync(csv);
  // Limits nothing here reaches: every request is answered and accounted as in production.
  const rate = { per_second: 1e9, burst: 1e9 };
  const plans = ['free', 'starter', 'scale', 'max'].map((tier) => ({ key: tier, tier, quota: 1e12, rate, hard_limit: null }));
  fs.writeFileSync(path.join(dir, PLANS_FILE), JSON.stringify({ keyless: { daily_cap: 1e12, rate }, plans }));
  const db = openControlDb(dir, null);
  try {
    const org = createOrganisation(db, loadPlans(path.join(dir, PLANS_FILE)), 'budget', 'max');
    fs.writeFileSync(path.join(dir, KEY_FILE), createKey(db, { orgId: org.id, name: 'budget' }).secret);
  } finally {
    db.close();
  }
}

/** The handlers the front end registers, by method and pattern. */
class RecordingApp implements HttpApp {
  readonly handlers = new Map<string, Handler>();
  private on(method: string, pattern: string, h: Handler): this {
    if (!this.handlers.has(`${method} ${pattern}`)) this.handlers.set(`${method} ${pattern}`, h);
    return this;
  }
  get = (p: string, h: Handler) => this.on('get', p, h);
  post = (p: string, h: Handler) => this.on('post', p, h);
  del = (p: string, h: Handler) => this.on('del', p, h);
  head = (p: string, h: Handler) => this.on('head', p, h);
  any = (p: string, h: Handler) => this.on('any', p, h);
  handler(method: string, pattern: string): Handler {
    const h = this.handlers.get(`${method} ${pattern}`);
    if (!h) throw new Error(`no ${method} ${pattern} route`);
    return h;
  }
}

const recordingServer = (app: RecordingApp): HttpServer => ({
  kind: 'uws',
  app: () => app,
  cannotSharePort: null,
  listen: async () => ({ port: 1, stop() {}, close() {}, unsent: () => 0 }),
});

/**
 * A string as a server hands it to JavaScript: flat (one-byte, sequential). A string built by
 * concatenation is a rope, which every charCodeAt would walk: a cost uWS never causes.
 */
const flat = (s: string): string => Buffer.from(s, 'latin1').toString('latin1');

/** A request as uWS hands it over: header lookups by lower-case name, a walk over all of them. */
class Request implements HttpRequest {
  url = '/';
  query: string | undefined = undefined;
  private readonly headers: [string, string][];
  constructor(
    private readonly method: string,
    headers: [string, string][],
  ) {
    this.headers = headers.map(([k, v]) => [flat(k), flat(v)]);
  }
  getHeader(name: Bytes): string {
    const n = textOf(name);
    for (const [k, v] of this.headers) if (k === n) return v;
    return '';
  }
  forEach(cb: (name: string, value: string) => void): void {
    for (const [k, v] of this.headers) cb(k, v);
  }
  getUrl(): string {
    return this.url;
  }
  getQuery(): string | undefined {
    return this.query;
  }
  getMethod(): string {
    return this.method;
  }
  getParameter(): string | undefined {
    return undefined;
  }
}

/** A response that keeps what a server would be given: the status, the header bytes, the body's length. */
class Response implements HttpResponse {
  /** The status line's argument as given (made text only when a check fails). */
  status: Bytes = '';
  headerBytes = 0;
  bodyBytes = 0;
  ended = 0;
  peer = new ArrayBuffer(16);
  private data: ((chunk: ArrayBuffer, isLast: boolean) => void) | null = null;

  reset(peer: ArrayBuffer): this {
    this.status = '';
    this.headerBytes = 0;
    this.data = null;
    this.peer = peer;
    return this;
  }
  writeStatus(status: Bytes): this {
    this.status = status;
    return this;
  }
  /** Whether the status written is 200 (a 200's argument also carries its headers: see JsonHead). */
  ok(): boolean {
    const s = this.status;
    if (typeof s === 'string') return s.startsWith('200');
    const b = s instanceof ArrayBuffer ? new Uint8Array(s) : s;
    return b[0] === 50 && b[1] === 48 && b[2] === 48;
  }
  writeHeader(name: Bytes, value: Bytes): this {
    this.headerBytes += byteLength(name) + byteLength(value) + 4;
    return this;
  }
  end(body?: Bytes): this {
    // Counted, not copied: uWS copies what it cannot send at once with a native memcpy, where
    // a copy here out of a batch's shared memory would be V8's byte-wise one, a cost of the harness.
    if (body !== undefined) this.bodyBytes += byteLength(body);
    this.ended++;
    return this;
  }
  endWithoutBody(): this {
    this.ended++;
    return this;
  }
  tryEnd(chunk: Uint8Array): [boolean, boolean] {
    this.end(chunk);
    return [true, true];
  }
  getWriteOffset(): number {
    return 0;
  }
  onWritable(): this {
    return this;
  }
  onAborted(): this {
    return this;
  }
  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): this {
    this.data = handler;
    return this;
  }
  /** The body arriving, as uWS hands it to onData. */
  receive(body: ArrayBuffer): void {
    if (this.data === null) throw new Error('the handler registered no onData');
    this.data(body, true);
  }
  cork(cb: () => void): this {
    cb();
    return this;
  }
  close(): this {
    return this;
  }
  getRemoteAddress(): ArrayBuffer {
    return this.peer;
  }
}

function byteLength(b: Bytes): number {
  return typeof b === 'string' ? b.length : b.byteLength;
}

/** Runs batch tasks inline with the batch worker's own function (no thread, no message). */
class InlineBatches implements BatchRunner {
  readonly full = false;
  private readonly slots = new OutputSlots(4);
  async run(task: BatchTask): Promise<Uint8Array> {
    const out = answerBatchTask(task);
    if (typeof out === 'number') return new Uint8Array(task.out!, 0, out);
    // What the worker moves to the front end (piscina's move), unwrapped as Piscina does.
    const view = (out as unknown as Record<symbol, ArrayBufferView>)[valueSymbol] ?? out;
    return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  }
  takeSlot(): SharedArrayBuffer | null {
    return this.slots.take();
  }
  releaseSlot(slot: SharedArrayBuffer | null): void {
    this.slots.release(slot);
  }
}

/** A fixed mix of addresses: most IPv4, some IPv6, from the feed's own generator. */
function addresses(count: number): string[] {
  const rnd = prng(11);
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    if (rnd() < 0.8) out.push([0, 0, 0, 0].map(() => Math.floor(rnd() * 256)).join('.'));
    else out.push(`2001:db8:${Math.floor(rnd() * 65536).toString(16)}::${Math.floor(rnd() * 65536).toString(16)}`);
  }
  return out;
}

/**
 * Keyless clients: IPv4-mapped peers, as uWS reports a peer. A few, each with its own bucket
 * and daily counter: thousands would make this a count of LMDB transactions (each new source
 * leases from the store), not of the request path.
 */
function peers(count: number): ArrayBuffer[] {
  return Array.from({ length: count }, (_, i) => {
    const b = new Uint8Array(16);
    b.set([0xff, 0xff, 198, 18, (i >> 8) & 0xff, i & 0xff], 10);
    return b.buffer;
  });
}

/** Keyless clients the requests come from (see peers()). */
const CLIENTS = 16;

/** Requests per call of the function that makes them (see requests()). */
const BURST = 50;

/** Builds of the fixed build feed: the index alone, or with every database export (on this thread). */
function builds(dir: string, exports: boolean): (n: number) => Promise<void> {
  const dataDir = path.join(dir, BUILD_DATA);
  let day = Date.parse('2026-11-02T00:00:00Z');
  return async (n) => {
    for (let i = 0; i < n; i++) runBuild({ dataDir, exports, serve: false, now: new Date((day += 1000)) });
  };
}

/**
 * Starts the front end on dir and returns a function that makes `n` requests of the workload
 * (for the build workloads, `n` builds).
 */
export async function requests(dir: string, workload: Workload): Promise<(n: number, warmUp?: boolean) => Promise<void>> {
  // A clock that moves `step` µs per request: 10 as at 100 k requests a second, the same
  // windows, leases and histogram every run. The warm-up runs it 10× faster, past renewals of
  // the token leases (TOKEN_LEASE_MS, a second) and allowance leases, so that their code is
  // compiled before the measured stretch; the warm-ups of instruction-budget.ts end half-way
  // between two token renewals, so that none falls in the stretch (allowance leases, renewed
  // every LEASE_MAX + 1 requests, do, as they do in service).
  let micros = Date.parse('2026-11-02T00:00:00Z') * 1000;
  let step = 10;
  Date.now = () => Math.floor(micros / 1000);
  performance.now = () => micros / 1000;
  if (workload === 'build' || workload === 'exports') return builds(dir, workload === 'exports');
  const config = loadConfig({
    DATA_DIR: dir,
    PLANS_FILE: path.join(dir, PLANS_FILE),
    DEMO: '0',
    PORT: '0',
    ADMIN_PORT: '0',
    PUBLISH_AT: '',
    FRONTEND_THREADS: '1',
    ACCESS_LOG: '0',
  });
  const holder = new IndexHolder(dir, silentLogger);
  await holder.reload();
  if (!holder.current) throw new Error(`no index in ${dir}: run prepare first`);
  const app = new RecordingApp();
  const front = await startFrontEnd({
    config,
    server: recordingServer(app),
    holder,
    pool: new InlineBatches(),
    log: silentLogger,
    schedulerState: null,
    owed: new OwedTable().shared,
    port: 0,
    sharedPort: false,
  });
  void front;
  const key = fs.readFileSync(path.join(dir, KEY_FILE), 'utf8');
  const keyed = workload !== 'keyless';
  const req = new Request(workload === 'batch' ? 'post' : 'get', [
    ['host', 'ipsift.test'],
    ...(keyed ? [['authorization', `Bearer ${key}`] as [string, string]] : []),
    ...(workload === 'batch' ? [['content-type', 'application/json'] as [string, string]] : []),
  ]);
  const res = new Response();
  const urls = addresses(1024).map((a) => flat(`/${a}`));
  const clients = peers(CLIENTS);
  const check = (i: number): void => {
    if (res.ended !== i + 1 || !res.ok()) throw new Error(`request ${i}: ${textOf(res.status).split('\r\n')[0] || 'not answered'} (${res.ended} answers)`);
  };
  let done = 0;
  if (workload === 'batch') {
    const post = app.handler('post', '/batch');
    const bodies = Array.from({ length: 8 }, (_, b) => new TextEncoder().encode(JSON.stringify({ ips: addresses(1000 + b).slice(b) })).buffer as ArrayBuffer);
    req.url = '/batch';
    return async (n, warmUp = false) => {
      step = warmUp ? 100 : 10;
      for (let i = 0; i < n; i++, done++) {
        micros += step * 1000; // a batch takes about a thousand lookups' time
        post(res.reset(clients[done % CLIENTS]), req);
        res.receive(bodies[done & 7]);
        // The worker's answer arrives as a settled promise: let it be written (microtasks only).
        for (let turns = 0; res.ended === done && turns < 64; turns++) await null;
        check(done);
      }
    };
  }
  const get = app.handler('get', '/*');
  const burst = (count: number): void => {
    for (let i = 0; i < count; i++, done++) {
      micros += step;
      req.url = urls[done & 1023];
      get(res.reset(clients[done % CLIENTS]), req);
      check(done);
    }
  };
  // In bursts of a plain function that the warm-up has optimised whole: a long loop here would
  // be compiled on the stack (OSR) inside the measured stretch, and counted.
  return async (n, warmUp = false) => {
    step = warmUp ? 100 : 10;
    for (let left = n; left > 0; left -= BURST) burst(Math.min(BURST, left));
  };
}

async function main(): Promise<void> {
  const [command, dir, workload, warmup, n, stretches = '1'] = process.argv.slice(2);
  if (command === 'prepare' && dir) return prepare(dir);
  if (command !== 'run' || !dir || !WORKLOADS.includes(workload as Workload) || !(Number(n) > 0) || !(Number(stretches) > 0)) {
    process.stderr.write(`usage: instructions.js prepare DIR | run DIR ${WORKLOADS.join('|')} WARMUP N [STRETCHES]\n`);
    process.exit(2);
  }
  // The lookups under the V8 settings `ipsift serve` runs with; the builds as `ipsift build` runs.
  if (workload !== 'build' && workload !== 'exports') tuneV8();
  const go = await requests(dir, workload as Workload);
  await go(Number(warmup), true);
  for (let s = 0; s < Number(stretches); s++) {
    // Each stretch starts from a collected heap (--expose-gc), so that a full collection the
    // warm-up left due does not land in it.
    (globalThis as { gc?: () => void }).gc?.();
    os.loadavg();
    await go(Number(n));
    os.getPriority();
  }
  process.exit(0);
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) await main();
