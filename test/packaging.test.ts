// Packaging: the Dockerfile replayed on this machine (docker build cannot run here; see
// scripts/dockerfile-check.ts) and run as a container would be, and the systemd unit and
// compose file checked against the configuration they set.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { CONFIG_VARIABLES, loadConfig } from '../src/config.js';
import { build, finalImage, healthCheck, platformMatches, start } from '../scripts/dockerfile-check.js';
import { PROJECT_ROOT, get } from './helpers.js';

const mismatch = platformMatches(finalImage());

describe('the container image (Dockerfile replayed)', { skip: mismatch ?? false }, () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ipsift-image-'));
  after(() => fs.rmSync(work, { recursive: true, force: true }));

  test('builds, serves the demo on the exposed ports, passes its health check, keeps its data on the volume, stops cleanly', { timeout: 300_000 }, async () => {
    const img = build(work);
    assert.deepEqual(img.exposed, [8080, 8081]);
    assert.deepEqual(img.volumes, ['/data']);
    // No development dependency in the image: the TypeScript compiler and the type packages stay in the build stage.
    for (const dev of ['typescript', '@types/node', '@maxmind/geoip2-node'])
      assert.ok(!fs.existsSync(path.join(img.cwd, 'node_modules', dev)), `${dev} in the image`);
    // One uWS binary in the image: this system's, CPU's and ABI's (the others are pruned).
    const own = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
    const uws = path.join(img.cwd, 'node_modules', '@btc-vision', 'uwebsockets.js');
    assert.deepEqual(
      fs.readdirSync(uws).filter((f) => f.endsWith('.node')),
      [own],
    );
    assert.deepEqual(
      fs.readdirSync(path.join(img.cwd, 'node_modules', 'uWebSockets.js', 'binaries')).filter((f) => f.endsWith('.node')),
      [],
    );
    // The image's own configuration listens on the ports it EXPOSEs; the replay maps them to
    // ephemeral ones, as `docker run -p` would, so it runs beside `npm start` on the same host.
    const config = loadConfig(img.env);
    assert.deepEqual([config.port, config.adminPort], img.exposed);
    // `ipsift` is on the image's PATH (/usr/local/bin), as `docker compose exec builder ipsift …` runs it.
    const onPath = spawnSync(path.join(img.root, 'usr/local/bin/ipsift'), ['--version'], { encoding: 'utf8', cwd: img.cwd });
    assert.equal(onPath.status, 0, onPath.stderr);
    assert.match(onPath.stdout, /^ipsift \d/);
    const s = await start(img, 'ephemeral');
    try {
      assert.ok(!img.exposed.includes(s.port) && !img.exposed.includes(s.adminPort), `listened on ${s.port}, ${s.adminPort}`);
      assert.match(s.log(), /"http_server":"uws"/, 'the uWS binary loads in the image');
      assert.equal((await get(s.adminPort, '/readyz')).status, 200);
      // The console's files were built in the image's build stage and are served from it.
      const page = await get(s.adminPort, '/console/');
      assert.deepEqual([page.status, page.headers['content-type']], [200, 'text/html; charset=utf-8']);
      const main = page.text.match(/\/console\/assets\/[0-9a-f]{16}\/main\.js/);
      assert.ok(main, page.text.slice(0, 300));
      assert.equal((await get(s.adminPort, main[0])).status, 200);
      const keys = (JSON.parse(s.stdout().trim()) as { keys: { plan: string; key: string }[] }).keys;
      const max = keys.find((k) => k.plan === 'max')!;
      const r = await get(s.port, '/81.7.3.20', { Authorization: `Bearer ${max.key}` });
      assert.deepEqual([r.status, r.json.is_tor], [200, true]);
      assert.ok(img.healthcheck!.join(' ').includes(`127.0.0.1:${img.exposed[1]}/readyz`), 'the HEALTHCHECK asks the exposed admin port');
      const [cmd, ...args] = healthCheck(img, s.adminPort);
      assert.equal(spawnSync(cmd, args, { env: { PATH: process.env.PATH, ...img.env } }).status, 0, 'HEALTHCHECK');
      // DATA_DIR is the volume: the stores live there, not in the image's working directory.
      const volume = path.join(img.root, 'data');
      for (const f of ['control.sqlite', 'accounting.lmdb', 'demo-keys.json']) assert.ok(fs.existsSync(path.join(volume, f)), `${f} on the volume`);
      assert.ok(!fs.existsSync(path.join(img.cwd, 'data', 'control.sqlite')));
    } finally {
      assert.equal(await s.stop(), 0, 'exit 0 on STOPSIGNAL');
    }
  });
});

