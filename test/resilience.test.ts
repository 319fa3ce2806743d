import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, test } from 'node:test';
import { runBuild } from '../src/build/build.js';
import { readCurrentBuildId } from '../src/index/builds.js';
import { FORMAT_VERSION } from '../src/index/format.js';
import { jsonLogger } from '../src/log.js';
import { importFeed } from '../src/feeds/import.js';
import { BatchPool } from '../src/batch/pool.js';
import { TIER_MAX } from '../src/model/projection.js';
import { PROJECT_ROOT, get, postBatch, startTestService, tempDir, until, writeFile } from './helpers.js';
import { againOn } from './again.js';
import { INDEX_FILE } from '../src/data-dir.js';

const run = promisify(execFile);

function feed(provider: string): string {
  return `network,category,provider,last_seen\n81.7.0.0/16,vpn,${provider},2026-11-01\n2a01:4f8::/32,hosting,${provider},2026-11-01\n`;
}

async function waitForWorkers(pool: BatchPool, n: number): Promise<void> {
  await until(
    () => pool.workers.length >= n,
    10_000,
    () => `the pool back at its size (${pool.workers.length} of ${n})`,
  );
  assert.equal(pool.workers.length, n, 'the pool grew past its size');
}

describe('resilience', () => {
  // The batch pool's, whatever serves the requests: once.
  test('workers that die while starting up are replaced too, and the pool gets back to its size', againOn(), async () => {
    const pool = new BatchPool({ workers: 2, maxQueue: 8 });
    try {
      await waitForWorkers(pool, 2);
      for (let round = 0; round < 3; round++) {
        // Killing a running worker makes Piscina start a replacement at once; killing that
        // one before it is ready is the case Piscina gives up on.
        await pool.workers[0]!.terminate();
        const starting = pool.workers.at(-1)!;
        await starting.terminate();
        await waitForWorkers(pool, 2);
      }
      const frame = await pool.run({
        body: new TextEncoder().encode('{"ips":["1.1.1.1"]}').buffer,
        tier: TIER_MAX,
        generation: 0,
        index: null,
        budget: 1,
        refusal: 1,
        out: null,
        coding: 0,
      });
      assert.ok(frame.byteLength > 0);
    } finally {
      await pool.close();
    }
  });

  test('a batch worker killed mid-batch is replaced; every batch is still answered correctly', againOn(), async () => {
    const dataDir = tempDir();
    importFeed({ dataDir, file: writeFile(dataDir, 'f.csv', feed('Alpha')) });
    runBuild({ dataDir });
    const svc = await startTestService({ dataDir, batchWorkers: 2, batchQueue: 64, keylessTier: TIER_MAX });
    try {
      const ips = Array.from({ length: 1000 }, (_, i) => (i % 2 ? `81.7.${i >> 8}.${i & 255}` : `2a01:4f8::${i.toString(16)}`));
      let stop = false;
      // Batches each client has had answered: the test waits on these counts, never on the
      // machine's speed.
      const answered = [0, 0, 0, 0];
      const client = async (c: number): Promise<void> => {
        while (!stop) {
          const r = await postBatch(svc.port, { ips });
          assert.equal(r.status, 200, r.text.slice(0, 300));
          assert.deepEqual(r.json.errors, {}, 'a batch lost entries to a killed worker');
          assert.equal(Object.keys(r.json.results).length, 1000);
          assert.equal(r.json.results['81.7.0.1'].vpn.provider, 'Alpha');
          answered[c]++;
        }
      };
      const clients = answered.map((_, c) => client(c));
      const killedThreads = new Set<number>();
      const KILLS = 8;
      for (let k = 0; k < KILLS; k++) {
        // Every client has had a batch answered since the last kill, so each batch in flight
        // then is done: no batch meets more than one death (it has two retries).
        const before = [...answered];
        await until(() => answered.every((n, c) => n > before[c]), 60_000, 'every client answered since the last kill');
        // A batch waiting in the queue means every worker is busy: the victim dies mid-batch.
        // (Where none queues within the deadline, a worker is still killed, maybe between batches.)
        await until(() => svc.pool.queued > 0, 2_000, 'a batch queued').catch(() => undefined);
        const victim = svc.pool.workers[k % svc.pool.workers.length];
        if (victim) {
          killedThreads.add(victim.threadId);
          await victim.terminate();
        }
      }
      const before = [...answered];
      await until(() => answered.every((n, c) => n > before[c]), 60_000, 'every client answered after the last kill');
      stop = true;
      await Promise.all(clients);
      assert.ok(killedThreads.size >= 4, 'workers were not killed');
      assert.ok(svc.pool.workerFailures > 0, 'no batch was in flight when a worker died');
      assert.ok(
        answered.every((n) => n > KILLS),
        `every client was answered between every two kills: ${answered.join(', ')}`,
      );
      // The pool is whole again, with no traffic to prompt it, and still answers.
      await waitForWorkers(svc.pool, 2);
      assert.equal((await postBatch(svc.port, { ips: ['81.7.1.1'] })).json.results['81.7.1.1'].is_vpn, true);
      assert.equal((await get(svc.port, '/81.7.1.1')).status, 200);
    } finally {
      await svc.close();
    }
  });

  test('a new build is hot-swapped under load with zero failed requests, on the front end and in the workers', async () => {
    const dataDir = tempDir();
    importFeed({ dataDir, file: writeFile(dataDir, 'f.csv', feed('Alpha')), name: 'f' });
    runBuild({ dataDir });
    const svc = await startTestService({ dataDir, batchWorkers: 2, keylessTier: TIER_MAX, indexPollMs: 50 });
    try {
      let stop = false;
      // Per client: each connection's answers must switch once and never go back.
      const series: string[][] = [];
      const failures: string[] = [];
      const singleClient = async (): Promise<void> => {
        const seen: string[] = [];
        series.push(seen);
        for (let i = 0; !stop; i++) {
          const r = await get(svc.port, i % 2 ? '/81.7.3.4' : '/2a01:4f8::1');
          if (r.status !== 200) failures.push(`GET ${r.status} ${r.text}`);
          else seen.push((r.json.vpn.provider ?? r.json.hosting.provider) as string);
        }
      };
      const batchClient = async (): Promise<void> => {
        const ips = Array.from({ length: 200 }, (_, i) => `81.7.${i}.9`);
        const seen: string[] = [];
        series.push(seen);
        while (!stop) {
          const r = await postBatch(svc.port, { ips });
          if (r.status !== 200 || Object.keys(r.json.errors).length) failures.push(`batch ${r.status} ${r.text.slice(0, 200)}`);
          else {
            const providers = new Set(Object.values(r.json.results).map((x: any) => x.vpn.provider)); // eslint-disable-line @typescript-eslint/no-explicit-any
            assert.equal(providers.size, 1, 'one batch mixed two builds');
            seen.push([...providers][0] as string);
          }
        }
      };
      const load = [singleClient(), singleClient(), singleClient(), batchClient(), batchClient()];
      await until(() => series.every((s) => s.length > 0), 10_000, 'every client answered from the first build');
      // Build and publish from another process, as an operator would.
      writeFile(dataDir, 'f.csv', feed('Beta'));
      const cli = path.join(PROJECT_ROOT, 'dist/src/cli.js');
      const env = { ...process.env, DATA_DIR: dataDir };
      await run(process.execPath, [cli, 'feed', 'import', path.join(dataDir, 'f.csv'), '--name', 'f'], { env });
      await run(process.execPath, [cli, 'build'], { env });
      await until(() => svc.holder.current?.generation === 2, 10_000, 'the new build serving');
      await until(() => series.every((s) => s[s.length - 1] === 'Beta'), 10_000, 'every client answered from the new build');
      stop = true;
      await Promise.all(load);
      assert.deepEqual(failures, []);
      for (const seen of series) {
        assert.equal(seen[0], 'Alpha');
        assert.equal(seen[seen.length - 1], 'Beta');
        const firstBeta = seen.indexOf('Beta');
        assert.ok(
          seen.slice(firstBeta).every((p) => p === 'Beta'),
          'an answer went back to the old build',
        );
        assert.ok(seen.length > 10, `light load: ${seen.length} answers`);
      }
    } finally {
      await svc.close();
    }
  });
});

