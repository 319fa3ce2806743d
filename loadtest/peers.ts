// `npm run bench:peers`: ipsift beside the servers it is measured against, in one run on the
// bench's data (1 M synthetic ranges): keyed GET /{ip} (scale key) on ipsift; the same
// requests on a hand-built uWS server and on fastify, each answering from the build's own
// ipsift_extended_v1.mmdb with the maxmind reader (loadtest/peer-server.ts); and uWS sending
// one fixed body, ipsift's answer for one address, the ceiling of any lookup server on uWS.
// Rounds alternate the servers (each round in a rotated order); every server runs on CPU 1
// and wrk on CPU 0 where taskset works. Per round, each server's req/s over the fixed body's
// in that round; the table gives medians.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EXPORTS_DIR, buildDir } from '../src/data-dir.js';
import { readCurrentBuildId } from '../src/index/builds.js';
import {
  CONNECTIONS,
  ROOT,
  haveTaskset,
  median,
  out,
  prepareBuild,
  probeAnswerFile,
  range,
  scaleKey,
  startIpsift,
  startProcess,
  wrk,
  type Server,
} from './kit.js';

const ROUNDS = Number(process.env.BENCH_RATIO_ROUNDS ?? 7);

interface Contender {
  name: string;
  /** The name in each round's line. */
  short: string;
  server: Server;
  rps: number[];
  cpuUs: number[];
  ratios: number[];
}

out(`ipsift bench of peers — ${os.cpus().length} cores, Node ${process.version}, ${new Date().toISOString()}`);
const dataDir = await prepareBuild();
const key = scaleKey(dataDir);
const pinned = os.cpus().length >= 2 && (await haveTaskset());
const serverCpu = pinned ? '1' : undefined;
const wrkCpu = pinned ? '0' : undefined;
const node = (args: string[], env: Record<string, string>): Promise<Server> =>
  startProcess(serverCpu ? ['-c', serverCpu, process.execPath, ...args] : args, env, /listening (\d+)/, serverCpu ? 'taskset' : process.execPath);

const ipsift = await startIpsift(dataDir, { HTTP_SERVER: 'uws' }, process.execPath, serverCpu);
const bodyFile = await probeAnswerFile(ipsift, key, 'peer-fixed-body.json');
const mmdb = path.join(buildDir(dataDir, readCurrentBuildId(dataDir)!), EXPORTS_DIR, 'ipsift_extended_v1.mmdb');
const peer = (kind: string): Promise<Server> => node([path.join(ROOT, 'dist/loadtest/peer-server.js')], { PORT: '0', PEER: kind, MMDB: mmdb });

const contenders: Contender[] = [];
const add = (name: string, short: string, server: Server): number => contenders.push({ name, short, server, rps: [], cpuUs: [], ratios: [] });
add(
  `uWS, fixed ${fs.statSync(bodyFile).size}-byte body (the ceiling)`,
  'fixed',
  await node([path.join(ROOT, 'dist/loadtest/fixed-server.js')], { PORT: '0', HTTP_SERVER: 'uws', BODY_FILE: bodyFile }),
);
add('ipsift (uWS, keyed, accounting on LMDB)', 'ipsift', ipsift);
add('uWS + maxmind reader', 'uWS+maxmind', await peer('uws'));
add('fastify + maxmind reader', 'fastify+maxmind', await peer('fastify'));

try {
  out(
    `peers: ${ROUNDS} rounds of ${process.env.BENCH_SECONDS ?? 5} s, ${CONNECTIONS} connections, GET /{ip} over random addresses${pinned ? ', servers on CPU 1, wrk on CPU 0' : ''}`,
  );
  for (const c of contenders) await wrk(c.server, 'random-get.lua', 1, CONNECTIONS, key, 1, wrkCpu); // warm up
  for (let round = 0; round < ROUNDS; round++) {
    const order = contenders.map((_, i) => contenders[(i + round) % contenders.length]);
    const rps = new Map<Contender, number>();
    for (const c of order) {
      const r = await wrk(c.server, 'random-get.lua', round + 2, CONNECTIONS, key, undefined, wrkCpu);
      if (r.errors > 0 && c.server === ipsift) throw new Error(`ipsift answered ${r.errors} requests with an error`);
      rps.set(c, r.rps);
      c.rps.push(r.rps);
      c.cpuUs.push((r.cpu / r.rps) * 1e6);
    }
    for (const c of contenders) c.ratios.push(rps.get(c)! / rps.get(contenders[0])!);
    out(`  round ${round + 1}: ${contenders.map((c) => `${c.short} ${Math.round(rps.get(c)!)}`).join(', ')} req/s`);
  }
  out('');
  out('| server | req/s (median) | server CPU µs per request | against the fixed body (median, range) |');
  out('|---|---|---|---|');
  for (const c of contenders) {
    out(`| ${c.name} | ${(Number(median(c.rps)) / 1000).toFixed(1)} k | ${median(c.cpuUs)} | ${median(c.ratios)} (${range(c.ratios)}) |`);
  }
} finally {
  for (const c of contenders) await c.server.stop();
}
