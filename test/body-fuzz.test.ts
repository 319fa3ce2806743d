// Every route that takes a POST, on both ports, fuzzed with bodies made from the OpenAPI
// documents the server publishes: each field given the wrong type, an unknown field, duplicate
// keys, nesting thousands deep, too large, not JSON, not UTF-8, empty, and a body where the
// route takes none. No answer may be a 5xx, and every status must be one the document lists
// for that operation.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Service } from '../src/service.js';
import { createAdminToken } from '../src/control/admin-tokens.js';
import { readCurrentBuildId } from '../src/index/builds.js';
import { get, publishedDataDir, request, openTestControlDb, startTestService } from './helpers.js';
import { prng } from '../scripts/gen-feeds.js';

type Schema = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A value of the schema's type (the first of a union), as a well-meaning client would send. */
function sample(s: Schema | undefined): unknown {
  if (!s) return 'x';
  if (s.enum) return s.enum[0];
  if ('const' in s) return s.const;
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  if (type === 'object') return Object.fromEntries(Object.entries((s.properties ?? {}) as Record<string, Schema>).map(([k, v]) => [k, sample(v)]));
  if (type === 'array') return [sample(s.items)];
  if (type === 'integer' || type === 'number') return s.minimum ?? 1;
  if (type === 'boolean') return true;
  if (type === 'null') return null;
  if (s.format === 'date-time') return new Date(Date.now() + 86_400_000).toISOString();
  return 'fuzz';
}

/** A value of another JSON type than any the schema takes. */
function wrongType(s: Schema, rnd: () => number): unknown {
  const types = new Set<string>(s.enum ? ['string'] : Array.isArray(s.type) ? s.type : [s.type]);
  const others: unknown[] = [];
  if (!types.has('string')) others.push('5', '');
  if (!types.has('integer') && !types.has('number')) others.push(5, -1, 1e308);
  if (!types.has('boolean')) others.push(true);
  if (!types.has('array')) others.push([1, [2]]);
  if (!types.has('object')) others.push({ a: { b: 1 } });
  if (!types.has('null')) others.push(null);
  if (s.enum) others.push('not-one-of-them');
  return others[Math.floor(rnd() * others.length)];
}

/** Bodies for an operation whose request body has this schema (undefined: the route takes none). */
function bodies(schema: Schema | undefined, rnd: () => number): { what: string; bytes: Buffer }[] {
  const text = (what: string, t: string) => ({ what, bytes: Buffer.from(t, 'utf8') });
  const good = (schema ? sample(schema) : {}) as Record<string, unknown>;
  const out = [
    text('not JSON', 'not json at all'),
    text('a JSON array', '[1,2,3]'),
    text('a JSON string', '"x"'),
    text('an unknown field', JSON.stringify({ ...good, zzz: 1 })),
    text('nested 5 000 deep', `{"a":${'['.repeat(5000)}${']'.repeat(5000)}}`),
    text('an object nested 3 000 deep', `${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}`),
    text('too large', JSON.stringify({ ...good, pad: 'x'.repeat(200_000) })),
    { what: 'not UTF-8', bytes: Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]) },
    text('empty', ''),
    text('a body of the document', JSON.stringify(good)),
  ];
  if (schema) {
    for (const [field, s] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
      out.push(text(`${field} of a wrong type`, JSON.stringify({ ...good, [field]: wrongType(s, rnd) })));
      out.push(text(`${field} twice`, `{${JSON.stringify(field)}:${JSON.stringify(sample(s))},${JSON.stringify(field)}:${JSON.stringify(wrongType(s, rnd))}}`));
      out.push(text(`${field} nested deep`, JSON.stringify({ ...good }).replace(/^\{/, `{${JSON.stringify(field)}:${'['.repeat(2000)}${']'.repeat(2000)},`)));
    }
    for (const field of (schema.required ?? []) as string[]) {
      const without = { ...good };
      delete without[field];
      out.push(text(`without ${field}`, JSON.stringify(without)));
    }
  }
  return out;
}

describe('request bodies fuzzed from the OpenAPI documents', () => {
  let svc: Service;
  let ids: Record<string, string> = {};
  let key = '';
  let admin = '';

  before(async () => {
    const d = await publishedDataDir([{ scopes: ['db.download', 'apikeys.manage'] }, { scopes: ['db.download'] }]);
    key = d.keys[0];
    svc = await startTestService({ dataDir: d.dataDir, plansFile: d.plans });
    const db = openTestControlDb(d.dataDir);
    admin = createAdminToken(db, 'fuzz', ['admin.write']).secret;
    db.close();
    const auth = { Authorization: `Bearer ${admin}` };
    const org = (await get(svc.adminPort, '/admin/v1/organizations', auth)).json.organizations[0];
    const keys = (await get(svc.adminPort, `/admin/v1/organizations/${org.id}/keys`, auth)).json.apikeys as { id: string; name: string }[];
    // The rotated key is not the caller's (k1 is rotated, k0 calls).
    ids = { org: org.id, key: keys.find((k) => k.name === 'k1')!.id, build: readCurrentBuildId(d.dataDir)! };
  });
  after(() => svc.close());

  for (const port of ['public', 'admin'] as const) {
    test(`${port} port: no 5xx and no status its document does not list, for any body of any POST route`, async () => {
      const portOf = (): number => (port === 'public' ? svc.port : svc.adminPort);
      const doc = (await get(portOf(), port === 'public' ? '/api/v1/openapi.json' : '/openapi.json')).json as Schema;
      const auth = port === 'public' ? { Authorization: `Bearer ${key}` } : { Authorization: `Bearer ${admin}` };
      const rnd = prng(7);
      const problems: string[] = [];
      let tried = 0;
      for (const [pathName, item] of Object.entries(doc.paths as Record<string, Schema>)) {
        const post = item.post as Schema | undefined;
        // Each port's own routes (the public document also describes the admin port's).
        if (!post || pathName.startsWith('/admin/') !== (port === 'admin')) continue;
        // Each path's ids: an organisation, a key that is not the caller's, the serving build, a licence base.
        const url = pathName
          .replace(/^\/admin\/v1\/organizations\/\{id\}/, `/admin/v1/organizations/${ids.org}`)
          .replace('{base}', 'vpn')
          .replace(/\/builds\/\{id\}/, `/builds/${ids.build}`)
          .replace(/\{id\}/, ids.key);
        const schema = post.requestBody?.content?.['application/json']?.schema as Schema | undefined;
        const listed = new Set(Object.keys(post.responses as Record<string, unknown>));
        for (const b of bodies(schema, rnd)) {
          const r = await request(portOf(), 'POST', url, b.bytes, { ...auth, 'Content-Type': 'application/json' });
          tried++;
          if (r.status >= 500 || !listed.has(String(r.status)))
            problems.push(`POST ${pathName} with ${b.what}: ${r.status} ${r.text.slice(0, 160)} (listed: ${[...listed].join(', ')})`);
        }
      }
      assert.ok(tried > 50, `${tried} requests`);
      assert.deepEqual(problems, []);
      // The server lives.
      assert.equal((await get(svc.port, '/81.7.3.20', { Authorization: `Bearer ${key}` })).status, 200);
    });
  }
});
