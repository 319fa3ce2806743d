// The red-team checks of one customer's reach, re-run against a real server process on
// loopback (npm run attacks:reach), each bounded in count and time:
//   1. key churn by one key with apikeys.manage: how many keys it makes before it is refused;
//   2. key lists requested 16 at a time (an organisation at MAX_KEYS_PER_ORG) while a probe
//      looks up on the same thread: the probe's p50/p99, against the probe alone;
//   3. GET /api/v1/openapi.json with Accept-Encoding br / gzip against identity: req/s;
//   4. a key name carrying terminal escapes, as `ipsift org show` prints it;
//   5. node:http: a malformed pipelined packet, then SIGTERM: how long the stop takes, clean or not.

import { execFileSync } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import autocannon from 'autocannon';
import { createKey, createOrganisation } from '../src/control/accounts.js';
import { loadPlans } from '../src/model/plans.js';
import { PROJECT_ROOT, openTestControlDb, plansFile, publishedDataDir, serveProcess } from '../test/helpers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function call(
  port: number,
  method: string,
  p: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; body: string; ms: number }> {
  const t = performance.now();
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: p, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, ms: performance.now() - t }));
    });
    req.on('error', () => resolve({ status: 0, body: '', ms: performance.now() - t }));
    req.end(body);
  });
}

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};
const median = (xs: number[]): number => quantile(xs, 0.5);

/** Sequential lookups for `ms`: their latencies. */
async function probe(port: number, ms: number): Promise<number[]> {
  const out: number[] = [];
  const until = Date.now() + ms;
  while (Date.now() < until) out.push((await call(port, 'GET', '/81.7.3.9')).ms);
  return out;
}

