// The OpenAPI document: a valid 3.1 document whose schemas compile (JSON Schema 2020-12, Ajv),
// describing exactly the routes both apps register, and matching real answers: every operation
// is called, each answer's status must be documented for it and its JSON body must validate
// against the documented schema.

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import { listOrganisations } from '../src/control/accounts.js';
import { createAdminToken } from '../src/control/admin-tokens.js';
import { openApiDocument } from '../src/api/public/openapi.js';
import type { Service } from '../src/service.js';
import { fetchBytes, openTestControlDb, publishedDataDir, request, startTestService, until, type Reply } from './helpers.js';
import { againOn } from './again.js';

const require = createRequire(import.meta.url);
const { default: Ajv2020 } = require('ajv/dist/2020') as typeof import('ajv/dist/2020.js');
const { default: addFormats } = require('ajv-formats') as typeof import('ajv-formats');

type Doc = ReturnType<typeof openApiDocument> & {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema?: unknown }> }>; parameters?: { name: string; in: string }[] }>
  >;
};
const doc = openApiDocument() as Doc;
const METHODS = ['get', 'post', 'delete', 'head', 'put', 'patch'];

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(doc, 'openapi');

/** A JSON pointer's segment (RFC 6901). */
const seg = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** The app's route patterns as OpenAPI paths: `:id` is `{id}`, the /files/ wildcard `{key}`. */
function asPath(pattern: string): string {
  if (pattern === '/files/*') return '/files/{key}';
  return pattern.replace(/:([a-z]+)/g, '{$1}');
}

// The document itself: once (its walk against the server runs again on each boundary).
describe('the OpenAPI document', againOn(), () => {
  test('is OpenAPI 3.1 with unique operation ids, declared path parameters and schemas that compile', () => {
    assert.equal(doc.openapi, '3.1.0');
    const ids = new Set<string>();
    for (const [p, item] of Object.entries(doc.paths)) {
      const templated = [...p.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]);
      for (const [method, op] of Object.entries(item)) {
        if (!METHODS.includes(method)) continue;
        const o = op as unknown as {
          operationId: string;
          responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
          parameters?: { name: string; in: string }[];
        };
        assert.ok(o.operationId && !ids.has(o.operationId), `${method} ${p}: operationId`);
        ids.add(o.operationId);
        assert.deepEqual(
          (o.parameters ?? [])
            .filter((x) => x.in === 'path')
            .map((x) => x.name)
            .sort(),
          [...templated].sort(),
          `${method} ${p}: path parameters`,
        );
        assert.ok(Object.keys(o.responses).length > 0);
        for (const [status, r] of Object.entries(o.responses)) {
          assert.match(status, /^[1-5]\d\d$/);
          const schema = r.content?.['application/json']?.schema;
          // Compiling resolves every $ref into components.
          if (schema) ajv.compile({ $ref: `openapi#/paths/${seg(p)}/${method}/responses/${status}/content/application~1json/schema` });
        }
      }
    }
    for (const name of Object.keys((doc.components as { schemas: object }).schemas)) ajv.compile({ $ref: `openapi#/components/schemas/${name}` });
  });

  test('its schemas refuse what the server never sends: a wrong type, an unknown field, a message not in the catalogue', () => {
    const result = ajv.compile({ $ref: 'openapi#/components/schemas/LookupResult' });
    assert.ok(result({ ip: '1.2.3.4', is_vpn: false, vpn: {} }));
    assert.ok(result({ ip: '1.2.3.4', is_vpn: true, vpn: { provider: 'X', confidence: 'high', method: 'server_list', last_seen: '2026-11-01' } }));
    for (const bad of [
      { ip: '1.2.3.4' },
      { ip: '1.2.3.4', is_vpn: 'yes' },
      { ip: '1.2.3.4', is_vpn: true, colour: 'red' },
      { ip: '1.2.3.4', is_vpn: true, vpn: { confidence: 'certain' } },
      { ip: '1.2.3.4', is_vpn: true, vpn: { last_seen: 'yesterday' } },
    ]) {
      assert.equal(result(bad), false, JSON.stringify(bad));
    }
    const notFound = ajv.compile({ $ref: `openapi#/paths/${seg('/{ip}')}/get/responses/400/content/application~1json/schema` });
    assert.ok(notFound({ error: 'not a valid IP address' }));
    assert.equal(notFound({ error: 'not a valid IP' }), false);
  });
});

