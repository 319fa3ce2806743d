// The three memory attacks of issue #11, against a real server process on loopback
// (npm run attacks): what the server's RSS grows by while they hold, and after they close.
//   1. batch heads declaring 512 KiB, each sending a first 1 KiB of body and then nothing;
//   2. requests with distinct 60 KB unknown keys (no valid key needed; 401s are not limited);
//   3. download readers that never read one signed link.
// Bounded in count and time; loopback only.

import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { plansFile, serveProcess, tempDir } from '../test/helpers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rssMib(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Math.round(Number(m![1]) / 1024);
}

function connections(port: number, n: number, bytes: (i: number) => string): Promise<net.Socket[]> {
  const out: net.Socket[] = [];
  return new Promise((resolve) => {
    let open = 0;
    for (let i = 0; i < n; i++) {
      const s = net.connect(port, '127.0.0.1', () => {
        s.write(bytes(i));
        if (++open === n) resolve(out);
      });
      s.on('error', () => {
        if (++open === n) resolve(out);
      });
      out.push(s);
    }
  });
}

async function main(): Promise<void> {
  const dataDir = tempDir('ipsift-attacks-');
  const lavish = { per_second: 1_000_000, burst: 1_000_000 };
  const plans = plansFile(dataDir, {
    keyless: { daily_cap: 1_000_000_000, rate: lavish },
    plans: ['free', 'starter', 'scale', 'max'].map((t) => ({ key: t, tier: t, quota: 1_000_000_000, rate: lavish, hard_limit: null })),
  });
  const server = await serveProcess({ DATA_DIR: dataDir, PLANS_FILE: plans, DEMO: '1' });
  const pid = server.child.pid!;
  const port = server.port;
  const keys = JSON.parse(fs.readFileSync(path.join(dataDir, 'demo-keys.json'), 'utf8')) as { plan: string; key: string }[];
  const max = keys.find((k) => k.plan === 'max')!.key;
  try {
    await sleep(1000);
    // 1. Batch heads declaring 512 KiB.
    const base1 = rssMib(pid);
    const heads = await connections(
      port,
      5000,
      () => `POST /batch HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${max}\r\nContent-Length: 524288\r\n\r\n{"ips":[${' '.repeat(1016)}`,
    );
    await sleep(2000);
    const held1 = rssMib(pid);
    for (const s of heads) s.destroy();
    await sleep(2000);
    console.log(
      `batch heads: 5000 connections declaring 512 KiB, 1 KiB sent: RSS ${base1} → ${held1} MiB while held (+${held1 - base1}), ${rssMib(pid)} MiB after they closed`,
    );

    // 2. Distinct 60 KB unknown keys.
    const base2 = rssMib(pid);
    const N = 20_000;
    let sent = 0;
    let statusOk = 0;
    const worker = async (): Promise<void> => {
      while (sent < N) {
        const i = sent++;
        const key = `${i}-`.padEnd(60_000, 'k');
        const status = await new Promise<number>((resolve) => {
          const req = http.get({ host: '127.0.0.1', port, path: '/81.7.3.20', headers: { 'X-Api-Key': key }, agent: false }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          });
          req.on('error', () => resolve(0));
        });
        if (status === 401) statusOk++;
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    await sleep(1000);
    console.log(`unknown keys: ${N} distinct 60 KB keys, ${statusOk} answered 401: RSS ${base2} → ${rssMib(pid)} MiB (+${rssMib(pid) - base2})`);

    // 3. Readers that never read one signed link.
    const link = await new Promise<string>((resolve, reject) => {
      http
        .get(
          {
            host: '127.0.0.1',
            port,
            path: '/api/v1/database/download?id=ipsift_extended_v1&format=mmdb',
            headers: { Authorization: `Bearer ${max}` },
            agent: false,
          },
          (res) => {
            res.resume();
            resolve(res.headers.location!);
          },
        )
        .on('error', reject);
    });
    const base3 = rssMib(pid);
    const readers = await connections(port, 3000, () => `GET ${link} HTTP/1.1\r\nHost: a\r\n\r\n`);
    for (const s of readers) s.pause();
    const started = Date.now();
    let slowest = 0;
    for (let i = 0; i < 20; i++) {
      const t = Date.now();
      await new Promise<void>((resolve) =>
        http.get({ host: '127.0.0.1', port, path: '/81.7.3.20', agent: false }, (res) => res.resume().on('end', () => resolve())).on('error', () => resolve()),
      );
      slowest = Math.max(slowest, Date.now() - t);
      await sleep(100);
    }
    await sleep(Math.max(0, 3000 - (Date.now() - started)));
    const held3 = rssMib(pid);
    for (const s of readers) s.destroy();
    await sleep(1500);
    console.log(
      `stalled readers: 3000 of one signed link: RSS ${base3} → ${held3} MiB while held (+${held3 - base3}), ${rssMib(pid)} MiB after they closed; slowest of 20 lookups meanwhile ${slowest} ms`,
    );
  } finally {
    server.child.kill('SIGKILL');
  }
}

await main();
