// Deployment as operators do it (issue #12): links from configuration, one owner per port,
// configuration checked before any work, the demo only on a new data directory, graceful
// shutdown, reason phrases.

import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { openControlDb } from '../src/control/control-db.js';
import { runBuild } from '../src/build/build.js';
import { missedRun, PublishScheduler, servingToday } from '../src/pipeline/scheduler.js';
import { releaseBuildLock, takeBuildLock } from '../src/pipeline/build-lock.js';
import { identityTag, ownIdentity } from '../src/process-identity.js';
import { ClusterBuildLock } from '../src/pipeline/cluster-lock.js';
import { jsonLogger, silentLogger } from '../src/log.js';
import { ensureDemo } from '../src/demo.js';
import { IpsiftError } from '../src/errors.js';
import { REDIS_SERVER, startRedis } from './redis-server.js';
import { ConfigError, loadConfig } from '../src/config.js';
import { importFeed } from '../src/feeds/import.js';
import { buildAndPublish } from '../src/pipeline/pipeline.js';
import { readServingLog } from '../src/index/builds.js';
import type { Service } from '../src/service.js';
import { LocalStore } from '../src/objects/local-store.js';
import {
  PROJECT_ROOT,
  PUBLISHED_FEED as FEED,
  get,
  publishedDataDir,
  raw,
  responses,
  serveProcess,
  startTestService,
  tempDir,
  until,
  writeFile,
  type Reply,
} from './helpers.js';
import { againOn } from './again.js';

const run = promisify(execFile);
const CLI = path.join(PROJECT_ROOT, 'dist/src/cli.js');

/** A published data directory with one db.download key (helpers.publishedDataDir). */
async function licensedDataDir(): Promise<{ dataDir: string; plans: string; key: string }> {
  const d = await publishedDataDir([{ scopes: ['db.download'] }]);
  return { ...d, key: d.keys[0] };
}

function cli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(process.execPath, [CLI, ...args], { env: { ...process.env, PORT: '0', ADMIN_PORT: '0', PUBLISH_AT: '', ...env } }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
}

/** Whether a TCP connection to the port is refused (a plain socket: under Bun, an http.get's refusal once escaped its error handler). */
function connectRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.on('error', () => resolve(true));
  });
}

