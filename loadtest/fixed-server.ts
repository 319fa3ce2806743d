// Baseline for the benchmark: uWebSockets.js answering every GET with one fixed JSON body,
// the ceiling any lookup server on this stack can reach.

import uWS from 'uWebSockets.js';

const body = Buffer.from('{"ip":"81.7.3.20","is_vpn":false}');
const port = Number(process.env.PORT ?? 0);
uWS
  .App()
  .get('/*', (res) => {
    res.writeHeader('Content-Type', 'application/json').end(body);
  })
  .listen('127.0.0.1', port, (socket) => {
    if (!socket) process.exit(1);
    process.stdout.write(`listening ${uWS.us_socket_local_port(socket)}\n`);
  });