// The index file's format: once.
describe('upgrades', againOn(), () => {
  test('a current build in an older index format is rebuilt from the imported feeds at start, and served', async () => {
    const dataDir = tempDir();
    writeFile(dataDir, 'f.csv', 'network,category,provider\n81.7.3.0/24,vpn,Alpha\n');
    importFeed({ dataDir, file: path.join(dataDir, 'f.csv'), name: 'f' });
    const old = runBuild({ dataDir, exports: false });
    const file = path.join(old.dir, INDEX_FILE);
    const bytes = fs.readFileSync(file);
    bytes.writeUInt32LE(FORMAT_VERSION - 1, 8); // as an older ipsift wrote it
    fs.writeFileSync(file, bytes);
    const lines: string[] = [];
    const svc = await startTestService(
      { dataDir },
      jsonLogger((l) => lines.push(l)),
    );
    try {
      assert.notEqual(svc.holder.current?.buildId, old.id);
      assert.equal(readCurrentBuildId(dataDir), svc.holder.current?.buildId);
      const r = await get(svc.port, '/81.7.3.20');
      assert.deepEqual([r.status, r.json], [200, { ip: '81.7.3.20', is_vpn: true }]);
      assert.ok(
        lines.some((l) => l.includes('older index format')),
        'the rebuild is logged',
      );
    } finally {
      await svc.close();
    }
  });
});
