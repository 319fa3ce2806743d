// The PostgreSQL side of postgres.ts, on a thread of its own (bridge/sync-serve.ts): one
// connection, made on first use and again after it is lost.

import pg from 'pg';
import { serveSyncCalls, syncData } from '../bridge/sync-serve.js';
import type { SyncRequest } from '../bridge/sync-call.js';

export type PostgresOp = 'query' | 'reset' | 'close';

const { url, connectTimeoutMs } = syncData<{ url: string; connectTimeoutMs: number }>();

// COUNT(*), MAX(bigint) and SUM come back as numbers, as SQLite gives them (all ours are far
// below 2^53).
pg.types.setTypeParser(pg.types.builtins.INT8, Number);
pg.types.setTypeParser(pg.types.builtins.NUMERIC, Number);

let client: pg.Client | null = null;
let connecting: Promise<pg.Client> | null = null;

function connection(): Promise<pg.Client> {
  if (client !== null) return Promise.resolve(client);
  connecting ??= (async () => {
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: connectTimeoutMs, application_name: 'ipsift' });
    // A lost connection is made again by the next query; the query in flight fails with it.
    c.on('error', () => drop(c));
    try {
      await c.connect();
    } catch (e) {
      drop(c);
      throw e;
    }
    client = c;
    return c;
  })().finally(() => (connecting = null));
  return connecting;
}

function drop(c: pg.Client): void {
  if (client === c) client = null;
  c.end().catch(() => {});
}

async function answer(r: SyncRequest<PostgresOp>): Promise<unknown> {
  switch (r.op) {
    case 'query': {
      try {
        const c = await connection();
        const res = await c.query({ text: r.args[0] as string, values: r.args[1] as unknown[] });
        return { rows: res.rows, rowCount: res.rowCount ?? 0 };
      } catch (e) {
        // Only the server's own errors carry their SQLSTATE on: a socket's code (EPIPE) is no
        // statement's fault, and the caller tells the two apart by the code.
        if (e instanceof pg.DatabaseError) throw e;
        throw new Error(e instanceof Error ? e.message || e.name : String(e));
      }
    }
    case 'reset':
      // After a timeout or a failed transaction the connection's state is unknown: a new one.
      if (client !== null) drop(client);
      return null;
    case 'close':
      if (client !== null) await client.end();
      client = null;
      return null;
  }
}

serveSyncCalls(answer);
