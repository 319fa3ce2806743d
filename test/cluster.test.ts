// A cluster on one machine: one builder and three serving nodes (ipsift processes with data
// directories of their own) sharing Redis (accounting), PostgreSQL (the control plane) and an
// S3-compatible store (s3rver: exports and index replicas). The operator works through the CLI
// against PostgreSQL; clients use whichever node. What one node learns, every node answers.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import S3rver from 's3rver';
import { runBuild } from '../src/build/build.js';
import { importFeed } from '../src/feeds/import.js';
import { fetchBytes, get, plansFile, postBatch, request, serveProcess, tempDir, until, writeFile, type ServeProcess } from './helpers.js';
import { cliInThread } from './cli-in-thread.js';
import { dropDatabases, freshControlDb } from './postgres-server.js';
import { REDIS_SERVER, startRedis, type TestRedis } from './redis-server.js';

const BUCKET = 'ipsift-cluster';
const FEED = `network,category,provider,last_seen
81.7.3.0/24,vpn,ExampleVPN,2026-11-01
81.7.3.16/28,tor,Tor Project,2026-11-02
81.7.4.0/24,resproxy,ResiNet,2026-11-01
2a0d:5600::/32,hosting,HostCo,2026-11-01
${Array.from({ length: 12 }, (_, i) => `${100 + i}.1.0.0/16,vpn,Bulk${i},2026-11-01`).join('\n')}
`;
const PROBES = ['81.7.3.9', '81.7.3.17', '81.7.4.200', '2a0d:5600::1', '8.8.8.8', '103.1.2.3', '::ffff:81.7.3.9'];

