// Baseline for the benchmark: a server answering every GET with one fixed JSON body, the
// ceiling any lookup server on that stack can reach. HTTP_SERVER picks the stack: uWS (the
// default), node (a bare node:http server, no ipsift code in the way) or bun (a bare
// Bun.serve, run with bun). With READ_PEER=1 it also reads the peer address of every request,
// as per-source accounting of keyless lookups must: the ceiling for a server that has to know
// who is asking. With SAME_HEAD=1 it answers with the head of a keyed ipsift answer (its
// Content-Type, Cache-Control and five quota headers, fixed values): what the server itself
// charges for those header lines, apart from the work of making them.

import fs from 'node:fs';
import http from 'node:http';
import { bunRuntime } from '../src/http/server/bun.js';
import { uwsOrExit } from './uws-or-exit.js';

/** BODY_FILE: answer with that file's bytes (the bench of peers sends a real answer's body). */
const body = process.env.BODY_FILE ? fs.readFileSync(process.env.BODY_FILE) : Buffer.from('{"ip":"81.7.3.20","is_vpn":false}');
const port = Number(process.env.PORT ?? 0);
const readPeer = process.env.READ_PEER === '1';
/** The header lines of a keyed answer of the bench's plan (json-head.ts), after Content-Type. */
const QUOTA_HEAD: [string, string][] = [
  ['Cache-Control', 'private, no-store'],
  ['RateLimit-Policy', '"rate";q=1000000000;w=1'],
  ['RateLimit', '"rate";r=999999999;t=1'],
  ['X-Allowance-Quota', '1000000000000'],
  ['X-Allowance-Used', '12345'],
  ['X-Allowance-Reset', '1234567'],
];
const head: [string, string][] = [['Content-Type', 'application/json'], ...(process.env.SAME_HEAD === '1' ? QUOTA_HEAD : [])];
const headRecord = Object.fromEntries(head);
const headLines = head.map(([n, v]) => `${n}: ${v}`).join('\r\n');
const nodeHead = [...head.flat(), 'Content-Length', String(body.length)];
const listening = (p: number): boolean => process.stdout.write(`listening ${p}\n`);
// biome-ignore lint/correctness/noUnusedVariables: a sink, so that reading the peer is not optimised away
let peers = 0;
const kind = process.env.HTTP_SERVER ?? 'uws';
if (kind === 'node') {
  const server = http.createServer({ keepAliveTimeout: 75_000 }, (req, res) => {
    if (readPeer) peers += req.socket.remoteAddress?.length ?? 0;
    res.writeHead(200, 'OK', nodeHead).end(body);
  });
  server.listen(port, '127.0.0.1', () => listening((server.address() as { port: number }).port));
} else if (kind === 'bun') {
  const bun = bunRuntime();
  if (bun === null) {
    process.stderr.write('cannot serve: HTTP_SERVER=bun needs bun\n');
    process.exit(1);
  }
  const server = bun.serve({
    hostname: '127.0.0.1',
    port,
    development: false,
    idleTimeout: 75,
    maxRequestBodySize: 1 << 20,
    fetch: (req, s) => {
      if (readPeer) peers += s.requestIP(req)?.address.length ?? 0;
      return new Response(body, { headers: headRecord });
    },
    error: () => new Response('', { status: 500 }),
  });
  listening(server.port);
} else {
  const uWS = uwsOrExit();
  // The head as ipsift writes a 200's: the status line and every header in one call (json-head.ts).
  const statusAndHead = process.env.SAME_HEAD === '1' ? new TextEncoder().encode(`200 OK\r\n${headLines}`) : null;
  uWS
    .App()
    .get('/*', (res) => {
      if (readPeer) peers += new Uint8Array(res.getRemoteAddress()).length;
      if (statusAndHead === null) res.writeHeader('Content-Type', 'application/json').end(body);
      else res.writeStatus(statusAndHead).end(body);
    })
    .listen('127.0.0.1', port, (socket) => {
      if (!socket) process.exit(1);
      listening(uWS.us_socket_local_port(socket));
    });
}