async function main(): Promise<void> {
  const d = await publishedDataDir([{ scopes: ['apikeys.manage'] }]);
  const manager = { Authorization: `Bearer ${d.keys[0]}`, 'Content-Type': 'application/json' };
  const lavish = { per_second: 1_000_000, burst: 1_000_000 };
  const plans = plansFile(d.dataDir, {
    keyless: { daily_cap: 1_000_000_000, rate: lavish },
    plans: [{ key: 'max', tier: 'max', quota: 1_000_000_000, rate: lavish, hard_limit: null }],
  });
  const server = await serveProcess({ DATA_DIR: d.dataDir, PLANS_FILE: plans, FRONTEND_THREADS: '1' });
  const port = server.port;
  try {
    // 1. Key churn: at most 15 s or 12 000 attempts.
    const outcomes = new Map<string, number>();
    const churnEnd = Date.now() + 15_000;
    for (let i = 0; i < 12_000 && Date.now() < churnEnd; i++) {
      const r = await call(port, 'POST', '/api/v1/iam/apikeys', manager, JSON.stringify({ name: `churn-${i}` }));
      const rc = r.status === 201 ? 'created' : `${r.status} ${(JSON.parse(r.body) as { rc: string }).rc}`;
      outcomes.set(rc, (outcomes.get(rc) ?? 0) + 1);
      if (r.status === 429 && (outcomes.get(rc) ?? 0) >= 200) break;
    }
    console.log(`key churn by one key: ${JSON.stringify(Object.fromEntries(outcomes))}`);

    // 2. An organisation at the cap (made by the operator), its lists requested 16 at a time.
    const db = openTestControlDb(d.dataDir);
    const org = (db.prepare("SELECT org_id FROM api_keys WHERE name = 'k0'").get() as { org_id: string }).org_id;
    const live = (db.prepare('SELECT count(*) AS n FROM api_keys WHERE org_id = ? AND revoked_at IS NULL').get(org) as { n: number }).n;
    for (let i = live; i < 1000; i++) createKey(db, { orgId: org, name: `operator-made-${i}` });
    db.close();
    const alone = await probe(port, 3000);
    let listing = true;
    let lists = 0;
    const lister = async (): Promise<void> => {
      while (listing) {
        let after = '';
        for (;;) {
          const r = await call(port, 'GET', `/api/v1/iam/apikeys?limit=200${after ? `&after=${after}` : ''}`, manager);
          lists++;
          const next = (JSON.parse(r.body) as { next: string | null }).next;
          if (next === null || !listing) break;
          after = next;
        }
      }
    };
    const listers = Array.from({ length: 16 }, lister);
    await sleep(200);
    const loaded = await probe(port, 5000);
    listing = false;
    await Promise.all(listers);
    console.log(
      `lookup probe, one thread: alone p50 ${median(alone).toFixed(2)} ms p99 ${quantile(alone, 0.99).toFixed(2)} ms; ` +
        `while 16 clients page 1 000 keys (${lists} pages of ≤ 200): p50 ${median(loaded).toFixed(2)} ms p99 ${quantile(loaded, 0.99).toFixed(2)} ms (${loaded.length} lookups)`,
    );

    // 3. The OpenAPI document by coding: 4 alternating rounds of 2 s, 8 connections.
    const rates: Record<string, number[]> = { identity: [], br: [], gzip: [] };
    for (let round = 0; round < 4; round++) {
      for (const coding of Object.keys(rates)) {
        const r = await autocannon({
          url: `http://127.0.0.1:${port}/api/v1/openapi.json`,
          connections: 8,
          duration: 2,
          headers: coding === 'identity' ? {} : { 'Accept-Encoding': coding },
        });
        rates[coding].push(r.requests.average);
      }
    }
    const id = median(rates.identity);
    console.log(
      `openapi.json req/s (median of 4): identity ${Math.round(id)}, br ${Math.round(median(rates.br))} (${(median(rates.br) / id).toFixed(2)}), gzip ${Math.round(median(rates.gzip))} (${(median(rates.gzip) / id).toFixed(2)})`,
    );

    // 4. A key name with terminal escapes, straight into the table as an older version allowed.
    const db2 = openTestControlDb(d.dataDir);
    const plansDoc = loadPlans(plans);
    const other = createOrganisation(db2, plansDoc, 'Escapes', 'max');
    const made = createKey(db2, { orgId: other.id, name: 'placeholder' });
    db2.prepare('UPDATE api_keys SET name = ? WHERE id = ?').run('ci\u001b]0;owned\u0007\u001b[2J\nFAKE key line', made.key.id);
    db2.close();
    const shown = execFileSync(process.execPath, [path.join(PROJECT_ROOT, 'dist/src/cli.js'), 'org', 'show', other.id], {
      env: { ...process.env, DATA_DIR: d.dataDir },
      encoding: 'utf8',
    });
    console.log(
      `org show of a key named with escapes: ${JSON.stringify(shown.split('\n')[1])} (control characters in the output: ${/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(shown)})`,
    );
  } finally {
    server.child.kill('SIGKILL');
  }

  // 5. node:http: the malformed pipelined packet, then SIGTERM.
  const node = await serveProcess({ DATA_DIR: d.dataDir, PLANS_FILE: plans, FRONTEND_THREADS: '1', HTTP_SERVER: 'node', SHUTDOWN_GRACE_S: '30' });
  await new Promise<void>((resolve) => {
    const s = net.connect(node.port, '127.0.0.1', () => s.write('GET /1.1.1.1 HTTP/1.1\r\n\r\nGET /9.9.9.9 HTTP/1.1\r\nHost: x\r\n\r\n'));
    s.on('data', () => undefined);
    s.on('close', () => resolve());
    s.on('error', () => resolve());
  });
  const t = Date.now();
  node.child.kill('SIGTERM');
  await new Promise((r) => node.child.once('exit', r));
  const stopped = /"msg":"stopped","clean":(true|false)/.exec(node.log());
  console.log(`node:http after the malformed pipelined packet: SIGTERM to exit ${Date.now() - t} ms, clean ${stopped?.[1] ?? '?'}`);
}

await main();