describe('a cluster: builder + 3 serving nodes on Redis, PostgreSQL and s3rver', {
  skip: REDIS_SERVER === null ? 'redis-server is not installed' : false,
}, () => {
  let s3: S3rver;
  let redis: TestRedis;
  let env: Record<string, string>;
  let builder: ServeProcess;
  const nodes: ServeProcess[] = [];
  let orgId: string;
  let manager: string;
  let downloader: string;
  let operator: string;

  const cli = async (args: string[], dataDir = tempDir()): Promise<any> => {
    const r = await cliInThread([...args, '--json'], { ...process.env, ...env, DATA_DIR: dataDir });
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout);
  };
  const bearer = (k: string) => ({ authorization: `Bearer ${k}` });
  const all = (): ServeProcess[] => [builder, ...nodes];

  before(async () => {
    s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: tempDir('ipsift-s3-'), configureBuckets: [{ name: BUCKET }] });
    const endpoint = `http://127.0.0.1:${(await s3.run()).port}`;
    redis = await startRedis();
    const control = freshControlDb();
    const plansDir = tempDir();
    env = {
      STORE: 's3',
      S3_BUCKET: BUCKET,
      S3_ENDPOINT: endpoint,
      S3_PREFIX: 'c/',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      ACCOUNTING: 'redis',
      REDIS_URL: redis.url,
      REDIS_PREFIX: 'cluster:',
      // Exactness is what runs here: past the default 100 ms, which a loaded machine's Redis
      // once took, each node counts in memory within the room it knew (920 answers for 900).
      REDIS_TIMEOUT_MS: '2000',
      CONTROL_DB: control.url,
      PLANS_FILE: plansFile(plansDir),
      BATCH_WORKERS: '1',
      FRONTEND_THREADS: '1',
      REPLICA_POLL_S: '1',
    };
    // The builder: today's build, published (exports and the index replica) by the CLI.
    const builderDir = tempDir();
    importFeed({ dataDir: builderDir, file: writeFile(builderDir, 'feed.csv', FEED) });
    runBuild({ dataDir: builderDir });
    await cli(['publish'], builderDir);
    // The operator's setup, through the CLI against PostgreSQL.
    orgId = (await cli(['org', 'create', '--name', 'Cluster', '--plan', 'max'])).id;
    manager = (await cli(['key', 'create', '--org', orgId, '--name', 'manager', '--scope', 'apikeys.manage'])).key;
    downloader = (await cli(['key', 'create', '--org', orgId, '--name', 'downloads', '--scope', 'db.download'])).key;
    await cli(['license', 'grant', '--org', orgId, '--base', 'vpn', '--type', 'evaluation', '--starts', '2026-01-01', '--expires', '2099-01-01']);
    operator = (await cli(['admin', 'token', 'create', '--name', 'ops', '--scope', 'admin.read'])).token;
    // Started together, as an orchestrator starts them.
    const started = await Promise.allSettled([
      serveProcess({ ...env, DATA_DIR: builderDir }),
      ...[0, 1, 2].map(() => serveProcess({ ...env, ROLE: 'serve', DATA_DIR: tempDir() })),
    ]);
    const up = started.filter((s): s is PromiseFulfilledResult<ServeProcess> => s.status === 'fulfilled').map((s) => s.value);
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) {
      for (const p of up) p.child.kill('SIGKILL');
      throw failed.reason;
    }
    builder = up[0];
    nodes.push(...up.slice(1));
  });

  after(async () => {
    for (const p of all()) if (p) p.child.kill('SIGKILL');
    await redis?.kill();
    await s3?.close();
    dropDatabases();
  });

  test('every node serves the same build and gives the same answers, single and batch', async () => {
    const builds = await Promise.all(all().map(async (n) => (await get(n.adminPort, '/readyz')).json.build));
    assert.equal(new Set(builds).size, 1, `builds: ${builds}`);
    for (const ip of PROBES) {
      const answers = await Promise.all(all().map(async (n) => (await get(n.port, `/${ip}`, bearer(manager))).text));
      assert.equal(new Set(answers).size, 1, `${ip}: ${answers.join(' | ')}`);
    }
    const batch = JSON.stringify({ ips: PROBES });
    const batches = await Promise.all(
      all().map(async (n) => (await request(n.port, 'POST', '/batch', batch, { ...bearer(manager), 'content-type': 'application/json' })).text),
    );
    assert.equal(new Set(batches).size, 1, batches.join('\n'));
    assert.match(batches[0], /"is_tor":true/);
    const keyless = await Promise.all(all().map(async (n) => (await postBatch(n.port, { ips: PROBES })).text));
    assert.equal(new Set(keyless).size, 1);
  });

  test('a key made on one node works on every node at once; revoked on another, every node refuses it after its poll', async () => {
    const made = await request(nodes[0].port, 'POST', '/api/v1/iam/apikeys', JSON.stringify({ name: 'fresh' }), {
      ...bearer(manager),
      'content-type': 'application/json',
    });
    assert.equal(made.status, 201, made.text);
    for (const n of all()) assert.equal((await get(n.port, '/81.7.3.9', bearer(made.json.key))).status, 200);
    const revoked = await request(nodes[2].port, 'DELETE', `/api/v1/iam/apikeys/${made.json.id}`, undefined, bearer(manager));
    assert.equal(revoked.status, 200, revoked.text);
    // Each node reads the change at its next poll of the control database (the poll's period
    // is held by the keys suite, on a clock it moves); here, that every node reads it.
    for (const n of all()) {
      let r = await get(n.port, '/81.7.3.9', bearer(made.json.key));
      await until(async () => (r = await get(n.port, '/81.7.3.9', bearer(made.json.key))).status === 401, 10_000, 'every node refusing the revoked key');
      assert.deepEqual(r.json, { error: 'API key revoked' });
    }
  });

  test('downloads through any node come from the shared store and land in the one history', async () => {
    for (const n of nodes) {
      const r = await get(n.port, '/api/v1/database/download?id=vpn_v1&format=mmdb', bearer(downloader));
      assert.equal(r.status, 302, r.text);
      const file = await fetchBytes(r.headers.location!);
      assert.equal(file.status, 200);
      assert.equal(file.body.subarray(file.body.length - 20_000).includes(Buffer.from('\xab\xcd\xefMaxMind.com', 'latin1')), true);
    }
    const history = await get(builder.adminPort, `/admin/v1/organizations/${orgId}/downloads`, bearer(operator));
    assert.equal(history.status, 200, history.text);
    assert.equal(history.json.downloads.filter((d: { outcome: string }) => d.outcome === 'ok').length, nodes.length);
  });

  test('an overage limit set by the CLI holds across the nodes under load: exactly that many answers over 3 nodes x 60 connections', async (t) => {
    const LIMIT = 900;
    const org = (await cli(['org', 'create', '--name', 'Limited', '--plan', 'max'])).id;
    const key = (await cli(['key', 'create', '--org', org, '--name', 'load'])).key;
    await cli(['org', 'limit', org, String(LIMIT)]);
    const REFUSED = [429, { error: 'request allowance exceeded; raise or remove your overage limit' }];
    // The clients ask until the limit is answered (a node refuses while another holds the rest
    // of it in a lease); every answer in flight then is counted too, so one past it shows.
    let ok = 0;
    let stopped = false;
    const client = async (i: number): Promise<void> => {
      const port = nodes[i % nodes.length].port;
      while (ok < LIMIT && !stopped) {
        const r = await get(port, `/81.7.${i % 256}.1`, bearer(key));
        if (r.status === 200) ok++;
        else assert.deepEqual([r.status, r.json], REFUSED);
      }
    };
    const clients = Promise.all(Array.from({ length: 180 }, (_, i) => client(i)));
    try {
      await until(
        () => ok >= LIMIT,
        60_000,
        () => `${LIMIT} answers (${ok})`,
      );
    } finally {
      stopped = true;
      await clients;
    }
    // Past the limit every node refuses.
    for (const n of nodes)
      for (let k = 0; k < 20; k++) {
        const r = await get(n.port, '/81.7.9.1', bearer(key));
        assert.deepEqual([r.status, r.json], REFUSED);
      }
    assert.equal(ok, LIMIT);
    const usage = await cli(['usage', org]);
    assert.deepEqual([usage.requests, usage.hard_limit], [LIMIT, LIMIT]);
    t.diagnostic(`hard_limit ${LIMIT}: ${ok} answered 200 over 3 nodes, ${usage.requests} counted`);
  });

  test('KEY_CHANGES_PER_MIN is exact across the nodes: 150 rotations at once over 3 nodes, 60 made', async (t) => {
    // Its own organisation: the limit counts per organisation, and this spends it for a minute.
    const org = (await cli(['org', 'create', '--name', 'Racing', '--plan', 'max'])).id;
    const racer = (await cli(['key', 'create', '--org', org, '--name', 'racer', '--scope', 'apikeys.manage'])).key;
    const target = (await cli(['key', 'create', '--org', org, '--name', 'target'])).id;
    const statuses = await Promise.all(
      Array.from({ length: 150 }, (_, i) =>
        request(nodes[i % nodes.length].port, 'POST', `/api/v1/iam/apikeys/${target}/rotate`, undefined, bearer(racer)).then((r) => r.status),
      ),
    );
    const made = statuses.filter((s) => s === 200).length;
    assert.deepEqual([made, statuses.filter((s) => s === 429).length], [60, 90], `statuses: ${[...new Set(statuses)].join(', ')}`);
    t.diagnostic(`150 rotations at once over 3 nodes: ${made} made, the default KEY_CHANGES_PER_MIN 60`);
  });
});
