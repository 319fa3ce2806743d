// Shared test plumbing: temp data directories, an in-process service on ephemeral ports,
// and a plain HTTP client (one connection per request, so nothing lingers after a test).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createKey, createOrganisation } from '../src/control/accounts.js';
import { openControlDb, type ControlDb } from '../src/control/control-db.js';
import { loadPlans } from '../src/model/plans.js';
import { runBuild } from '../src/build/build.js';
import { grantLicence } from '../src/control/licences.js';
import { publishExports } from '../src/pipeline/publish.js';
import { importFeed } from '../src/feeds/import.js';
import { LocalStore } from '../src/objects/local-store.js';
import { loadConfig, type AccountingConfig, type Config, type ControlDbConfig } from '../src/config.js';
import { freshControlDb } from './postgres-server.js';
import { loadIndexFile } from '../src/index/loader.js';
import type { RangeIndex } from '../src/index/range-index.js';
import { answerBytes, recordOf, writeAnswer } from '../src/lookup/answer.js';
import { silentLogger, type Logger } from '../src/log.js';
import { TIER_MAX } from '../src/model/projection.js';
import { MAX_ADDRESS_LENGTH, NOT_ADDRESS, ParsedAddress, normalisedText, parseAddress } from '../src/net/address.js';
import { startService, type Service, type ServiceOptions } from '../src/service.js';
import { untilListening } from '../scripts/listening.js';
import { INDEX_FILE } from '../src/data-dir.js';
import { systemClock } from '../src/clock.js';

export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const SHARED_REAL = path.resolve(PROJECT_ROOT, '../shared/data/real');

const tempDirs: string[] = [];
process.once('exit', () => {
  for (const dir of tempDirs) {
    try {
      fs.rmSync(dir, { recursive: true, force: true });
    } catch (e) {
      // One that cannot go (a mount a failed test left behind) must not keep the rest.
      process.stderr.write(`not removed: ${dir} (${(e as Error).message})\n`);
    }
  }
});

/** The UTC day (YYYY-MM-DD) at `at`. */
export const utcDay = (at = systemClock.now()): string => new Date(at).toISOString().slice(0, 10);
/** The day a test's feeds are imported and built: a detail's last_seen where its source gives none. */
export const TODAY = utcDay();

/**
 * The UTC days from `since` (a time read earlier) to now: one, or two where midnight
 * passed in between, so that a test about today holds at whatever hour it runs.
 */
export function utcDaysSince(since: number): string[] {
  const first = utcDay(since);
  const now = utcDay();
  return first === now ? [first] : [first, now];
}

