// How long `npm start` takes to its first answer, started twice on one data directory: the
// first start makes the demo (import, build, accounts), the second finds a built, unchanged
// checkout and a data directory with a build. Each run on ephemeral ports, so it runs beside
// another `npm start`; the time is from the spawn to the first 200 of GET /81.7.3.20.
//
//   npm run bench:start [-- <runs>]

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../src/startup.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const answered = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/81.7.3.20', agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
  });

/** Milliseconds from `npm start` to its first answer. */
async function startOnce(dataDir: string): Promise<number> {
  const [port, adminPort] = [await freePort('127.0.0.1'), await freePort('127.0.0.1')];
  const t0 = performance.now();
  const child = spawn('npm', ['start', '--silent'], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), ADMIN_PORT: String(adminPort) },
    stdio: 'ignore',
    detached: true,
  });
  try {
    for (;;) {
      if (await answered(port)) return performance.now() - t0;
      if (performance.now() - t0 > 120_000) throw new Error('no answer within 120 s');
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    // npm and the server under it: the whole process group.
    process.kill(-child.pid!, 'SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

const runs = Number(process.argv[2] ?? 2);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipsift-start-'));
try {
  for (let i = 1; i <= runs; i++) {
    const ms = await startOnce(dataDir);
    process.stdout.write(`start ${i}${i === 1 ? ' (empty data directory: the demo is made)' : ''}: first answer after ${(ms / 1000).toFixed(2)} s\n`);
  }
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
