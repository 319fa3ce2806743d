// Baseline for the benchmark: a server answering every GET with one fixed JSON body, the
// ceiling any lookup server on that stack can reach. HTTP_SERVER picks the stack: uWS (the
// default), node (a bare node:http server, no ipsift code in the way) or bun (a bare
// Bun.serve, run with bun). With READ_PEER=1 it also reads the peer address of every request,
// as per-source accounting of keyless lookups must: the ceiling for a server that has to know
// who is asking.

import http from 'node:http';
import { bunRuntime } from '../src/http/server/bun.js';
import { loadNativeUws } from '../src/http/server/uws.js';

const body = Buffer.from('{"ip":"81.7.3.20","is_vpn":false}');
const port = Number(process.env.PORT ?? 0);
const readPeer = process.env.READ_PEER === '1';
const listening = (p: number): boolean => process.stdout.write(`listening ${p}\n`);
let peers = 0;
const kind = process.env.HTTP_SERVER ?? 'uws';
if (kind === 'node') {
  const server = http.createServer({ keepAliveTimeout: 75_000 }, (req, res) => {
    if (readPeer) peers += req.socket.remoteAddress?.length ?? 0;
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length }).end(body);
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
      return new Response(body, { headers: [['Content-Type', 'application/json']] });
    },
    error: () => new Response('', { status: 500 }),
  });
  listening(server.port);
} else {
  const loaded = loadNativeUws();
  if (!('uws' in loaded)) {
    process.stderr.write(`cannot serve: ${loaded.reason}\n`);
    process.exit(1);
  }
  const uWS = loaded.uws;
  uWS
    .App()
    .get('/*', (res) => {
      if (readPeer) peers += new Uint8Array(res.getRemoteAddress()).length;
      res.writeHeader('Content-Type', 'application/json').end(body);
    })
    .listen('127.0.0.1', port, (socket) => {
      if (!socket) process.exit(1);
      listening(uWS.us_socket_local_port(socket));
    });
}
