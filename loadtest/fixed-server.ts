// Baseline for the benchmark: a server answering every GET with one fixed JSON body, the
// ceiling any lookup server on that stack can reach. HTTP_SERVER picks the stack: uWS (the
// default), or node (a bare node:http server, no ipsift code in the way). With READ_PEER=1 it
// also reads the peer address of every request, as per-source accounting of keyless lookups
// must: the ceiling for a server that has to know who is asking.

import http from 'node:http';
import uWS from 'uWebSockets.js';

const body = Buffer.from('{"ip":"81.7.3.20","is_vpn":false}');
const port = Number(process.env.PORT ?? 0);
const readPeer = process.env.READ_PEER === '1';
let peers = 0;
if (process.env.HTTP_SERVER === 'node') {
  const server = http.createServer({ keepAliveTimeout: 75_000 }, (req, res) => {
    if (readPeer) peers += req.socket.remoteAddress?.length ?? 0;
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length }).end(body);
  });
  server.listen(port, '127.0.0.1', () => process.stdout.write(`listening ${(server.address() as { port: number }).port}\n`));
} else {
  uWS
    .App()
    .get('/*', (res) => {
      if (readPeer) peers += new Uint8Array(res.getRemoteAddress()).length;
      res.writeHeader('Content-Type', 'application/json').end(body);
    })
    .listen('127.0.0.1', port, (socket) => {
      if (!socket) process.exit(1);
      process.stdout.write(`listening ${uWS.us_socket_local_port(socket)}\n`);
    });
}
