// ipsift behind real nginx (Debian nginx-light, installed by .ci/run), with the shipped
// configuration (deploy/nginx.conf) on each server and with nginx's defaults on node:http:
// lookups, batches, account and downloads through it, with the client and link origin nginx
// forwards (or, with the defaults, does not).

import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Service } from '../src/service.js';
import { fetchBytes, freePort, get, postBatch, PROJECT_ROOT, publishedDataDir, request, startTestService, tempDir, until, writeFile } from './helpers.js';

const NGINX = ['/usr/sbin/nginx', '/usr/local/sbin/nginx'].find((p) => fs.existsSync(p)) ?? null;

/** nginx's defaults: proxy_pass and nothing else (HTTP/1.0 upstream, no forwarding headers). */
const NGINX_DEFAULTS = `upstream ipsift {
    server 127.0.0.1:8080;
}
server {
    listen 80;
    location / {
        proxy_pass http://ipsift;
    }
}
`;

interface Setup {
  name: string;
  /** The server {} and upstream {} text (deploy/nginx.conf, or nginx's defaults). */
  conf: string;
  /** HTTP_SERVER for ipsift (undefined: the default, auto). */
  server?: 'node' | 'uws';
  /** Whether nginx forwards the client and the host it was asked for. */
  forwards: boolean;
}

const SHIPPED = fs.readFileSync(path.join(PROJECT_ROOT, 'deploy/nginx.conf'), 'utf8');
const SETUPS: Setup[] = [
  { name: 'the shipped configuration', conf: SHIPPED, forwards: true },
  { name: 'the shipped configuration, on node:http', conf: SHIPPED, server: 'node', forwards: true },
  // nginx speaks HTTP/1.0 upstream by default: node:http answers it (uWS cannot; README).
  { name: "nginx's defaults (HTTP/1.0 upstream), on node:http", conf: NGINX_DEFAULTS, server: 'node', forwards: false },
];

for (const setup of SETUPS) behindNginx(setup);

function behindNginx(setup: Setup): void {
  describe(`behind nginx with ${setup.name}`, { skip: NGINX ? false : 'nginx is not installed (apt-get install nginx-light; .ci/run does)' }, () => {
    let svc: Service;
    let nginx: ChildProcess;
    let port = 0;
    let key = '';

    before(async () => {
      const d = await publishedDataDir([{ scopes: ['db.download'] }]);
      key = d.keys[0];
      // nginx's defaults pass a client's own X-Forwarded-For through unchanged: trusting nginx
      // then would let clients choose their address, so that setup trusts no proxy.
      const trustedProxies = setup.forwards ? [{ family: 4 as const, start: 0x7f000000n, end: 0x7fffffffn }] : [];
      svc = await startTestService({ dataDir: d.dataDir, plansFile: d.plans, trustedProxies, ...(setup.server ? { httpServer: setup.server } : {}) });
      port = await freePort();
      const dir = tempDir('ipsift-nginx-');
      fs.chmodSync(dir, 0o777); // nginx's workers (nobody, when started as root) write request bodies here
      const shipped = setup.conf.replace('server 127.0.0.1:8080;', `server 127.0.0.1:${svc.port};`).replace('listen 80;', `listen 127.0.0.1:${port};`);
      const conf = writeFile(
        dir,
        'nginx.conf',
        `daemon off;\nworker_processes 1;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\nevents { worker_connections 1024; }\n` +
          `http {\n access_log off;\n client_body_temp_path ${dir}/body;\n proxy_temp_path ${dir}/proxy;\n fastcgi_temp_path ${dir}/fastcgi;\n uwsgi_temp_path ${dir}/uwsgi;\n scgi_temp_path ${dir}/scgi;\n${shipped}\n}\n`,
      );
      const check = spawnSync(NGINX!, ['-t', '-c', conf, '-p', dir], { encoding: 'utf8' });
      assert.equal(check.status, 0, check.stderr);
      nginx = spawn(NGINX!, ['-c', conf, '-p', dir], { stdio: 'ignore' });
      await until(
        () =>
          get(port, '/81.7.3.9').then(
            (r) => r.status === 200,
            () => false,
          ),
        5_000,
        'nginx answering through to ipsift',
      );
    });
    after(async () => {
      nginx?.kill('SIGTERM');
      await svc?.close();
    });

    test('single lookups, /myip and the account answer through nginx', async () => {
      const r = await get(port, '/81.7.3.9', { Authorization: `Bearer ${key}` });
      assert.equal(r.status, 200);
      assert.deepEqual([r.json.ip, r.json.is_vpn, r.json.vpn.provider], ['81.7.3.9', true, 'ExampleVPN']);
      assert.ok(r.headers['ratelimit-policy'] && r.headers.ratelimit);
      // The shipped file does not tell clients which server, or which version, answers.
      if (setup.forwards) assert.equal(r.headers.uwebsockets, undefined);
      assert.deepEqual((await get(port, '/not-an-ip')).json, { error: 'not a valid IP address' });
      // The shipped configuration forwards the client in X-Forwarded-For; ipsift trusts nginx's
      // address. With nginx's defaults (and no trusted proxy) the client is nginx itself.
      assert.equal((await get(port, '/myip', { 'X-Forwarded-For': '81.7.3.44' })).json.ip, setup.forwards ? '81.7.3.44' : '127.0.0.1');
      assert.equal((await get(port, '/api/v1/account/me', { Authorization: `Bearer ${key}` })).json.plan.tier, 'max');
    });

    test('batches, their 413 and many keep-alive requests through nginx', async () => {
      const r = await postBatch(port, { ips: ['81.7.3.9', '82.0.0.1', 'nope'] });
      assert.equal(r.status, 200);
      assert.deepEqual(Object.keys(r.json.results).sort(), ['81.7.3.9', '82.0.0.1']);
      const big = await request(port, 'POST', '/batch', `{"ips":["${'1'.repeat(600_000)}"]}`);
      assert.equal(big.status, 413);
      const replies = await Promise.all(Array.from({ length: 200 }, (_, i) => get(port, `/81.7.3.${i % 250}`)));
      assert.ok(replies.every((x) => x.status === 200));
    });

    test('a download link names the host nginx was asked for (or is relative), and the file comes through nginx', async () => {
      const r = await get(port, '/api/v1/database/download?id=vpn_v1&format=csvgz', { Authorization: `Bearer ${key}` });
      assert.equal(r.status, 302);
      const location = String(r.headers.location);
      // Without forwarded headers the link is a relative reference, resolved against nginx's URL.
      assert.ok(location.startsWith(setup.forwards ? `http://127.0.0.1:${port}/files/vpn_v1/` : '/files/vpn_v1/'), location);
      const file = await fetchBytes(new URL(location, `http://127.0.0.1:${port}/`).href);
      assert.equal(file.status, 200);
      assert.equal(file.body[0], 0x1f); // gzip
    });
  });
}