/** A fresh directory, removed when the test process exits. */
export function tempDir(prefix = 'ipsift-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

export function writeFile(dir: string, name: string, text: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  return file;
}

/** Writes a plans file; by default limits so high that tests about other things never meet them. */
export function plansFile(dir: string, doc?: unknown): string {
  const rate = { per_second: 1_000_000, burst: 1_000_000 };
  const lavish = {
    keyless: { daily_cap: 1_000_000_000, rate },
    plans: ['free', 'starter', 'scale', 'max'].map((tier) => ({ key: tier, tier, quota: 1_000_000_000, rate, hard_limit: null })),
  };
  return writeFile(dir, 'plans.json', JSON.stringify(doc ?? lavish));
}

const testControlDbs = new Map<string, ControlDbConfig>();

/**
 * The control database of a data directory under test: its SQLite file, or, when
 * IPSIFT_TEST_CONTROL=postgres (test/cluster-stores.test.ts runs the suites so), a fresh
 * PostgreSQL database of its own.
 */
export function testControlDb(dataDir: string): ControlDbConfig {
  if (process.env.IPSIFT_TEST_CONTROL !== 'postgres') return null;
  let c = testControlDbs.get(dataDir);
  if (c === undefined) testControlDbs.set(dataDir, (c = freshControlDb()));
  return c;
}

const testPrefixes = new Map<string, string>();

/**
 * The accounting store of a data directory under test: its LMDB file, or, when
 * IPSIFT_TEST_REDIS names a Redis (test/cluster-stores.test.ts), keys of its own prefix there.
 */
export function testAccounting(dataDir: string): AccountingConfig {
  const url = process.env.IPSIFT_TEST_REDIS;
  if (url === undefined) return { kind: 'lmdb' };
  let prefix = testPrefixes.get(dataDir);
  if (prefix === undefined) testPrefixes.set(dataDir, (prefix = `t${process.pid}.${testPrefixes.size}:`));
  return { kind: 'redis', url, prefix, timeoutMs: 500 };
}

/** The stores under test as an `ipsift` child process reads them from its environment. */
export function testStoreEnv(dataDir: string): Record<string, string> {
  const a = testAccounting(dataDir);
  return {
    DATA_DIR: dataDir,
    CONTROL_DB: testControlDb(dataDir)?.url ?? 'sqlite',
    ...(a.kind === 'redis' ? { ACCOUNTING: 'redis', REDIS_URL: a.url, REDIS_PREFIX: a.prefix } : { ACCOUNTING: 'lmdb' }),
  };
}

/** openControlDb on the data directory's control database under test (testControlDb). */
export function openTestControlDb(dataDir: string): ControlDb {
  return openControlDb(dataDir, testControlDb(dataDir));
}

export async function startTestService(overrides: Partial<Config> = {}, log: Logger = silentLogger, options: ServiceOptions = {}): Promise<Service> {
  // HTTP_SERVER picks the server under test (test/node-server.test.ts runs the HTTP suites on
  // node:http), FRONTEND_THREADS the threads (test/threads.test.ts runs them on two; one otherwise).
  // Settings go in as an environment where they can, so the service's own view of them
  // (GET /admin/v1/settings) is the one it runs with.
  const config = loadConfig(
    {
      HTTP_SERVER: process.env.HTTP_SERVER,
      FRONTEND_THREADS: process.env.FRONTEND_THREADS ?? '1',
      PORT: '0',
      ADMIN_PORT: '0',
      BATCH_WORKERS: '2',
      DEMO: '0',
      INDEX_POLL_MS: '50',
      PUBLISH_AT: '',
      PLANS_FILE: overrides.plansFile ?? plansFile(tempDir()),
      DATA_DIR: overrides.dataDir,
    },
    {
      ...(overrides.dataDir === undefined ? {} : { controlDb: testControlDb(overrides.dataDir), accounting: testAccounting(overrides.dataDir) }),
      ...overrides,
    },
  );
  return startService(config, log, options);
}

export interface Reply {
  status: number;
  /** The status line's reason phrase ('' where the server sent none). */
  reason: string;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export function request(port: number, method: string, urlPath: string, body?: string | Buffer, headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: urlPath, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          // not JSON: left undefined for the assertion to catch
        }
        resolve({ status: res.statusCode ?? 0, reason: res.statusMessage ?? '', headers: res.headers, text, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (body !== undefined) req.end(body);
    else req.end();
  });
}

export const get = (port: number, p: string, headers?: Record<string, string>) => request(port, 'GET', p, undefined, headers);
export const postBatch = (port: number, body: unknown) =>
  request(port, 'POST', '/batch', typeof body === 'string' ? body : JSON.stringify(body), { 'Content-Type': 'application/json' });

/** A GET whose body is kept as bytes (files, partial content). */
export function fetchBytes(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers, agent: false }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }));
      })
      .on('error', reject);
  });
}

/** Builds the imported feeds of dataDir (no exports) and loads the new index. */
export async function buildIndex(dataDir: string, now?: Date): Promise<RangeIndex> {
  const build = runBuild({ dataDir, exports: false, now });
  return (await loadIndexFile(path.join(build.dir, INDEX_FILE))).index;
}

const parsed = new ParsedAddress();

/**
 * The answer text for one address straight from an index, as GET /{ip} writes it (max plan
 * by default). Checks that answerBytes is exact but for the address's room.
 */
export function answerText(index: RangeIndex, ip: string, tier = TIER_MAX): string {
  if (parseAddress(ip, 0, ip.length, parsed) === NOT_ADDRESS) throw new Error(`not an address: ${ip}`);
  const r = recordOf(index, parsed);
  const out = Buffer.alloc(answerBytes(index, r, tier));
  const n = writeAnswer(out, 0, parsed, index, r, tier);
  assert.equal(n, out.length - (MAX_ADDRESS_LENGTH - normalisedText(ip, 0, ip.length, parsed).length), 'answerBytes is exact but for the address');
  return out.toString('utf8', 0, n);
}

/** answerText as an object. */
export function answerOf(index: RangeIndex, ip: string, tier = TIER_MAX): Record<string, unknown> {
  return JSON.parse(answerText(index, ip, tier)) as Record<string, unknown>;
}

export interface RawReply {
  status: number;
  head: string;
  body: string;
}

/**
 * Sends raw bytes on one connection and reads every answer until the server closes or `ms`
 * pass; given `answers` (whether each expected answer is a HEAD's), until that many have come
 * whole, where a connection kept alive would otherwise be waited on for `ms`.
 */
export function raw(port: number, bytes: string | Buffer, ms = 2000, answers?: readonly boolean[]): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let got = '';
    const done = (): void => {
      timer.cancel();
      socket.destroy();
      resolve(got);
    };
    const timer = systemClock.after(ms, done);
    socket.on('data', (c) => {
      got += c.toString('latin1');
      if (answers !== undefined && wholeAnswers(got, answers) >= answers.length) done();
    });
    socket.on('close', () => {
      timer.cancel();
      resolve(got);
    });
    socket.on('error', () => undefined);
    socket.write(bytes);
  });
}