test('every launcher of the service gives V8 the same room in the old generation', () => {
  const flag = '--initial-old-space-size=64';
  const read = (f: string): string => fs.readFileSync(path.join(PROJECT_ROOT, f), 'utf8');
  const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
  assert.match(pkg.scripts.start, new RegExp(`node ${flag} dist/src/cli\\.js serve`));
  assert.equal(read('bin/ipsift.js').split('\n')[0], `#!/usr/bin/env -S node ${flag}`);
  assert.match(read('Dockerfile'), new RegExp(`^ENTRYPOINT \\["node", "${flag}", "dist/src/cli\\.js"\\]$`, 'm'));
  assert.match(read('deploy/ipsift.service'), new RegExp(`^ExecStart=/usr/bin/node ${flag} `, 'm'));
  // The bin runs as npm links it: through its shebang.
  const r = spawnSync(path.join(PROJECT_ROOT, 'bin/ipsift.js'), ['--version'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});

describe('the systemd unit and the compose file', () => {
  const unit = fs.readFileSync(path.join(PROJECT_ROOT, 'deploy/ipsift.service'), 'utf8');
  const compose = fs.readFileSync(path.join(PROJECT_ROOT, 'deploy/compose.yaml'), 'utf8');
  const known = new Set<string>([...CONFIG_VARIABLES, 'CONFIG_FILE', 'GLIBC_TUNABLES']);

  test('every setting they make is one ipsift reads; stop timeouts outlast the shutdown grace', () => {
    const unitVars = [...unit.matchAll(/^Environment=([A-Z0-9_]+)=/gm)].map((m) => m[1]);
    assert.ok(unitVars.includes('DATA_DIR'));
    for (const v of unitVars) assert.ok(known.has(v), `the unit sets ${v}`);
    assert.match(unit, /^ExecStart=\/usr\/bin\/node --initial-old-space-size=64 \/opt\/ipsift\/dist\/src\/cli\.js serve$/m);
    assert.match(unit, /^KillSignal=SIGTERM$/m);
    assert.match(unit, /^ExecReload=\/bin\/kill -HUP \$MAINPID$/m);
    const grace = 30; // SHUTDOWN_GRACE_S's default
    assert.ok(Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)![1]) > grace);
    const composeVars = [...compose.matchAll(/^\s+#?\s*([A-Z0-9_]+): "/gm)].map((m) => m[1]);
    assert.ok(composeVars.length >= 3);
    for (const v of composeVars) assert.ok(known.has(v), `compose sets ${v}`);
    assert.ok(Number(/stop_grace_period: (\d+)s/.exec(compose)![1]) > grace);
    assert.match(compose, /- ipsift-data:\/data/);
    const example = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'deploy/ipsift.example.json'), 'utf8')) as Record<string, unknown>;
    for (const k of Object.keys(example)) assert.ok(known.has(k), `the example config sets ${k}`);
  });

  test('the cluster compose file: the builder and the serving nodes each make a configuration ipsift accepts', () => {
    const cluster = fs.readFileSync(path.join(PROJECT_ROOT, 'deploy/cluster-compose.yaml'), 'utf8');
    /** `NAME: "value"` lines of one top-level block's part (the anchor, or a service). */
    const settings = (from: RegExp): Record<string, string> => {
      const start = cluster.search(from);
      assert.ok(start >= 0, `${from} in the file`);
      const block = cluster.slice(start).split(/\n(?=\S| {2}[a-z]+:\n)/)[0];
      return Object.fromEntries([...block.matchAll(/^\s+([A-Z0-9_]+): "([^"]*)"$/gm)].map((m) => [m[1], m[2]]));
    };
    const shared = settings(/^x-cluster:/m);
    const aws = new Set(['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']);
    for (const [role, from] of [
      ['builder', /^ {2}builder:/m],
      ['serve', /^ {2}serve:/m],
    ] as const) {
      const env = { ...shared, ...settings(from) };
      for (const v of Object.keys(env)) assert.ok(known.has(v) || aws.has(v), `${role} sets ${v}`);
      const config = loadConfig(Object.fromEntries(Object.entries(env).filter(([k]) => !aws.has(k))));
      assert.equal(config.role, role === 'serve' ? 'serve' : 'all');
      assert.equal(config.accounting.kind, 'redis');
      assert.match(config.controlDb?.url ?? '', /^postgres:\/\//);
      assert.equal(config.objectStore.kind, 's3');
    }
  });
});
