// Short-lived tokens (POST/DELETE /api/v1/auth/token) against the real server: a token stands
// for its key with a subset of its scopes and an expiry no later than the key's; expiry,
// revocation of the token and of its key, source ranges, forgery.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createKey, listOrganisations, revokeKey, rotateKey } from '../src/control/accounts.js';
import { MAX_REVOKED_PER_KEY, mintToken, revokeToken, tokenSigningKey } from '../src/control/tokens.js';
import type { Service } from '../src/service.js';
import { get, openTestControlDb, publishedDataDir, request, startTestService, until, type Reply } from './helpers.js';
import { TestClock, clockSkip } from './test-clock.js';

describe('short-lived tokens', () => {
  let svc: Service;
  let dataDir: string;
  let both: string;
  let download: string;
  let fenced: string;
  /** The server's clock: a token's expiry comes when the test moves it there. */
  const clock = new TestClock();

  const bearer = (k: string): Record<string, string> => ({ Authorization: `Bearer ${k}` });
  const exchange = (k: string, body?: unknown): Promise<Reply> =>
    request(svc.port, 'POST', '/api/v1/auth/token', body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body), bearer(k));
  const lookup = (credential: string): Promise<Reply> => get(svc.port, '/81.7.3.9', bearer(credential));

  before(async () => {
    const d = await publishedDataDir([
      { scopes: ['db.download', 'apikeys.manage'] },
      { scopes: ['db.download'] },
      { scopes: ['db.download'], allowedCidrs: ['10.0.0.0/8'] },
    ]);
    [both, download, fenced] = d.keys;
    dataDir = d.dataDir;
    svc = await startTestService({ dataDir: d.dataDir, plansFile: d.plans }, undefined, { clock });
  });
  after(() => svc.close());

  test('a key is exchanged for a token that answers wherever the key does, with the same plan', async () => {
    const r = await exchange(both);
    assert.equal(r.status, 201, r.text);
    assert.equal(r.json.rc, 'OK');
    assert.equal(r.json.token_type, 'Bearer');
    assert.match(r.json.token, /^ist_[A-Za-z0-9_.-]+$/);
    assert.equal(r.json.token.length, 71);
    assert.deepEqual(r.json.scopes, ['db.download', 'apikeys.manage']);
    const lifetime = Date.parse(r.json.expires) - clock.now();
    assert.ok(lifetime > 14 * 60_000 && lifetime <= 15 * 60_000, `default 15 minutes: ${lifetime} ms`);
    const [byKey, byToken] = [await lookup(both), await lookup(r.json.token)];
    assert.equal(byToken.status, 200);
    assert.deepEqual(byToken.json, byKey.json);
    for (const via of [bearer(r.json.token), { 'X-Api-Key': r.json.token }]) assert.equal((await get(svc.port, '/api/v1/database/list', via)).status, 200);
    assert.equal((await get(svc.port, `/81.7.3.9?apikey=${r.json.token}`)).status, 200);
    const me = await get(svc.port, '/api/v1/account/me', bearer(r.json.token));
    assert.equal(me.json.org_id, r.json.org_id);
    assert.equal((await get(svc.port, '/api/v1/iam/apikeys', bearer(r.json.token))).status, 200);
  });

  test('a key made with a token expires with the token unless it asks for less; asking for more is refused', async () => {
    const t = (await exchange(both, { lifetime_s: 600 })).json;
    const made = await request(
      svc.port,
      'POST',
      '/api/v1/iam/apikeys',
      JSON.stringify({ name: 'from a token', allowed_scopes: ['db.download'] }),
      bearer(t.token),
    );
    assert.equal(made.status, 201, made.text);
    const listed = (await get(svc.port, '/api/v1/iam/apikeys', bearer(both))).json.apikeys.find((k: { id: string }) => k.id === made.json.id);
    assert.equal(Date.parse(listed.expires), Date.parse(t.expires));
    const later = new Date(Date.parse(t.expires) + 60_000).toISOString();
    const longer = await request(
      svc.port,
      'POST',
      '/api/v1/iam/apikeys',
      JSON.stringify({ name: 'longer', allowed_scopes: ['db.download'], expires: later }),
      bearer(t.token),
    );
    assert.equal(longer.status, 403);
  });

  test("scopes: a subset of the key's; asking for one the key lacks is refused", async () => {
    const r = await exchange(both, { scopes: ['db.download'] });
    assert.equal(r.status, 201);
    assert.deepEqual(r.json.scopes, ['db.download']);
    assert.equal((await get(svc.port, '/api/v1/iam/apikeys', bearer(r.json.token))).status, 401, 'no apikeys.manage on this token');
    assert.equal((await get(svc.port, '/api/v1/database/list', bearer(r.json.token))).status, 200);
    const wider = await exchange(download, { scopes: ['apikeys.manage'] });
    assert.equal(wider.status, 403);
    assert.equal(wider.json.rc, 'FORBIDDEN');
    for (const body of ['{"scopes":"db.download"}', '{"lifetime_s":0}', `{"lifetime_s":${24 * 3600 + 1}}`, '{"lifetime_s":1.5}', '[', '[]']) {
      const bad = await exchange(both, body);
      assert.equal(bad.status, 400, body);
      assert.equal(bad.json.rc, 'BAD_REQUEST');
    }
  });

  test('expiry: a token ends at its lifetime, and never outlives its key', { skip: clockSkip() }, async () => {
    // A minute, not a second: expiry is in whole seconds, never past the lifetime, so a second
    // can leave a few milliseconds, which a loaded machine spends before the first lookup.
    const r = await exchange(both, { lifetime_s: 60 });
    assert.equal(r.status, 201);
    assert.equal((await lookup(r.json.token)).status, 200);
    // At `expires` it has ended.
    assert.ok(Date.parse(r.json.expires) <= clock.now() + 60_000, r.json.expires);
    clock.advance(Date.parse(r.json.expires) - clock.now());
    const late = await lookup(r.json.token);
    assert.equal(late.status, 401);
    assert.equal(late.json.error, 'API key expired');

    const db = openTestControlDb(dataDir);
    const org = listOrganisations(db)[0];
    const shortKey = createKey(db, { orgId: org.id, name: 'short', expires: new Date(clock.now() + 60_000).toISOString() }).secret;
    db.close();
    const capped = await exchange(shortKey, { lifetime_s: 3600 });
    assert.equal(capped.status, 201);
    assert.ok(Date.parse(capped.json.expires) <= clock.now() + 60_000, 'not past the key');
  });

  test('revocation: the token alone (DELETE with it), or every token of a revoked key', async () => {
    const a = (await exchange(download)).json.token;
    const b = (await exchange(download)).json.token;
    const del = await request(svc.port, 'DELETE', '/api/v1/auth/token', undefined, bearer(a));
    assert.equal(del.status, 200);
    assert.equal(del.json.rc, 'OK');
    const gone = await lookup(a);
    assert.equal(gone.status, 401);
    assert.equal(gone.json.error, 'API key revoked');
    assert.equal((await lookup(b)).status, 200, 'other tokens of the key stand');
    assert.equal((await lookup(download)).status, 200, 'the key stands');
    assert.equal((await request(svc.port, 'DELETE', '/api/v1/auth/token', undefined, bearer(download))).status, 400, 'a key is not a token');
    assert.equal((await exchange(b)).status, 403, 'a token cannot mint tokens');

    const db = openTestControlDb(dataDir);
    const org = listOrganisations(db)[0];
    const made = createKey(db, { orgId: org.id, name: 'to-revoke' });
    db.close();
    const t = (await exchange(made.secret)).json.token;
    assert.equal((await lookup(t)).status, 200);
    const db2 = openTestControlDb(dataDir);
    revokeKey(db2, made.key.id);
    db2.close();
    await until(async () => (await lookup(t)).status !== 200, 5_000, 'the revocation read');
    const r = await lookup(t);
    assert.equal(r.status, 401);
    assert.equal(r.json.error, 'API key revoked');
  });

  test('rotating the key ends its tokens; past MAX_REVOKED_PER_KEY stored revocations, one more ends every token of the key', async () => {
    const db = openTestControlDb(dataDir);
    const org = listOrganisations(db)[0];
    const made = createKey(db, { orgId: org.id, name: 'to-rotate' });
    db.close();
    const before = (await exchange(made.secret)).json.token;
    assert.equal((await lookup(before)).status, 200);
    const db2 = openTestControlDb(dataDir);
    const rotated = rotateKey(db2, made.key.id).secret;
    db2.close();
    await until(async () => (await lookup(before)).status !== 200, 5_000, 'the rotation read');
    const r = await lookup(before);
    assert.deepEqual([r.status, r.json.error], [401, 'invalid API key'], 'a token of the old secret');
    const after = (await exchange(rotated)).json.token;
    assert.equal((await lookup(after)).status, 200);

    // What one key can make the database hold: at most MAX_REVOKED_PER_KEY revocations.
    const db3 = openTestControlDb(dataDir);
    const later = clock.now() + 3_600_000;
    for (let i = 0; i < MAX_REVOKED_PER_KEY; i++) assert.equal(revokeToken(db3, { id: `t${i}`, keyId: made.key.id, expiresMs: later }, clock.now()), 'token');
    assert.equal(revokeToken(db3, { id: 'one-more', keyId: made.key.id, expiresMs: later }, clock.now()), 'every token of the key');
    assert.equal((db3.prepare('SELECT COUNT(*) AS n FROM revoked_tokens WHERE key_id = ?').get(made.key.id) as { n: number }).n, 0);
    db3.close();
    await until(async () => (await lookup(after)).status !== 200, 5_000, 'the revocation of every token read');
    assert.equal((await lookup(after)).status, 401, 'every token of the key ended');
    assert.equal((await lookup(rotated)).status, 200, 'the key stands');
  });

  test("source ranges: the key's apply to its tokens", async () => {
    const refused = await exchange(fenced);
    assert.equal(refused.status, 403);
    const db = openTestControlDb(dataDir);
    const keyId = (db.prepare("SELECT id FROM api_keys WHERE allowed_cidrs LIKE '%10.0.0.0/8%'").get() as { id: string }).id;
    db.close();
    const t = mintToken(tokenSigningKey(dataDir), { id: keyId, tokenEpoch: 0 }, ['db.download'], clock.now() + 60_000).token;
    const r = await lookup(t);
    assert.equal(r.status, 403);
    assert.equal(r.json.error, 'source address not allowed for this API key');
  });

  test('forgery: a changed claim, another signing key, a cut signature are invalid', async () => {
    const t: string = (await exchange(download, { scopes: ['db.download'] })).json.token;
    const parts = t.split('.');
    const widened = [...parts.slice(0, 3), '3', parts[4]].join('.');
    const later = [parts[0], parts[1], (parseInt(parts[2], 36) + 99999).toString(36), parts[3], parts[4]].join('.');
    const db = openTestControlDb(dataDir);
    const keyId = (db.prepare('SELECT id FROM api_keys WHERE key_prefix = ?').get(download.slice(0, 12)) as { id: string }).id;
    db.close();
    const foreign = mintToken(Buffer.alloc(32, 7), { id: keyId, tokenEpoch: 0 }, ['db.download', 'apikeys.manage'], clock.now() + 60_000).token;
    for (const bad of [widened, later, foreign, t.slice(0, -2), `${t}x`, 'ist_', 'ist_...', `ist_${'a'.repeat(120)}`, t.replace(parts[1], 'AAAA')]) {
      const r = await lookup(bad);
      assert.equal(r.status, 401, bad);
      assert.equal(r.json.error, 'invalid API key', bad);
    }
  });
});