/** How many answers of a raw HTTP/1.1 byte stream have come whole (Content-Length framed). */
function wholeAnswers(stream: string, heads: readonly boolean[]): number {
  let n = 0;
  let at = 0;
  for (;;) {
    const end = stream.indexOf('\r\n\r\n', at);
    if (end < 0) return n;
    const m = /content-length: *(\d+)/i.exec(stream.slice(at, end));
    at = end + 4 + (m && !heads[n] ? Number(m[1]) : 0);
    if (at > stream.length) return n;
    n++;
  }
}

/** The responses in a raw HTTP/1.1 byte stream (Content-Length framed). */
export function responses(stream: string, heads: readonly boolean[] = []): RawReply[] {
  const out: RawReply[] = [];
  let at = 0;
  while (at < stream.length) {
    const end = stream.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const head = stream.slice(at, end);
    const m = /content-length: *(\d+)/i.exec(head);
    // The answer to a HEAD (heads[n]) has no body, whatever its Content-Length says.
    const length = m && !heads[out.length] ? Number(m[1]) : 0;
    out.push({ status: Number(head.slice(9, 12)), head, body: stream.slice(end + 4, end + 4 + length) });
    at = end + 4 + length;
  }
  return out;
}

/** A port nothing listens on now (for servers that cannot be given port 0). */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Kills a child with SIGKILL (what a crash looks like to its peers) and waits until it is gone. */
export async function killChild(c: ChildProcess | null): Promise<void> {
  if (c === null || c.exitCode !== null || c.signalCode !== null) return;
  await new Promise<void>((resolve) => (c.once('exit', () => resolve()), c.kill('SIGKILL')));
}

export interface ServeProcess {
  child: ChildProcess;
  port: number;
  adminPort: number;
  /** What the process has logged so far (JSON lines on stderr). */
  log: () => string;
}

/**
 * `ipsift serve` as a child process on ephemeral ports (no demo, no daily build, unless `env`
 * says otherwise); resolves once it logs that it listens.
 */
export function serveProcess(env: Record<string, string>): Promise<ServeProcess> {
  const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'dist/src/cli.js'), 'serve'], {
    env: { ...process.env, PORT: '0', ADMIN_PORT: '0', DEMO: '0', PUBLISH_AT: '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return untilListening(child).then((l) => ({ child, port: l.port, adminPort: l.adminPort, log: l.log }));
}

/** Enough VPN networks that the range databases offer samples (≥ 10 entries, a sample ≤ a tenth). */
export const PUBLISHED_FEED = `network,category,provider,last_seen
81.7.3.0/24,vpn,ExampleVPN,2026-11-01
2a01:4f8:c012::/48,hosting,Hoster,2026-10-01
${Array.from({ length: 30 }, (_, i) => `82.${2 * i}.0.0/16,vpn,ExampleVPN,2026-11-01`).join('\n')}
`;

export interface PublishedDataDir {
  dataDir: string;
  plans: string;
  /** The secrets of the keys asked for, in order. */
  keys: string[];
  /** A signed link to the published vpn_v1.csv.gz, relative, valid for an hour. */
  link: string;
}

/**
 * A data directory with PUBLISHED_FEED built and published to the local store, lavish plans,
 * and one max organisation holding a vpn licence with a key per entry of `keys`.
 */
export async function publishedDataDir(keys: readonly { scopes: string[]; allowedCidrs?: string[] }[]): Promise<PublishedDataDir> {
  const dataDir = tempDir();
  importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', PUBLISHED_FEED) });
  const build = runBuild({ dataDir });
  const plans = plansFile(dataDir);
  const db = openTestControlDb(dataDir);
  try {
    const org = createOrganisation(db, loadPlans(plans), 'Published', 'max');
    const secrets = keys.map((k, i) => createKey(db, { orgId: org.id, name: `k${i}`, ...k }).secret);
    grantLicence(db, { orgId: org.id, base: 'vpn', licenceType: 'evaluation', starts: '2026-01-01', expires: '2099-01-01' }, ['vpn']);
    const store = new LocalStore(dataDir);
    await publishExports(db, store, dataDir, build.id);
    const link = store.signedUrl(`vpn_v1/${build.id}/vpn_v1.csv.gz`, systemClock.now() + 3_600_000, 'vpn_v1.csv.gz', '');
    return { dataDir, plans, keys: secrets, link };
  } finally {
    db.close();
  }
}

/**
 * Waits until `condition` holds, checking every few milliseconds; fails naming `what` after
 * `timeoutMs`. For what the code under test does on its own time (threads, child processes,
 * pools): a deadline, never a fixed sleep that a loaded machine may outlast.
 */
export async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string | (() => string)): Promise<void> {
  const deadline = systemClock.now() + timeoutMs;
  while (!(await condition())) {
    if (systemClock.now() > deadline) throw new assert.AssertionError({ message: `not within ${timeoutMs} ms: ${typeof what === 'string' ? what : what()}` });
    await new Promise((r) => setTimeout(r, 5)); // a poll, kept alive: the process waits for it
  }
}
