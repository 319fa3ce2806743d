// The S3 object store against a real S3-compatible server (s3rver) on loopback: multipart
// upload, presigned GETs (whole and ranged), and the download flow end to end.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import S3rver from 's3rver';
import { createKey, createOrganisation } from '../src/control/accounts.js';
import { openControlDb } from '../src/control/control-db.js';
import { loadPlans } from '../src/model/plans.js';
import { runBuild } from '../src/build/build.js';
import { grantLicence } from '../src/control/licences.js';
import { publishExports } from '../src/pipeline/publish.js';
import { importFeed } from '../src/feeds/import.js';
import { S3Store } from '../src/objects/s3-store.js';
import { fetchBytes, get, plansFile, startTestService, tempDir, writeFile } from './helpers.js';

const BUCKET = 'ipsift-test';

describe('S3 object store (s3rver on loopback)', () => {
  let server: S3rver;
  let endpoint: string;

  before(async () => {
    // s3rver's fixed credentials; the AWS SDK reads them from the environment.
    process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
    process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
    server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: tempDir('ipsift-s3-'), configureBuckets: [{ name: BUCKET }] });
    const { port } = await server.run();
    endpoint = `http://127.0.0.1:${port}`;
  });
  after(() => server.close());

  test('a multipart upload comes back whole and by range through presigned links', async () => {
    const store = new S3Store({ bucket: BUCKET, prefix: 'p/', endpoint });
    const file = path.join(tempDir(), 'big.bin');
    const bytes = crypto.randomBytes(20 * 1024 * 1024 + 12345); // three 8 MiB parts
    fs.writeFileSync(file, bytes);
    await store.put('db/big.bin', file);
    const url = await store.signedUrl('db/big.bin', Date.now() + 60_000, 'big.bin');
    const whole = await fetchBytes(url);
    assert.equal(whole.status, 200);
    assert.ok(whole.body.equals(bytes));
    assert.match(String(whole.headers['content-disposition']), /filename="big\.bin"/);
    const part = await fetchBytes(url, { Range: 'bytes=100-199' });
    assert.equal(part.status, 206);
    assert.ok(part.body.equals(bytes.subarray(100, 200)));
    store.close();
  });

  test('download answers 302 to a presigned S3 link whose bytes match the published sha256', async () => {
    const dataDir = tempDir();
    importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', 'network,category,provider\n81.7.3.0/24,vpn,ExampleVPN\n') });
    const build = runBuild({ dataDir });
    const file = plansFile(dataDir);
    const db = openControlDb(dataDir);
    const org = createOrganisation(db, loadPlans(file), 'S3 customer', 'max');
    const secret = createKey(db, { orgId: org.id, name: 'k', scopes: ['db.download'] }).secret;
    grantLicence(db, { orgId: org.id, base: 'vpn', licenceType: 'evaluation', starts: '2026-01-01', expires: '2099-01-01' }, ['vpn']);
    const store = new S3Store({ bucket: BUCKET, prefix: 'e2e/', endpoint });
    await publishExports(db, store, dataDir, build.id);
    db.close();
    store.close();
    const svc = await startTestService({
      dataDir,
      plansFile: file,
      objectStore: { kind: 's3', bucket: BUCKET, prefix: 'e2e/', region: 'us-east-1', endpoint },
    });
    try {
      const auth = { Authorization: `Bearer ${secret}` };
      const r = await get(svc.port, '/api/v1/database/download?id=vpn_v1&format=mmdb', auth);
      assert.equal(r.status, 302);
      const location = String(r.headers.location);
      assert.ok(location.startsWith(`${endpoint}/${BUCKET}/e2e/vpn_v1/`), location);
      const got = await fetchBytes(location);
      assert.equal(got.status, 200);
      const sums = await get(svc.port, '/api/v1/database/checksum?id=vpn_v1&format=mmdb', auth);
      assert.equal(crypto.createHash('sha256').update(got.body).digest('hex'), sums.json.checksums.sha256);
      // The local /files route is not served when the store is S3.
      assert.equal((await get(svc.port, '/files/vpn_v1/x')).status, 404);
    } finally {
      await svc.close();
    }
  });
});
