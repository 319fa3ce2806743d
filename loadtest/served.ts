// Keyed lookups counted on the whole server: `ipsift serve` on uWS under callgrind, asked over
// loopback sockets by a client outside it. The in-process harness (instructions.ts) counts the
// JavaScript of a request against a fake request and response, so it cannot see what uWS and
// V8's API cost: a walk over a request's headers, two strings and a call into JavaScript per
// header, read there as 200 instructions and here as 2 000. This count holds them.
//
// Only the front end's thread is counted (FRONTEND_THREADS=1 serves on the main thread), with
// the harness's V8 flags. Each stretch is marked with callgrind_control (zero before, dump
// after), which reaches the process through vgdb even while it waits in epoll.
//
// Instructions alone can misjudge it: against 62a69cd this checkout ran 3.5 % fewer
// instructions a keyed lookup and served 2 % fewer a second, with 28 % more L1 data misses.
// So the same run can also simulate the caches and the branch predictor and count estimated
// cycles (callgrind-dump.ts), which put this checkout 0.7 % above 62a69cd, and the header walk at 8 %
// of a keyed lookup (bench:ab: 3 % of req/s, the kernel's share of the server's time aside).

import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { prng } from '../scripts/gen-feeds.js';
import { countOfDump } from './callgrind-dump.js';
import { LISTENING, startProcess } from './kit.js';

const run = promisify(execFile);

/** Connections the client keeps, each one request at a time. */
const CONNECTIONS = 4;

/** Request bytes for a fixed mix of addresses (most IPv4, some IPv6), each with the key. */
function requestsFor(key: string, count: number): Buffer[] {
  const rnd = prng(13);
  const byte = (): number => Math.floor(rnd() * 256);
  return Array.from({ length: count }, () => {
    const ip =
      rnd() < 0.8
        ? `${1 + Math.floor(rnd() * 223)}.${byte()}.${byte()}.${byte()}`
        : `2001:db8:${Math.floor(rnd() * 65536).toString(16)}::${Math.floor(rnd() * 65536).toString(16)}`;
    return Buffer.from(`GET /${ip} HTTP/1.1\r\nHost: ipsift.test\r\nAuthorization: Bearer ${key}\r\n\r\n`);
  });
}

/** Sends n requests over CONNECTIONS connections, each after the last answer; every answer must be a 200. */
async function load(port: number, requests: Buffer[], n: number): Promise<void> {
  let next = 0;
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      let pending: Buffer = Buffer.alloc(0);
      const send = (): void => {
        if (next >= n) {
          socket.end();
          resolve();
        } else socket.write(requests[next++ % requests.length]);
      };
      socket.on('connect', send);
      socket.on('error', reject);
      socket.on('data', (chunk: Buffer) => {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
        for (;;) {
          const end = pending.indexOf('\r\n\r\n');
          if (end < 0) return;
          const head = pending.subarray(0, end).toString('latin1');
          const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? NaN);
          if (!head.startsWith('HTTP/1.1 200 ') || !(length >= 0)) {
            socket.destroy();
            return reject(new Error(`not an answer: ${head.split('\r\n')[0]}`));
          }
          if (pending.length < end + 4 + length) return;
          pending = pending.subarray(end + 4 + length);
          send();
        }
      });
    });
  await Promise.all(Array.from({ length: CONNECTIONS }, one));
}

export interface ServedPlan {
  warmup: number;
  n: number;
  stretches: number;
  /** Count estimated cycles (callgrind-dump.ts) instead of instructions: callgrind simulates the caches and branches. */
  cycles?: boolean;
}

/**
 * Instructions (or with plan.cycles, estimated cycles) per keyed lookup on the front end's
 * thread of `ipsift serve` (this checkout's build) over the prepared data directory `dataDir`
 * (its key in keyFile, its plans in plansFile): the least of `stretches` stretches of n
 * requests after `warmup`.
 */
/**
 * The caches the cycle estimate simulates, fixed: left to itself callgrind takes the host's
 * (CPUID), so the same code read 32 771 cycles a request on one machine and 36 219 on another
 * with the instructions equal to 0.2 %. A typical server core: 32 KiB 8-way L1s, a 16-way LL of
 * 8 MiB, 64-byte lines.
 */
export const SIMULATED_CACHES = ['--I1=32768,8,64', '--D1=32768,8,64', '--LL=8388608,16,64'];

export async function measureServed(
  cli: string,
  dataDir: string,
  keyFile: string,
  plansFile: string,
  v8Flags: string[],
  plan: ServedPlan,
  work: string,
): Promise<number> {
  const out = path.join(work, 'served.out');
  // Valgrind names the pipes callgrind_control talks through after $HOST, which ipsift reads
  // too (loopback here): both are given the same.
  const env = { ...process.env, HOST: '127.0.0.1' };
  const server = await startProcess(
    [
      '--tool=callgrind',
      ...(plan.cycles ? ['--cache-sim=yes', '--branch-sim=yes', ...SIMULATED_CACHES] : []),
      `--callgrind-out-file=${out}`,
      '--separate-threads=yes',
      process.execPath,
      '--initial-old-space-size=64',
      ...v8Flags,
      cli,
      'serve',
    ],
    {
      HOST: env.HOST,
      NODE_OPTIONS: '',
      DATA_DIR: dataDir,
      PLANS_FILE: plansFile,
      PORT: '0',
      ADMIN_HOST: '127.0.0.1',
      ADMIN_PORT: '0',
      DEMO: '0',
      PUBLISH_AT: '',
      FRONTEND_THREADS: '1',
      BATCH_WORKERS: '1',
      ACCESS_LOG: '0',
    },
    LISTENING,
    'valgrind',
  );
  const pid = String(server.child.pid);
  try {
    const port = server.port;
    const requests = requestsFor(fs.readFileSync(keyFile, 'utf8'), 1024);
    await load(port, requests, plan.warmup);
    let least = Infinity;
    for (let k = 1; k <= plan.stretches; k++) {
      await run('callgrind_control', ['--zero', pid], { env });
      await load(port, requests, plan.n);
      await run('callgrind_control', ['--dump', pid], { env });
      least = Math.min(least, countOfDump(out, k, 'served', plan.cycles)); // thread 1 is the front end
    }
    return Math.round(least / plan.n);
  } finally {
    await server.stop();
  }
}
