// Index replicas through a real S3-compatible server (s3rver on loopback): `ipsift publish` on
// a builder puts the index in the bucket; serving nodes (ROLE=serve) with data directories of
// their own fetch it, check it and hot-swap to it, answer as the builder does, and keep the
// old build when a published one fails its check.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import S3rver from 's3rver';
import { runBuild } from '../src/build/build.js';
import { POINTER_KEY } from '../src/replica/index-replica.js';
import { loadConfig, type Config } from '../src/config.js';
import { importFeed } from '../src/feeds/import.js';
import { openApiDocument } from '../src/api/public/openapi.js';
import type { Service } from '../src/service.js';
import { S3Store } from '../src/objects/s3-store.js';
import { PROJECT_ROOT, get, plansFile, startTestService, tempDir, until, writeFile } from './helpers.js';
import { INDEX_FILE, MANIFEST_FILE, buildDir } from '../src/data-dir.js';

const BUCKET = 'ipsift-replicas';
const require = createRequire(import.meta.url);
const { default: Ajv2020 } = require('ajv/dist/2020') as typeof import('ajv/dist/2020.js');
const { default: addFormats } = require('ajv-formats') as typeof import('ajv-formats');
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const readyzSchema = ajv.compile((openApiDocument() as any).paths['/readyz'].get.responses['200'].content['application/json'].schema);
const run = promisify(execFile);