describe('the OpenAPI document against the server', () => {
  let svc: Service;
  let key: string;
  let manager: string;
  let fenced: string;
  /** The organisation's account id (geoipupdate's user). */
  let account: string;
  let operator: string;
  let reader: string;
  let dataDir: string;
  /** Operations called, as `METHOD path`. */
  const called = new Set<string>();

  before(async () => {
    const d = await publishedDataDir([
      { scopes: ['db.download'] },
      { scopes: ['apikeys.manage', 'db.download'] },
      { scopes: ['db.download'], allowedCidrs: ['10.0.0.0/8'] },
    ]);
    [key, manager, fenced] = d.keys;
    dataDir = d.dataDir;
    svc = await startTestService({ dataDir: d.dataDir, plansFile: d.plans });
    const db = openTestControlDb(d.dataDir);
    account = String(listOrganisations(db)[0].accountId);
    operator = createAdminToken(db, 'openapi', ['admin.write']).secret;
    reader = createAdminToken(db, 'openapi-read', ['admin.read']).secret;
    db.close();
  });
  after(() => svc.close());

  /** Checks an answer against the document: a documented status, a body of the documented schema. */
  function check(method: string, docPath: string, r: { status: number; headers: Record<string, unknown>; text?: string; json?: unknown }): void {
    const op = doc.paths[docPath]?.[method.toLowerCase()];
    assert.ok(op, `${method} ${docPath} is not in the document`);
    called.add(`${method} ${docPath}`);
    const documented = op.responses[String(r.status)];
    assert.ok(documented, `${method} ${docPath} answered ${r.status}, which the document does not list (${r.text?.slice(0, 200)})`);
    const type = String(r.headers['content-type'] ?? '');
    if (documented.content?.['application/json']?.schema) {
      assert.equal(type, 'application/json', `${method} ${docPath} ${r.status}`);
      const validate =
        ajv.getSchema(`openapi#/paths/${seg(docPath)}/${method.toLowerCase()}/responses/${r.status}/content/application~1json/schema`) ??
        ajv.compile({ $ref: `openapi#/paths/${seg(docPath)}/${method.toLowerCase()}/responses/${r.status}/content/application~1json/schema` });
      assert.ok(validate(r.json), `${method} ${docPath} ${r.status}: ${JSON.stringify(validate.errors)} in ${r.text?.slice(0, 300)}`);
    } else if (documented.content) {
      const types = Object.keys(documented.content);
      assert.ok(
        types.some((t) => type.startsWith(t)),
        `${method} ${docPath} ${r.status}: ${type} is not one of ${types}`,
      );
    }
  }

  const call = async (
    method: string,
    docPath: string,
    url: string,
    o: { headers?: Record<string, string>; body?: string; port?: number } = {},
  ): Promise<Reply> => {
    const r = await request(o.port ?? svc.port, method, url, o.body, o.headers);
    check(method, docPath, r);
    return r;
  };
  const bearer = (k: string): Record<string, string> => ({ Authorization: `Bearer ${k}` });

  test('lookups: every plan shape, refusals, batches', async () => {
    await call('GET', '/{ip}', '/81.7.3.9');
    await call('GET', '/{ip}', '/81.7.3.9', { headers: bearer(key) });
    await call('GET', '/{ip}', '/2a01:4f8:c012::1', { headers: { 'X-Api-Key': key } });
    await call('GET', '/{ip}', '/10.0.0.1', { headers: bearer(key) });
    await call('GET', '/{ip}', '/not-an-ip');
    await call('GET', '/{ip}', '/81.7.3.9', { headers: bearer('isk_nope') });
    await call('GET', '/{ip}', '/81.7.3.9', { headers: bearer(fenced) });
    await call('GET', '/myip', '/myip');
    await call('GET', '/myip', '/myip', { headers: bearer(key) });
    await call('POST', '/batch', '/batch', { body: JSON.stringify({ ips: ['81.7.3.9', '1.1.1.1', 'nope', '::1'] }), headers: bearer(key) });
    await call('POST', '/batch', '/batch', { body: '{"ips": 1}' });
    await call('POST', '/batch', '/batch', { body: JSON.stringify({ ips: [] }) });
    await call('POST', '/batch', '/batch', { body: 'x'.repeat(600 * 1024) });
    await call('POST', '/batch', '/batch', { body: '{"ips":["1.1.1.1"]}', headers: bearer('isk_nope') });
  });

  test('the account and key management', async () => {
    await call('GET', '/api/v1/account/me', '/api/v1/account/me', { headers: bearer(key) });
    await call('GET', '/api/v1/account/me', '/api/v1/account/me');
    for (const q of ['', '?since=0&limit=5', '?since=nope']) await call('GET', '/api/v1/changes', `/api/v1/changes${q}`, { headers: bearer(key) });
    await call('GET', '/api/v1/changes', '/api/v1/changes');
    await call('GET', '/api/v1/iam/apikeys', '/api/v1/iam/apikeys', { headers: bearer(manager) });
    await call('GET', '/api/v1/iam/apikeys', '/api/v1/iam/apikeys', { headers: bearer(key) });
    const created = await call('POST', '/api/v1/iam/apikeys', '/api/v1/iam/apikeys', {
      headers: bearer(manager),
      body: JSON.stringify({ name: 'doc', allowed_scopes: ['db.download'] }),
    });
    await call('POST', '/api/v1/iam/apikeys', '/api/v1/iam/apikeys', { headers: bearer(manager), body: '{"name": 3}' });
    await call('POST', '/api/v1/iam/apikeys/{id}/rotate', `/api/v1/iam/apikeys/${created.json.id}/rotate`, { headers: bearer(manager) });
    await call('DELETE', '/api/v1/iam/apikeys/{id}', `/api/v1/iam/apikeys/${created.json.id}`, { headers: bearer(manager) });
    await call('DELETE', '/api/v1/iam/apikeys/{id}', '/api/v1/iam/apikeys/00000000-0000-0000-0000-000000000000', { headers: bearer(manager) });
    await call('POST', '/api/v1/iam/apikeys/{id}/rotate', `/api/v1/iam/apikeys/${created.json.id}/rotate`, { headers: bearer(manager) });
    const token = await call('POST', '/api/v1/auth/token', '/api/v1/auth/token', { headers: bearer(key), body: JSON.stringify({ lifetime_s: 60 }) });
    await call('POST', '/api/v1/auth/token', '/api/v1/auth/token', { headers: bearer(key), body: '{"lifetime_s":-1}' });
    await call('POST', '/api/v1/auth/token', '/api/v1/auth/token', { headers: bearer(key), body: '{"scopes":["apikeys.manage"]}' });
    await call('POST', '/api/v1/auth/token', '/api/v1/auth/token');
    await call('DELETE', '/api/v1/auth/token', '/api/v1/auth/token', { headers: bearer(key) });
    await call('DELETE', '/api/v1/auth/token', '/api/v1/auth/token', { headers: bearer(token.json.token) });
    await call('DELETE', '/api/v1/auth/token', '/api/v1/auth/token', { headers: bearer('ist_nope') });
  });

  test('databases, files and geoipupdate', async () => {
    await call('GET', '/api/v1/database/list', '/api/v1/database/list', { headers: bearer(key) });
    await call('GET', '/api/v1/database/list', '/api/v1/database/list');
    const link = await call('GET', '/api/v1/database/download', '/api/v1/database/download?id=vpn_v1&format=mmdb', { headers: bearer(key) });
    await call('GET', '/api/v1/database/download', '/api/v1/database/download?id=geoip2_anonymous_v1&format=mmdb', { headers: bearer(key) });
    await call('GET', '/api/v1/database/download', '/api/v1/database/download?id=nope_v1&format=mmdb', { headers: bearer(key) });
    await call('GET', '/api/v1/database/download', '/api/v1/database/download?id=vpn_v1', { headers: bearer(key) });
    await call('GET', '/api/v1/database/download', '/api/v1/database/download?id=vpn_provider_v1&format=mmdb', { headers: bearer(key) });
    await call('GET', '/api/v1/database/metadata', '/api/v1/database/metadata?id=vpn_v1', { headers: bearer(key) });
    await call('GET', '/api/v1/database/metadata', '/api/v1/database/metadata', { headers: bearer(key) });
    await call('GET', '/api/v1/database/checksum', '/api/v1/database/checksum?id=vpn_v1&format=csvgz', { headers: bearer(key) });
    await call('GET', '/api/v1/database/downloads', '/api/v1/database/downloads?limit=5', { headers: bearer(key) });
    await call('GET', '/api/v1/database/downloads', '/api/v1/database/downloads?limit=500', { headers: bearer(key) });
    const file = await fetchBytes(`http://127.0.0.1:${svc.port}${String(link.headers.location)}`);
    check('GET', '/files/{key}', file);
    await call('GET', '/files/{key}', `${String(link.headers.location).replace(/sig=./, 'sig=A')}`);
    const basic = (user: string, pass: string): Record<string, string> => ({ Authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` });
    const update = await fetchBytes(`http://127.0.0.1:${svc.port}/geoip/databases/vpn_v1/update?db_md5=0`, basic(account, key));
    check('GET', '/geoip/databases/{edition}/update', update);
    await call('GET', '/geoip/databases/{edition}/update', '/geoip/databases/vpn_v1/update', { headers: basic(account, 'isk_nope') });
    await call('GET', '/geoip/databases/{edition}/update', '/geoip/databases/nope_v1/update', { headers: basic(account, key) });
    await call('GET', '/geoip/updates/metadata', '/geoip/updates/metadata?edition_id=vpn_v1', { headers: basic(account, key) });
    await call('GET', '/geoip/updates/metadata', '/geoip/updates/metadata', { headers: basic(account, key) });
    await call('GET', '/geoip/updates/metadata', '/geoip/updates/metadata?edition_id=geoip2_anonymous_v1', { headers: basic(account, key) });
    check(
      'GET',
      '/geoip/databases/{edition}/download',
      await fetchBytes(`http://127.0.0.1:${svc.port}/geoip/databases/vpn_v1/download?suffix=tar.gz`, basic(account, key)),
    );
    await call('GET', '/geoip/databases/{edition}/download', '/geoip/databases/vpn_v1/download', { headers: basic('2', key) });
    await call('GET', '/api/v1/openapi.json', '/api/v1/openapi.json');
  });

  test('the admin port', async () => {
    const port = svc.adminPort;
    for (const p of ['/healthz', '/readyz', '/metrics', '/openapi.json']) await call('GET', p, p, { port });
    await call('GET', '/explain/{ip}', '/explain/81.7.3.9', { port, headers: bearer(operator) });
    await call('GET', '/explain/{ip}', '/explain/nope', { port, headers: bearer(operator) });
    await call('GET', '/explain/{ip}', '/explain/81.7.3.9', { port });
  });

  test('the operator API', async () => {
    const o = { port: svc.adminPort, headers: bearer(operator) };
    const body = (doc: unknown): { port: number; headers: Record<string, string>; body: string } => ({ ...o, body: JSON.stringify(doc) });
    await call('GET', '/admin/v1/organizations', '/admin/v1/organizations', { port: svc.adminPort });
    await call('POST', '/admin/v1/organizations', '/admin/v1/organizations', { port: svc.adminPort, headers: bearer(reader), body: '{}' });
    await call('POST', '/admin/v1/organizations', '/admin/v1/organizations', body({ name: 'x', plan: 'nope' }));
    const org = (await call('POST', '/admin/v1/organizations', '/admin/v1/organizations', body({ name: 'Doc', plan: 'starter' }))).json;
    await call('GET', '/admin/v1/organizations', '/admin/v1/organizations?deleted=true', o);
    await call('GET', '/admin/v1/organizations/{id}', `/admin/v1/organizations/${org.id}`, o);
    await call('POST', '/admin/v1/organizations/{id}', `/admin/v1/organizations/${org.id}`, body({ plan: 'scale', hard_limit: 'default' }));
    await call('POST', '/admin/v1/organizations/{id}', `/admin/v1/organizations/${org.id}`, body({ hard_limit: -3 }));
    const k = (
      await call('POST', '/admin/v1/organizations/{id}/keys', `/admin/v1/organizations/${org.id}/keys`, body({ name: 'doc', allowed_scopes: ['db.download'] }))
    ).json;
    await call('POST', '/admin/v1/organizations/{id}/keys', `/admin/v1/organizations/${org.id}/keys`, body({ name: 'doc', allowed_cidrs: ['nope'] }));
    await call('GET', '/admin/v1/organizations/{id}/keys', `/admin/v1/organizations/${org.id}/keys`, o);
    await call('GET', '/admin/v1/keys/{id}', `/admin/v1/keys/${k.id}`, o);
    await call('POST', '/admin/v1/keys/{id}/rotate', `/admin/v1/keys/${k.id}/rotate`, o);
    await call('DELETE', '/admin/v1/keys/{id}', `/admin/v1/keys/${k.id}`, o);
    await call('POST', '/admin/v1/keys/{id}/rotate', `/admin/v1/keys/${k.id}/rotate`, o);
    await call('GET', '/admin/v1/keys/{id}', '/admin/v1/keys/nope', o);
    await call(
      'POST',
      '/admin/v1/organizations/{id}/licenses',
      `/admin/v1/organizations/${org.id}/licenses`,
      body({ base: 'vpn', license_type: 'evaluation', starts: '2026-01-01', expires: '2099-01-01' }),
    );
    await call('POST', '/admin/v1/organizations/{id}/licenses', `/admin/v1/organizations/${org.id}/licenses`, body({ base: 'vpn' }));
    await call('GET', '/admin/v1/organizations/{id}/licenses', `/admin/v1/organizations/${org.id}/licenses`, o);
    await call('DELETE', '/admin/v1/organizations/{id}/licenses/{base}', `/admin/v1/organizations/${org.id}/licenses/vpn`, o);
    await call('DELETE', '/admin/v1/organizations/{id}/licenses/{base}', `/admin/v1/organizations/${org.id}/licenses/vpn`, o);
    await call('GET', '/admin/v1/organizations/{id}/usage', `/admin/v1/organizations/${org.id}/usage`, o);
    await call('GET', '/admin/v1/organizations/{id}/downloads', `/admin/v1/organizations/${org.id}/downloads?limit=3`, o);
    await call('GET', '/admin/v1/organizations/{id}/downloads', `/admin/v1/organizations/${org.id}/downloads?limit=x`, o);
    const t = (await call('POST', '/admin/v1/tokens', '/admin/v1/tokens', body({ name: 'doc', scopes: ['admin.read'] }))).json;
    await call('POST', '/admin/v1/tokens', '/admin/v1/tokens', body({ name: 'doc', scopes: ['admin.root'] }));
    await call('GET', '/admin/v1/tokens', '/admin/v1/tokens', o);
    await call('GET', '/admin/v1/settings', '/admin/v1/settings', o);
    await call('DELETE', '/admin/v1/tokens/{id}', `/admin/v1/tokens/${t.id}`, o);
    await call('DELETE', '/admin/v1/tokens/{id}', '/admin/v1/tokens/nope', o);
    await call('GET', '/admin/v1/audit', `/admin/v1/audit?org_id=${org.id}`, o);
    await call('GET', '/admin/v1/audit', '/admin/v1/audit?before=0', o);
    await call('DELETE', '/admin/v1/organizations/{id}', `/admin/v1/organizations/${org.id}`, o);
    await call('GET', '/admin/v1/organizations/{id}', `/admin/v1/organizations/${org.id}`, o);
    await call('DELETE', '/admin/v1/organizations/{id}', `/admin/v1/organizations/${org.id}`, o);
  });

  test('the sources: none configured here, so an empty list; refused without a token', async () => {
    const r = await call('GET', '/admin/v1/sources', '/admin/v1/sources', { port: svc.adminPort, headers: bearer(reader) });
    assert.deepEqual(r.json, { sources: [] });
    await call('GET', '/admin/v1/sources', '/admin/v1/sources', { port: svc.adminPort });
  });

  test("the console's routes and the admin API it calls", async () => {
    const o = { port: svc.adminPort, headers: bearer(reader) };
    const w = { port: svc.adminPort, headers: bearer(operator) };
    for (const p of ['/admin/v1/plans', '/admin/v1/token', '/admin/v1/overview', '/admin/v1/builds', '/admin/v1/feeds']) {
      await call('GET', p, p, o);
      await call('GET', p, p, { port: svc.adminPort });
    }
    for (const q of ['window=6h', 'window=24h', 'window=7d', 'window=1h&since=0']) await call('GET', '/admin/v1/overview', `/admin/v1/overview?${q}`, o);
    const orgs = (await request(svc.adminPort, 'GET', '/admin/v1/organizations', undefined, bearer(reader))).json.organizations;
    for (const q of ['', '?window=24h', `?window=6h&org_id=${orgs[0].id}`, '?org_id=00000000-0000-4000-8000-000000000000', '?window=2d', '?top=3'])
      await call('GET', '/admin/v1/activity', `/admin/v1/activity${q}`, o);
    await call('GET', '/admin/v1/activity', '/admin/v1/activity', { port: svc.adminPort });
    const build = svc.holder.current!.buildId;
    await call('GET', '/admin/v1/builds/{id}', `/admin/v1/builds/${build}`, o);
    await call('GET', '/admin/v1/builds/{id}', '/admin/v1/builds/20990101-1', o);
    await call('POST', '/admin/v1/builds/{id}/serve', `/admin/v1/builds/${build}/serve`, o);
    await call('POST', '/admin/v1/builds/{id}/serve', '/admin/v1/builds/20990101-1/serve', w);
    await call('POST', '/admin/v1/builds/{id}/serve', `/admin/v1/builds/${build}/serve`, w);
    await call('GET', '/admin/v1/serving-log', '/admin/v1/serving-log', o);
    // A build asked for, refused while it runs; then waited for, so the rest sees one build serving.
    const builds = (await call('GET', '/admin/v1/builds', '/admin/v1/builds', o)).json.builds.length;
    await call('POST', '/admin/v1/builds', '/admin/v1/builds', o);
    await call('POST', '/admin/v1/builds', '/admin/v1/builds', w);
    await call('POST', '/admin/v1/builds', '/admin/v1/builds', w);
    let listed: { id: string }[] = [];
    await until(
      async () => (listed = (await call('GET', '/admin/v1/builds', '/admin/v1/builds', o)).json.builds).length > builds,
      60_000,
      'the build asked for',
    );
    await until(() => svc.holder.current?.buildId === listed[0].id, 10_000, 'the new build serving');
    await call('POST', '/admin/v1/sources/refresh', '/admin/v1/sources/refresh', w);
    await call('POST', '/admin/v1/sources/{name}/refresh', '/admin/v1/sources/no-such-source/refresh', w);
    for (const verb of ['disable', 'enable']) await call('POST', `/admin/v1/sources/{name}/${verb}`, `/admin/v1/sources/no-such-source/${verb}`, w);
    // The new build compared with the one before it; the first has no comparison.
    await call('GET', '/admin/v1/builds/{id}/changes', `/admin/v1/builds/${listed[0].id}/changes`, o);
    await call('GET', '/admin/v1/builds/{id}/changes', `/admin/v1/builds/${listed[listed.length - 1].id}/changes`, o);
    for (const q of ['', '?level=error', '?level=debug']) await call('GET', '/admin/v1/log', `/admin/v1/log${q}`, o);
    await call('GET', '/admin/v1/answers/{ip}', '/admin/v1/answers/81.7.3.9', o);
    await call('GET', '/admin/v1/answers/{ip}', '/admin/v1/answers/2a01:4f8:c012::1', o);
    await call('GET', '/admin/v1/answers/{ip}', '/admin/v1/answers/nope', o);
    for (const q of [`at=${new Date().toISOString()}`, 'at=2001-01-01T00:00:00Z', 'at=nope', 'x=1'])
      await call('GET', '/admin/v1/answers/{ip}', `/admin/v1/answers/81.7.3.9?${q}`, o);
    await call('GET', '/console', '/console', { port: svc.adminPort });
    const root = await call('GET', '/', '/', { port: svc.adminPort });
    assert.deepEqual([root.status, root.headers.location], [302, '/console/']);
    const page = await call('GET', '/console/', '/console/', { port: svc.adminPort });
    const asset = page.text.match(/\/console\/assets\/[0-9a-f]+\/main\.js/)![0];
    await call('GET', '/console/assets/{hash}/{file}', asset, { port: svc.adminPort });
    await call('GET', '/console/assets/{hash}/{file}', asset.replace('main.js', 'console.css'), { port: svc.adminPort });
    await call('GET', '/console/assets/{hash}/{file}', asset.replace('main.js', 'nope.js'), { port: svc.adminPort });
  });

  test('every request body the document publishes refuses a field it does not name, by name', async () => {
    // A valid body for each documented requestBody: without the extra field it is taken
    // (2xx); with one more field the same body is a 400 that names it. A new body with no
    // example here fails the test.
    const db = openTestControlDb(dataDir);
    const orgId = listOrganisations(db)[0].id;
    db.close();
    const examples: Record<string, { url: string; body: Record<string, unknown> }> = {
      'POST /batch': { url: '/batch', body: { ips: ['81.7.3.9'] } },
      'POST /api/v1/iam/apikeys': { url: '/api/v1/iam/apikeys', body: { name: 'walk', allowed_scopes: ['db.download'] } },
      'POST /api/v1/auth/token': { url: '/api/v1/auth/token', body: { scopes: ['db.download'], lifetime_s: 60 } },
      'POST /admin/v1/organizations': { url: '/admin/v1/organizations', body: { name: 'Walk Org', plan: 'scale' } },
      'POST /admin/v1/organizations/{id}': { url: `/admin/v1/organizations/${orgId}`, body: { plan: 'max' } },
      'POST /admin/v1/organizations/{id}/keys': { url: `/admin/v1/organizations/${orgId}/keys`, body: { name: 'walk', allowed_scopes: ['db.download'] } },
      'POST /admin/v1/tokens': { url: '/admin/v1/tokens', body: { name: 'walk', scopes: ['admin.read'] } },
      'POST /admin/v1/organizations/{id}/licenses': {
        url: `/admin/v1/organizations/${orgId}/licenses`,
        body: { base: 'proxy', license_type: 'evaluation', starts: '2026-01-01', expires: '2099-01-01' },
      },
    };
    const bodies: string[] = [];
    for (const [p, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item))
        if (METHODS.includes(method) && (op as { requestBody?: unknown }).requestBody) bodies.push(`${method.toUpperCase()} ${p}`);
    }
    assert.deepEqual(bodies.sort(), Object.keys(examples).sort(), 'an example for every documented request body');
    for (const [operation, { url, body }] of Object.entries(examples)) {
      const [method, docPath] = operation.split(' ');
      const admin = docPath.startsWith('/admin/');
      const o = { port: admin ? svc.adminPort : svc.port, headers: bearer(admin ? operator : manager) };
      const taken = await call(method, docPath, url, { ...o, body: JSON.stringify(body) });
      assert.ok(taken.status >= 200 && taken.status < 300, `${operation} takes ${JSON.stringify(body)}: ${taken.status} ${taken.text}`);
      const refused = await call(method, docPath, url, { ...o, body: JSON.stringify({ ...body, unexpected_field: 1 }) });
      assert.equal(refused.status, 400, `${operation} with an extra field: ${refused.text}`);
      const message = (refused.json as { error?: string; message?: string }).error ?? (refused.json as { message?: string }).message ?? '';
      assert.match(message, /^unknown field "unexpected_field"/, operation);
      if (!admin && docPath !== '/batch') assert.equal((refused.json as { rc?: string }).rc, 'BAD_REQUEST', operation);
      if (docPath === '/batch') assert.deepEqual(Object.keys(refused.json as object), ['error'], 'the lookup group answers {"error": …}');
    }
  });

  test('the three typos of the red team: each a 400 naming the field, nothing made', async () => {
    const key = await call('POST', '/api/v1/auth/token', '/api/v1/auth/token', { headers: bearer(manager), body: '{"allowed_scopes":["db.download"]}' });
    assert.deepEqual([key.status, key.json.rc], [400, 'BAD_REQUEST']);
    assert.match(key.json.message, /^unknown field "allowed_scopes": this body takes scopes, lifetime_s$/);
    const made = await call('POST', '/api/v1/iam/apikeys', '/api/v1/iam/apikeys', { headers: bearer(manager), body: '{"name":"k","scopes":["db.download"]}' });
    assert.deepEqual([made.status, made.json.message], [400, 'unknown field "scopes": this body takes name, allowed_scopes, allowed_cidrs, expires']);
    const org = await call('POST', '/admin/v1/organizations', '/admin/v1/organizations', {
      port: svc.adminPort,
      headers: bearer(operator),
      body: '{"name":"Typo Org","plan":"scale","hardlimit":5}',
    });
    assert.deepEqual([org.status, org.json.message], [400, 'unknown field "hardlimit": this body takes name, plan']);
    const orgs = (await call('GET', '/admin/v1/organizations', '/admin/v1/organizations?q=Typo', { port: svc.adminPort, headers: bearer(reader) })).json;
    assert.equal(JSON.stringify(orgs).includes('Typo Org'), false, 'no organisation was made');
  });

  test('describes exactly the routes both apps register, and every operation was called', () => {
    const tables = svc.routeTables();
    assert.ok(tables.public, 'one front-end thread in the tests');
    const registered = new Set<string>();
    for (const t of [tables.public!, tables.admin]) {
      for (const r of t.table()) for (const m of r.methods) if (m !== 'HEAD') registered.add(`${m} ${asPath(r.pattern)}`);
    }
    const documented = new Set<string>();
    for (const [p, item] of Object.entries(doc.paths)) for (const m of Object.keys(item)) if (METHODS.includes(m)) documented.add(`${m.toUpperCase()} ${p}`);
    assert.deepEqual([...registered].sort(), [...documented].sort());
    assert.deepEqual([...documented].filter((o) => !called.has(o)).sort(), [], 'operations no test called');
  });
});
