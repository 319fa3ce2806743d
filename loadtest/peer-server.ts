// A hand-built lookup server of the kind ipsift is measured against (`npm run bench:peers`):
// GET /{ip} answered from a MaxMind DB with the maxmind reader, the record as JSON. No keys,
// no accounting, no limits: the least such a server does. PEER picks the stack: uws (on
// uWebSockets.js, as ipsift serves) or fastify (on node:http). MMDB names the database.

import net from 'node:net';
import Fastify from 'fastify';
import maxmind from 'maxmind';
import fs from 'node:fs';
import { uwsOrExit } from './uws-or-exit.js';

const reader = new maxmind.Reader<Record<string, unknown>>(fs.readFileSync(process.env.MMDB!));
const port = Number(process.env.PORT ?? 0);
const listening = (p: number): boolean => process.stdout.write(`listening ${p}\n`);

/** The answer for a path's address: the record with the address, or a 400's body. */
function answer(ip: string): { status: number; body: string } {
  if (net.isIP(ip) === 0) return { status: 400, body: JSON.stringify({ error: 'invalid_ip' }) };
  const record = reader.get(ip);
  return { status: 200, body: JSON.stringify({ ip, found: record !== null, ...record }) };
}

if (process.env.PEER === 'fastify') {
  const app = Fastify({ logger: false, keepAliveTimeout: 75_000 });
  app.get('/:ip', (req, reply) => {
    const a = answer((req.params as { ip: string }).ip);
    void reply.code(a.status).header('Content-Type', 'application/json').send(a.body);
  });
  const url = await app.listen({ host: '127.0.0.1', port });
  listening(Number(new URL(url).port));
} else {
  const uWS = uwsOrExit();
  uWS
    .App()
    .get('/:ip', (res, req) => {
      const a = answer(req.getParameter(0) ?? '');
      res.cork(() => {
        if (a.status !== 200) res.writeStatus('400 Bad Request');
        res.writeHeader('Content-Type', 'application/json').end(a.body);
      });
    })
    .listen('127.0.0.1', port, (socket) => {
      if (!socket) process.exit(1);
      listening(uWS.us_socket_local_port(socket));
    });
}