/** Debian's default site (nginx-common's sites-available/default, comments dropped), on the test's port. */
const DEBIAN_DEFAULT_SITE = (port: number): string => `server {
    listen 127.0.0.1:${port} default_server;
    root /var/www/html;
    index index.html index.htm index.nginx-debian.html;
    server_name _;
    location / {
        try_files $uri $uri/ =404;
    }
}
`;

describe("the shipped configuration beside Debian's default site", {
  skip: NGINX ? false : 'nginx is not installed (apt-get install nginx-light; .ci/run does)',
}, () => {
  test('nginx -t takes it without a conflict, and requests for its server_name reach ipsift', async () => {
    const d = await publishedDataDir([{ scopes: ['db.download'] }]);
    const svc = await startTestService({ dataDir: d.dataDir, plansFile: d.plans });
    let nginx: ChildProcess | null = null;
    try {
      const port = await freePort();
      const dir = tempDir('ipsift-nginx-');
      fs.chmodSync(dir, 0o777);
      const serverName = /^\s*server_name\s+([^;\s]+);/m.exec(SHIPPED)![1];
      assert.notEqual(serverName, '_', 'the shipped server names a host');
      const shipped = SHIPPED.replace(/server 127\.0\.0\.1:\d+;/, `server 127.0.0.1:${svc.port};`).replace('listen 80;', `listen 127.0.0.1:${port};`);
      const conf = writeFile(
        dir,
        'nginx.conf',
        `daemon off;\nworker_processes 1;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\nevents { worker_connections 64; }\n` +
          `http {\n access_log off;\n client_body_temp_path ${dir}/body;\n proxy_temp_path ${dir}/proxy;\n${DEBIAN_DEFAULT_SITE(port)}\n${shipped}\n}\n`,
      );
      const check = spawnSync(NGINX!, ['-t', '-c', conf, '-p', dir], { encoding: 'utf8' });
      assert.equal(check.status, 0, check.stderr);
      assert.doesNotMatch(check.stderr, /conflicting server name/);
      nginx = spawn(NGINX!, ['-c', conf, '-p', dir], { stdio: 'ignore' });
      const ask = () => get(port, '/81.7.3.9', { Host: serverName });
      await until(
        () =>
          ask().then(
            () => true,
            () => false,
          ),
        5000,
        'nginx listens',
      );
      const r = await ask();
      assert.deepEqual([r.status, r.json?.is_vpn], [200, true]);
      // Another name is the default site's, as Debian ships it: why server_name matters.
      assert.equal((await get(port, '/81.7.3.9', { Host: 'other.example' })).status, 404);
    } finally {
      nginx?.kill('SIGTERM');
      await svc.close();
    }
  });
});
