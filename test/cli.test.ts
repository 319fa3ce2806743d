import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, test } from 'node:test';
import { PROJECT_ROOT, get, tempDir, writeFile } from './helpers.js';

const run = promisify(execFile);
const CLI = path.join(PROJECT_ROOT, 'dist/src/cli.js');

async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

/** Starts `ipsift serve` and resolves with its ports once it logs that it listens. */
function serve(env: Record<string, string>): Promise<{ port: number; adminPort: number; stop(): void; log: () => string }> {
  const child = spawn(process.execPath, [CLI, 'serve'], { env: { ...process.env, PORT: '0', ADMIN_PORT: '0', ...env } });
  let log = '';
  return new Promise((resolve, reject) => {
    child.stderr.on('data', (c: Buffer) => {
      log += c;
      const m = /"msg":"listening","url":"http:\/\/[^:]+:(\d+)","admin":"http:\/\/[^:]+:(\d+)"/.exec(log);
      if (m) resolve({ port: Number(m[1]), adminPort: Number(m[2]), stop: () => child.kill('SIGTERM'), log: () => log });
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${log}`)));
  });
}

describe('ipsift command line', () => {
  test('serve on an empty data directory imports the demo feeds, builds, and becomes ready', async () => {
    const dataDir = tempDir();
    const s = await serve({ DATA_DIR: dataDir, KEYLESS_TIER: 'max' });
    try {
      const ready = await get(s.adminPort, '/readyz');
      assert.equal(ready.status, 200);
      assert.match(ready.json.build, /^\d{8}-1$/);
      const tor = await get(s.port, '/81.7.3.20'); // from data/demo/tor-exits.txt
      assert.equal(tor.json.is_tor, true);
      assert.equal(tor.json.tor.provider, 'Tor Project');
      const v6 = await get(s.port, '/2a01:4f8:c012:3e7b::5');
      assert.equal(v6.json.is_tor, true);
      const metrics = await get(s.adminPort, '/metrics');
      assert.match(metrics.text, /ipsift_index_generation 1/);
      assert.match(s.log(), /"msg":"demo build published"/);
    } finally {
      s.stop();
    }
  });

  test('serve refuses to start on the slow uWebSockets.js fallback unless allowed', async () => {
    const r = await cli(['serve'], { DATA_DIR: tempDir(), UWS_USE_FALLBACK: '1', PORT: '0', ADMIN_PORT: '0', DEMO: '0' });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /fell back to its slow pure-JS server/);
  });

  test('feed import, build and builds report what they did', async () => {
    const dataDir = tempDir();
    const file = writeFile(dataDir, 'exits.txt', '1.2.3.4\n5.6.7.0/24\n');
    const imported = await cli(['feed', 'import', file, '--category', 'tor', '--provider', 'Tor Project', '--json'], { DATA_DIR: dataDir });
    assert.equal(imported.code, 0, imported.stderr);
    assert.equal(JSON.parse(imported.stdout).rows, 2);
    const built = await cli(['build'], { DATA_DIR: dataDir });
    assert.equal(built.code, 0, built.stderr);
    assert.match(built.stdout, /build \d{8}-1 \(published\)/);
    assert.match(built.stdout, /ranges IPv4: tor 2/);
    assert.match(built.stdout, /timings: read_feeds \d+ ms/);
    const builds = await cli(['builds', '--json'], { DATA_DIR: dataDir });
    assert.equal(JSON.parse(builds.stdout)[0].current, true);
  });

  test('a bad feed fails with file, line and reason, exit code 1', async () => {
    const dataDir = tempDir();
    const file = writeFile(dataDir, 'bad.csv', 'network,category\n1.2.3.4,vpn\n1.2.3.999,vpn\n');
    const r = await cli(['feed', 'import', file], { DATA_DIR: dataDir });
    assert.equal(r.code, 1);
    assert.equal(r.stderr.trim(), `ipsift: ${file}:3: not an address, CIDR or range: "1.2.3.999"`);
  });

  test('every command has --help; unknown ones are usage errors', async () => {
    for (const args of [['--help'], ['serve', '--help'], ['feed', 'import', '--help'], ['feed', 'list', '--help'], ['build', '--help'], ['builds', '--help']]) {
      const r = await cli(args);
      assert.equal(r.code, 0, args.join(' '));
      assert.match(r.stdout, /Usage: ipsift/);
    }
    assert.equal((await cli(['frobnicate'])).code, 2);
    assert.equal((await cli(['build'], { DATA_DIR: tempDir() })).code, 1);
  });
});