describe('links from configuration', () => {
  let d: Awaited<ReturnType<typeof licensedDataDir>>;
  const started: Service[] = [];
  before(async () => {
    d = await licensedDataDir();
  });
  after(async () => {
    for (const s of started) await s.close();
  });
  const location = async (svc: Service, headers: Record<string, string> = {}): Promise<string> => {
    const r = await get(svc.port, '/api/v1/database/download?id=vpn_v1&format=csvgz', { Authorization: `Bearer ${d.key}`, ...headers });
    assert.equal(r.status, 302);
    return String(r.headers.location);
  };

  test('without PUBLIC_URL a Location is a relative reference: the client’s Host never reaches it', async () => {
    const svc = await startTestService({ dataDir: d.dataDir, plansFile: d.plans });
    started.push(svc);
    const stream = await raw(
      svc.port,
      `GET /api/v1/database/download?id=vpn_v1&format=csvgz HTTP/1.1\r\nHost: evil.example/x?\r\nAuthorization: Bearer ${d.key}\r\nConnection: close\r\n\r\n`,
    );
    const [r] = responses(stream);
    assert.equal(r.status, 302);
    assert.match(r.head, /\r\nLocation: \/files\/vpn_v1\//);
    assert.doesNotMatch(r.head, /evil/);
    // Forwarded headers from a peer that is not a trusted proxy are ignored too.
    assert.match(await location(svc, { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'ip.example.com' }), /^\/files\//);
  });

  test('PUBLIC_URL (with a path prefix) builds every absolute link', async () => {
    const svc = await startTestService({ dataDir: d.dataDir, plansFile: d.plans, publicUrl: 'https://ip.example.com/ipsift' });
    started.push(svc);
    assert.match(await location(svc, { Host: 'evil.example' }), /^https:\/\/ip\.example\.com\/ipsift\/files\/vpn_v1\//);
  });

  test('behind TRUSTED_PROXIES the forwarded scheme and host are used; implausible ones are not', async () => {
    const svc = await startTestService({ dataDir: d.dataDir, plansFile: d.plans, trustedProxies: [{ family: 4, start: 0x7f000000n, end: 0x7fffffffn }] });
    started.push(svc);
    assert.match(await location(svc, { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'ip.example.com' }), /^https:\/\/ip\.example\.com\/files\//);
    assert.match(await location(svc, { Forwarded: 'for=1.2.3.4;proto=https;host="dl.example.com:8443"' }), /^https:\/\/dl\.example\.com:8443\/files\//);
    assert.match(await location(svc, { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'evil.example/x?' }), /^\/files\//);
    assert.match(await location(svc, { 'X-Forwarded-Proto': 'javascript', 'X-Forwarded-Host': 'ip.example.com' }), /^\/files\//);
  });

  test('PUBLIC_URL is checked: an absolute http(s) URL without query, fragment or credentials', () => {
    assert.equal(loadConfig({ PUBLIC_URL: 'https://ip.example.com/base/' }).publicUrl, 'https://ip.example.com/base');
    for (const bad of ['ip.example.com', 'ftp://x', 'https://x/?a=1', 'https://u:p@x']) assert.throws(() => loadConfig({ PUBLIC_URL: bad }), ConfigError, bad);
  });

  test('CORS_ORIGINS is checked: *, or origins as browsers send them', () => {
    assert.deepEqual(loadConfig({}).corsOrigins, []);
    assert.deepEqual(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins, ['*']);
    assert.deepEqual(loadConfig({ CORS_ORIGINS: 'https://a.example, http://b.example:8080' }).corsOrigins, ['https://a.example', 'http://b.example:8080']);
    for (const bad of ['a.example', 'https://a.example/', 'https://a.example/app', 'ftp://a.example', '*, https://a.example', 'https://A.example']) {
      assert.throws(() => loadConfig({ CORS_ORIGINS: bad }), ConfigError, bad);
    }
  });

  test('status lines of the account, key and database answers carry their reason phrase', async () => {
    const svc = started[0];
    const stream = await raw(
      svc.port,
      `GET /api/v1/database/list HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${d.key}\r\n\r\nGET /api/v1/account/me HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${d.key}\r\n\r\nGET /api/v1/iam/apikeys HTTP/1.1\r\nHost: t\r\n\r\n`,
      1000,
      [false, false, false],
    );
    assert.deepEqual(
      responses(stream).map((r) => r.head.split('\r\n')[0]),
      ['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK', 'HTTP/1.1 401 Unauthorized'],
    );
  });
});

// The configuration's checks, and a port held: again on node:http only.
describe('one owner per port, configuration before work', againOn('server'), () => {
  test('serve refuses a port another process holds, with one line', async () => {
    const holder = net.createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
    const port = (holder.address() as net.AddressInfo).port;
    try {
      const r = await cli(['serve'], { DATA_DIR: tempDir(), DEMO: '0', PORT: String(port) });
      assert.equal(r.code, 1);
      assert.equal(r.stderr.trim(), `ipsift: PORT ${port} on 127.0.0.1 is in use by another process: stop it, or set PORT to a free port`);
    } finally {
      holder.close();
    }
    // Another ipsift (uWS, SO_REUSEPORT) on the port is refused alike.
    const first = await startTestService({ dataDir: tempDir() });
    try {
      await assert.rejects(startTestService({ dataDir: tempDir(), port: first.port }), /is in use by another process/);
    } finally {
      await first.close();
    }
  });

  test('operator errors are one line naming the variable, found before any work', async () => {
    const file = writeFile(tempDir(), 'not-a-dir', 'x');
    const asFile = await cli(['serve'], { DATA_DIR: file });
    assert.equal(asFile.code, 2);
    assert.match(asFile.stderr.trim(), /^ipsift: DATA_DIR .* is a file, not a directory/);
    const badHost = await cli(['serve'], { DATA_DIR: tempDir(), HOST: 'not a host!' });
    assert.match(badHost.stderr.trim(), /^ipsift: HOST must be an IP address or a host name/);
    const dataDir = tempDir();
    const noPlans = await cli(['serve'], { DATA_DIR: dataDir, PLANS_FILE: path.join(dataDir, 'missing.json') });
    assert.equal(noPlans.code, 2);
    assert.match(noPlans.stderr.trim(), /^ipsift: PLANS_FILE .*missing\.json cannot be read/);
    for (const r of [asFile, badHost, noPlans]) assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    // Nothing was imported or built first.
    assert.deepEqual(
      fs.readdirSync(dataDir).filter((f) => f === 'feeds' || f === 'builds'),
      [],
    );
  });

  test('the demo (and its printed keys) only on a new data directory, not on one that lost control.sqlite', async () => {
    const dataDir = tempDir();
    importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', FEED) });
    runBuild({ dataDir, exports: false });
    const svc = await startTestService({ dataDir, demo: true });
    await svc.close();
    assert.equal(fs.existsSync(path.join(dataDir, 'demo-keys.json')), false);
    const db = openControlDb(dataDir);
    assert.equal((db.prepare('SELECT COUNT(*) AS n FROM organisations').get() as { n: number }).n, 0);
    db.close();
  });

  test('bundled demo feeds gone (an installation missing demo/): one line naming the file, nothing written', () => {
    const dataDir = tempDir();
    const missing = path.join(tempDir(), 'demo');
    assert.throws(
      () => ensureDemo(dataDir, silentLogger, missing),
      (e: unknown) => e instanceof IpsiftError && e.message.includes(path.join(missing, 'feeds.json')) && !e.message.includes('\n'),
    );
    assert.deepEqual(fs.readdirSync(dataDir), []);
    assert.equal(ensureDemo(tempDir(), silentLogger), true, 'the bundled demo/ imports and builds');
  });
});

// A lock file's: once.
describe('one daily build per data directory', againOn(), () => {
  test('the build lock is held by one live process; a dead holder’s lock is taken over', () => {
    const dir = tempDir();
    assert.equal(takeBuildLock(dir), true);
    assert.equal(takeBuildLock(dir), false, 'a second runner while the first holds it');
    releaseBuildLock(dir);
    assert.equal(takeBuildLock(dir), true);
    releaseBuildLock(dir);
    fs.writeFileSync(path.join(dir, 'daily-build.lock'), JSON.stringify({ pid: 2 ** 22 + 7, at: new Date().toISOString() }));
    assert.equal(takeBuildLock(dir), true, 'a lock whose process is gone');
    releaseBuildLock(dir);
    assert.equal(servingToday(dir), false);
    importFeed({ dataDir: dir, file: writeFile(dir, 'feed.csv', FEED) });
    runBuild({ dataDir: dir, exports: false });
    assert.equal(servingToday(dir), true, 'a run then skips: today’s build serves');
  });

  test('a lock or staging directory whose pid now names another process (PID 1 after a restart) is taken over', () => {
    const dir = tempDir();
    const lock = path.join(dir, 'daily-build.lock');
    const own = ownIdentity();
    // This very process, as it wrote the lock: held.
    fs.writeFileSync(lock, JSON.stringify({ ...own, at: new Date().toISOString() }));
    assert.equal(takeBuildLock(dir), false, 'held by a live process');
    // The same pid, started at another moment (the server before its restart): gone.
    fs.writeFileSync(lock, JSON.stringify({ ...own, start: '1', at: new Date().toISOString() }));
    assert.equal(takeBuildLock(dir), true, 'the same pid, another process');
    releaseBuildLock(dir);
    assert.equal(fs.existsSync(lock), false, 'released by its holder');
    // Another boot of the machine: gone, whatever the pid.
    fs.writeFileSync(lock, JSON.stringify({ ...own, boot: 'another-boot', at: new Date().toISOString() }));
    assert.equal(takeBuildLock(dir), true, 'written before a reboot');
    releaseBuildLock(dir);
    // A build's staging directory outlives its process only until the next build or start.
    importFeed({ dataDir: dir, file: writeFile(dir, 'feed.csv', FEED) });
    const builds = path.join(dir, 'builds');
    fs.mkdirSync(path.join(builds, `20260101-1.${own.pid}-1.staging`), { recursive: true });
    fs.mkdirSync(path.join(builds, `20260101-2.${identityTag(own)}.staging`), { recursive: true });
    runBuild({ dataDir: dir, exports: false });
    assert.deepEqual(
      fs.readdirSync(builds).filter((n) => n.endsWith('.staging')),
      [`20260101-2.${identityTag(own)}.staging`],
      "a live process's staging stays, a dead one's goes",
    );
  });

  const pidNamespaces = spawnSync('unshare', ['-pf', '--mount-proc', 'true']).status === 0;
  test('kill -9 of a PID-1 process mid-build, then PID 1 again: the next build starts at once, and no staging directory survives', {
    skip: !pidNamespaces && 'unshare cannot make a PID namespace here',
  }, async () => {
    const dir = tempDir();
    importFeed({ dataDir: dir, file: writeFile(dir, 'feed.csv', FEED) });
    // In a PID namespace of its own the process is PID 1, as in the image: it takes the lock,
    // opens its staging directory as a build does, says so and waits to be killed.
    // --kill-child: the kill -9 of unshare reaches the PID 1 it forked, as a container's end does.
    const holder = spawn(
      'unshare',
      [
        '-pf',
        '--kill-child',
        '--mount-proc',
        process.execPath,
        '--input-type=module',
        '-e',
        `import fs from 'node:fs';
         const { takeBuildLock } = await import(${JSON.stringify(path.join(PROJECT_ROOT, 'dist/src/pipeline/build-lock.js'))});
         const { identityTag, ownIdentity } = await import(${JSON.stringify(path.join(PROJECT_ROOT, 'dist/src/process-identity.js'))});
         if (!takeBuildLock(${JSON.stringify(dir)})) process.exit(3);
         fs.mkdirSync(${JSON.stringify(dir)} + '/builds/20260101-1.' + identityTag(ownIdentity()) + '.staging', { recursive: true });
         console.log(process.pid);
         process.stdin.resume();`,
      ],
      // Kept running by its open stdin until the kill, not by a timer.
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    const pid = await new Promise<string>((resolve) => holder.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim())));
    assert.equal(pid, '1');
    assert.equal(JSON.parse(fs.readFileSync(path.join(dir, 'daily-build.lock'), 'utf8')).pid, 1);
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    // The restart: PID 1 again, in a new namespace; the lock and the staging are the dead one's.
    const again = spawnSync(
      'unshare',
      [
        '-pf',
        '--mount-proc',
        process.execPath,
        '--input-type=module',
        '-e',
        `const { takeBuildLock } = await import(${JSON.stringify(path.join(PROJECT_ROOT, 'dist/src/pipeline/build-lock.js'))});
         const { runBuild } = await import(${JSON.stringify(path.join(PROJECT_ROOT, 'dist/src/build/build.js'))});
         if (!takeBuildLock(${JSON.stringify(dir)})) { console.log('refused'); process.exit(0); }
         runBuild({ dataDir: ${JSON.stringify(dir)}, exports: false });
         console.log('built as', process.pid);`,
      ],
      { encoding: 'utf8' },
    );
    assert.equal(again.stdout.trim(), 'built as 1', again.stderr);
    assert.deepEqual(
      fs.readdirSync(path.join(dir, 'builds')).filter((n) => n.endsWith('.staging')),
      [],
    );
  });

  test('twenty builds in a row, each after a feed change, leave KEEP_BUILDS builds and their objects: the data directory stops growing', async () => {
    const dir = tempDir();
    const config = loadConfig({ DATA_DIR: dir, KEEP_BUILDS: '3', DEMO: '0' });
    const store = new LocalStore(dir);
    const objectsOf = (): string[] => fs.readdirSync(path.join(store.root, 'ipsift_v1'));
    const sizes: number[] = [];
    let pinned = '';
    for (let i = 0; i < 20; i++) {
      importFeed({ dataDir: dir, file: writeFile(dir, 'feed.csv', `${FEED}91.7.${i}.0/24,vpn,Example ${i},2026-11-01\n`), name: 'feed', replace: true });
      // The 6th build is not published: the 5th stays, as the one downloads serve, until a newer one is.
      const run = await buildAndPublish(config, { serve: true, publish: i !== 5 });
      if (i === 4) pinned = run.id;
      if (i === 5) assert.ok(fs.existsSync(path.join(dir, 'builds', pinned)), 'the build downloads serve is kept');
      const builds = fs.readdirSync(path.join(dir, 'builds')).filter((n) => /^\d{8}-\d+$/.test(n));
      assert.ok(builds.length <= 4, `${builds.length} builds after build ${i + 1}`);
      assert.ok(objectsOf().length <= 3, `${objectsOf().length} published builds of ipsift_v1 after build ${i + 1}`);
      sizes.push(dirBytes(dir));
    }
    const builds = fs.readdirSync(path.join(dir, 'builds')).filter((n) => /^\d{8}-\d+$/.test(n));
    assert.equal(builds.length, 3);
    // What served when outlives the builds: twenty spans, each ended by the next, the last open.
    const spans = readServingLog(dir);
    assert.equal(spans.length, 20);
    assert.ok(spans.every((s, i) => (i < 19 ? s.to === spans[i + 1].from : s.to === null)));
    assert.ok(!builds.includes(spans[0].build), 'the first build is pruned; its span stays');
    const cliLog = await cli(['builds', 'log', '--json'], { DATA_DIR: dir });
    assert.deepEqual(JSON.parse(cliLog.stdout), [...spans].reverse());
    assert.equal(
      fs.readFileSync(path.join(dir, 'builds', 'CURRENT'), 'utf8').trim(),
      builds.sort((a, b) => Number(a.split('-')[1]) - Number(b.split('-')[1])).at(-1),
    );
    assert.deepEqual(fs.readdirSync(path.join(store.root, 'index')).filter((n) => n !== 'CURRENT.json').length, 3, 'index replicas pruned too');
    // Growth stops: the last ten builds leave the directory within a tenth of its size after the tenth.
    const settled = sizes.slice(10);
    assert.ok(Math.max(...settled) <= sizes[9] * 1.1, `sizes ${sizes.join(', ')}`);
  });

  const asNobody = process.getuid?.() === 0 && spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'true']).status === 0;
  test('a build whose publishing fails (objects a root CLI run left) says the build serves and why publishing failed, not that it failed', {
    skip: !asNobody && 'needs root and setpriv to run the CLI as another user',
  }, async () => {
    const dir = tempDir();
    importFeed({ dataDir: dir, file: writeFile(dir, 'feed.csv', FEED) });
    // The operator's root run: builds and publishes, leaving store/objects owned by root.
    assert.equal((await cli(['build'], { DATA_DIR: dir, DEMO: '0' })).code, 0);
    // The service's user may write the data directory but not what root left in the store.
    const store = path.join(dir, 'store', 'objects');
    assert.equal(spawnSync('chown', ['-R', '65534:65534', dir]).status, 0);
    assert.equal(spawnSync('chown', ['-R', '0:0', store]).status, 0);
    const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, CLI, 'build'], {
      env: { ...process.env, DATA_DIR: dir, DEMO: '0', PORT: '0', ADMIN_PORT: '0', PUBLISH_AT: '' },
      encoding: 'utf8',
    });
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      /build \d{8}-2 serves, but publishing it failed: .*EACCES.*not writable by this process \(uid 65534\); a CLI run as another user \(root\) leaves them so/,
    );
    assert.ok(fs.existsSync(store));
    assert.match(fs.readFileSync(path.join(dir, 'builds', 'CURRENT'), 'utf8'), /-2\n$/, 'the new build serves');
  });

  test('a start catches up when the serving build predates the latest run due, at any hour', () => {
    const dir = tempDir();
    importFeed({ dataDir: dir, file: writeFile(dir, 'feed.csv', FEED) });
    assert.equal(missedRun(dir, '00:05', Date.parse('2026-03-10T12:00:00Z')), true, 'nothing serves');
    runBuild({ dataDir: dir, exports: false, now: new Date('2026-03-10T08:00:00Z') });
    const missed = (at: string, now: string): boolean => missedRun(dir, at, Date.parse(now));
    assert.equal(missed('00:05', '2026-03-10T12:00:00Z'), false, 'today’s serves');
    assert.equal(missed('23:59:30', '2026-03-11T00:00:30Z'), false, 'the run due was yesterday’s, and yesterday’s build serves');
    assert.equal(missed('00:05', '2026-03-11T00:04:59Z'), false, 'today’s run is not due yet');
    assert.equal(missed('00:05', '2026-03-11T00:05:00Z'), true, 'today’s run fell due');
    assert.equal(missed('23:59:30', '2026-03-12T00:00:30Z'), true, 'a server down over yesterday’s run');
  });
});

describe('one daily build per cluster (builder nodes sharing a Redis)', REDIS_SERVER === null ? { skip: 'redis-server is not installed' } : againOn(), () => {
  test('two builders with data directories of their own, run at once: one builds and publishes, the other skips, and skips again later that day', async () => {
    const redis = await startRedis();
    try {
      const lines: string[] = [];
      const log = jsonLogger((l) => void lines.push(l));
      const builders = [tempDir(), tempDir()].map((dataDir) => {
        importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', FEED) });
        const config = loadConfig({ DATA_DIR: dataDir, STORE: 'local', PUBLISH_AT: '' });
        return { dataDir, scheduler: new PublishScheduler('00:05', config, log, new ClusterBuildLock(redis.url, 'c1:')) };
      });
      await Promise.all(builders.map((b) => b.scheduler.runOnce()));
      const built = builders.filter((b) => servingToday(b.dataDir));
      assert.equal(built.length, 1, lines.join(''));
      assert.match(lines.join(''), /"msg":"daily build skipped","reason":"another node is building/);
      const other = builders.find((b) => !servingToday(b.dataDir))!;
      await other.scheduler.runOnce();
      assert.equal(servingToday(other.dataDir), false);
      assert.match(lines.join(''), /"reason":"build \d{8}-\d+ was published today by another node"/);
    } finally {
      await redis.kill();
    }
  });
});

describe('graceful shutdown', () => {
  test('SIGTERM: readiness false, the port closes, a slow download finishes, exit 0; a second signal exits at once', async () => {
    const d = await licensedDataDir();
    const store = new LocalStore(d.dataDir);
    const big = path.join(d.dataDir, 'big.bin');
    fs.writeFileSync(big, Buffer.alloc(24 * 1024 * 1024, 3));
    await store.put('t/big.bin', big);
    const link = store.signedUrl('t/big.bin', Date.now() + 60_000, 'big.bin', '');
    const server = await serveProcess({ DATA_DIR: d.dataDir, PLANS_FILE: d.plans, SHUTDOWN_GRACE_S: '20' });
    const exited = new Promise<number | null>((r) => server.child.once('exit', (code) => r(code)));
    // A reader that stops after its first megabyte until the checks below are done (a raw
    // socket: pausing a node:http response does not hold back Bun's client).
    let head = '';
    let body = 0;
    const socket = net.connect(server.port, '127.0.0.1', () => socket.write(`GET ${link} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n`));
    const download = new Promise<number>((resolve, reject) => {
      socket.on('data', (c: Buffer) => {
        if (!head.endsWith('\r\n\r\n')) {
          const text = c.toString('latin1');
          const end = text.indexOf('\r\n\r\n');
          head += end < 0 ? text : text.slice(0, end + 4);
          if (end < 0) return;
          c = c.subarray(end + 4);
        }
        body += c.length;
        if (body >= 1_000_000 && body - c.length < 1_000_000) socket.pause();
      });
      socket.on('end', () => resolve(body));
      socket.on('error', (e) => reject(new Error(`the download cut at ${body} bytes: ${e.message}`)));
    });
    await until(() => body >= 1_000_000, 30_000, `the first megabyte read (${body} bytes)`);
    server.child.kill('SIGTERM');
    let ready: Reply | undefined;
    await until(async () => (ready = await get(server.adminPort, '/readyz')).status !== 200, 10_000, 'readiness false after SIGTERM');
    assert.deepEqual([ready?.status, ready?.json.reason], [503, 'shutting down']);
    // Readiness goes false first, then the lookup port closes.
    await until(() => connectRefused(server.port), 10_000, 'the lookup port closed after SIGTERM');
    socket.resume();
    assert.equal(await download, 24 * 1024 * 1024, 'the download was cut');
    assert.match(head, /^HTTP\/1\.1 200 /);
    assert.equal(await exited, 0);
    assert.match(server.log(), /"msg":"stopped","clean":true/);

    const again = await serveProcess({ DATA_DIR: d.dataDir, PLANS_FILE: d.plans, SHUTDOWN_GRACE_S: '20' });
    const exitedAgain = new Promise<number | null>((r) => again.child.once('exit', (code) => r(code)));
    const stalled = net.connect(again.port, '127.0.0.1', () => stalled.write(`GET ${link} HTTP/1.1\r\nHost: t\r\n\r\n`));
    stalled.on('error', () => undefined);
    // Reads the first chunk, then never again: the drain would wait the whole grace period.
    let started = false;
    stalled.once('data', () => {
      started = true;
      stalled.pause();
    });
    await until(() => started, 10_000, 'the stalled download started');
    const t = Date.now();
    again.child.kill('SIGTERM');
    await until(async () => (await get(again.adminPort, '/readyz')).status !== 200, 10_000, 'the first signal taken');
    again.child.kill('SIGTERM');
    assert.equal(await exitedAgain, 1);
    assert.ok(Date.now() - t < 5000, 'the second signal did not exit at once');
    stalled.destroy();
  });
});

/** Every byte under a directory. */
function dirBytes(dir: string): number {
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    total += e.isDirectory() ? dirBytes(p) : fs.statSync(p).size;
  }
  return total;
}