describe('index replicas (ROLE=serve, s3rver on loopback)', () => {
  let s3: S3rver;
  let endpoint: string;
  let builder: string;
  const nodes: Service[] = [];
  const dataDirs = new Map<Service, string>();
  const storeEnv = (): Record<string, string> => ({
    STORE: 's3',
    S3_BUCKET: BUCKET,
    S3_ENDPOINT: endpoint,
    S3_PREFIX: 'c/',
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
  });

  /**
   * Imports `csv` as the builder's only feed, builds, and runs `ipsift publish` as an operator
   * would (asynchronously: s3rver answers from this process).
   */
  async function buildAndPublish(csv: string): Promise<string> {
    importFeed({ dataDir: builder, file: writeFile(builder, 'feed.csv', csv), name: 'feed' });
    const { id } = runBuild({ dataDir: builder });
    const { stdout } = await run(process.execPath, [path.join(PROJECT_ROOT, 'dist/src/cli.js'), 'publish', '--json'], {
      env: { ...process.env, ...storeEnv(), DATA_DIR: builder },
    });
    assert.equal(JSON.parse(stdout).index.build, id);
    return id;
  }

  const serveNode = async (): Promise<Service> => {
    const env = storeEnv();
    const dataDir = tempDir();
    const config: Partial<Config> = {
      ...loadConfig({ ...env, ROLE: 'serve' }),
      dataDir,
      plansFile: plansFile(tempDir()),
      replicaPollMs: 200,
      demo: false,
      publishAt: '',
      port: 0,
      adminPort: 0,
    };
    const svc = await startTestService(config);
    nodes.push(svc);
    dataDirs.set(svc, dataDir);
    return svc;
  };

  const readyz = async (svc: Service): Promise<Record<string, any>> => (await get(svc.adminPort, '/readyz')).json;

  before(async () => {
    process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
    process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
    s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: tempDir('ipsift-s3-'), configureBuckets: [{ name: BUCKET }] });
    endpoint = `http://127.0.0.1:${(await s3.run()).port}`;
    builder = tempDir();
  });
  after(async () => {
    for (const n of nodes) await n.close();
    await s3.close();
  });

  test('ROLE=serve without an S3 store is refused in one line', () => {
    assert.throws(() => loadConfig({ ROLE: 'serve' }), /ROLE=serve follows the builds a builder publishes to the object store: set STORE=s3/);
    assert.throws(() => loadConfig({ ROLE: 'replica' }), /ROLE must be all or serve/);
  });

  test('serving nodes start on the published build and answer as the builder does; a new publish reaches them all', async () => {
    const first = await buildAndPublish('network,category,provider\n81.7.3.0/24,vpn,Alpha\n');
    const [a, b] = [await serveNode(), await serveNode()];
    for (const n of [a, b]) {
      const r = await readyz(n);
      assert.equal(r.status, 'ready');
      assert.equal(r.build, first);
      assert.deepEqual([r.replica.published, r.replica.error], [first, null]);
      assert.ok(readyzSchema(r), `/readyz as the OpenAPI document says: ${JSON.stringify(readyzSchema.errors)}`);
      assert.deepEqual((await get(n.port, '/81.7.3.9')).json, { ip: '81.7.3.9', is_vpn: true });
      assert.deepEqual((await get(n.port, '/9.9.9.9')).json, { ip: '9.9.9.9', is_vpn: false });
    }
    const second = await buildAndPublish('network,category,provider\n9.9.9.0/24,vpn,Beta\n');
    for (const n of [a, b]) {
      await until(async () => (await readyz(n)).build === second, 10_000, `node serves ${second}`);
      assert.deepEqual((await get(n.port, '/9.9.9.9')).json, { ip: '9.9.9.9', is_vpn: true });
      assert.deepEqual((await get(n.port, '/81.7.3.9')).json, { ip: '81.7.3.9', is_vpn: false });
      assert.match((await get(n.adminPort, '/metrics')).text, /^ipsift_replica_in_sync 1$/m);
    }
  });

  test('a published build that fails its check is never served: the old one stays, the error is shown, and the next good build is taken', async () => {
    const node = nodes[0] ?? (await serveNode());
    const serving = (await readyz(node)).build as string;
    // A build published with its index damaged on the way (its pointer and manifest are right).
    importFeed({ dataDir: builder, file: writeFile(builder, 'feed.csv', 'network,category,provider\n1.1.1.0/24,vpn,Gamma\n'), name: 'feed' });
    const bad = runBuild({ dataDir: builder }).id;
    const damaged = path.join(tempDir(), INDEX_FILE);
    const bytes = fs.readFileSync(path.join(buildDir(builder, bad), INDEX_FILE));
    bytes[bytes.length - 1] ^= 0xff;
    fs.writeFileSync(damaged, bytes);
    const store = new S3Store({ bucket: BUCKET, prefix: 'c/', endpoint });
    await store.put(`index/${bad}/${INDEX_FILE}`, damaged);
    await store.put(`index/${bad}/${MANIFEST_FILE}`, path.join(buildDir(builder, bad), MANIFEST_FILE));
    const manifest = JSON.parse(fs.readFileSync(path.join(buildDir(builder, bad), MANIFEST_FILE), 'utf8'));
    await store.put(
      POINTER_KEY,
      writeFile(tempDir(), 'CURRENT.json', JSON.stringify({ build: bad, sha256: manifest.index.sha256, bytes: manifest.index.bytes })),
    );
    store.close();
    await until(async () => /does not verify/.test(String((await readyz(node)).replica.error)), 10_000, 'the damaged build is rejected');
    const r = await readyz(node);
    assert.deepEqual([r.status, r.build, r.replica.published], ['ready', serving, bad]);
    assert.deepEqual((await get(node.port, '/1.1.1.1')).json, { ip: '1.1.1.1', is_vpn: false });
    assert.ok(!fs.existsSync(path.join(dataDirs.get(node)!, 'builds', bad)), 'the damaged build is not kept');
    assert.match((await get(node.adminPort, '/metrics')).text, /^ipsift_replica_in_sync 0$/m);
    const good = await buildAndPublish('network,category,provider\n1.1.1.0/24,vpn,Gamma\n');
    await until(async () => (await readyz(node)).build === good, 10_000, `node serves ${good}`);
    assert.deepEqual((await get(node.port, '/1.1.1.1')).json, { ip: '1.1.1.1', is_vpn: true });
    assert.equal((await readyz(node)).replica.error, null);
  });
});
