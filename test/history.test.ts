// Lookups as of a time: the timeline of answers (src/history/) against the builds it records,
// probe by probe, across retention edges; `at` read strictly (time zones, leap days, the
// future); and GET /{ip}?at= on a server whose serving log spans several builds, each at its
// own time, with the plan refusals and answers without `at` unchanged.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runBuild } from '../src/build/build.js';
import { createKey, createOrganisation } from '../src/control/accounts.js';
import { timelineFile } from '../src/data-dir.js';
import { importFeed } from '../src/feeds/import.js';
import { parseAt } from '../src/history/as-of.js';
import { readTimeline, updateTimeline } from '../src/history/timeline-file.js';
import { Timeline } from '../src/history/timeline.js';
import { loadIndexFile } from '../src/index/loader.js';
import type { RangeIndex } from '../src/index/range-index.js';
import { loadPlans } from '../src/model/plans.js';
import type { Service } from '../src/service.js';
import { prng } from '../scripts/gen-feeds.js';
import { answerText, get, openTestControlDb, request, until, plansFile, startTestService, tempDir, testStoreEnv, writeFile } from './helpers.js';
import { cliInThread } from './cli-in-thread.js';
import { createAdminToken } from '../src/control/admin-tokens.js';

const HOUR = 3600;

/** A list feed of random /24s and single addresses in 10.x-free public space, some of them moved each build. */
function randomFeed(rnd: () => number, n: number): string {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const a = 20 + Math.floor(rnd() * 10);
    const b = Math.floor(rnd() * 4);
    const c = Math.floor(rnd() * 64);
    lines.push(rnd() < 0.5 ? `${a}.${b}.${c}.0/24` : `${a}.${b}.${c}.${1 + Math.floor(rnd() * 250)}`);
  }
  for (let i = 0; i < n / 4; i++) lines.push(`2a0${1 + Math.floor(rnd() * 3)}:${Math.floor(rnd() * 16).toString(16)}::/48`);
  return `${lines.join('\n')}\n`;
}

/** The content an index answers for an address, as the timeline records contents. */
function contentAt(index: RangeIndex, family: 4 | 6, v: bigint): string {
  const words = new Uint32Array([Number(v >> 96n), Number((v >> 64n) & 0xffffffffn), Number((v >> 32n) & 0xffffffffn), Number(v & 0xffffffffn)]);
  const c = index.recordContent(family === 4 ? index.lookupV4(Number(v)) : index.lookupV6(words));
  return JSON.stringify([c.mask, c.text, c.ends]);
}

describe('the timeline of answers', () => {
  test('every probe at every time answers as the build that served then, after a reload and across the retention edge', async () => {
    const rnd = prng(56);
    const dataDir = tempDir();
    const t0 = Date.parse('2028-02-27T00:00:00Z') / 1000; // across a leap day
    const builds: { from: number; index: RangeIndex }[] = [];
    const timeline = new Timeline();
    for (let b = 0; b < 12; b++) {
      importFeed({ dataDir, file: writeFile(dataDir, 'vpn.txt', randomFeed(rnd, 300)), name: 'vpn', category: 'vpn', details: { provider: `P${b % 3}` } });
      importFeed({ dataDir, file: writeFile(dataDir, 'hosting.txt', randomFeed(rnd, 200)), name: 'hosting', category: 'hosting' });
      const from = t0 + b * 6 * HOUR + (b % 2) * 17;
      const built = runBuild({ dataDir, exports: false, now: new Date(from * 1000) });
      const index = (await loadIndexFile(path.join(built.dir, 'index.bin'))).index;
      builds.push({ from, index });
      timeline.extend(built.id, from, index);
    }
    const again = Timeline.fromBytes(timeline.toBytes());
    // Probes: every boundary of every build and its neighbours, at random times and at each span's first second.
    const probes: { family: 4 | 6; v: bigint }[] = [];
    for (const { index } of builds) {
      for (let i = 0; i < index.counts.v4; i += 1) {
        const s = BigInt(index.v4Interval(i).start);
        probes.push({ family: 4, v: s }, { family: 4, v: s > 0n ? s - 1n : s });
      }
      for (let i = 0; i < index.counts.v6; i++) probes.push({ family: 6, v: index.v6Interval(i).start });
    }
    let checked = 0;
    for (const p of probes) {
      const k = Math.floor(rnd() * builds.length);
      const at = rnd() < 0.5 ? builds[k].from : builds[k].from + Math.floor(rnd() * 6 * HOUR);
      const serving = [...builds].reverse().find((b) => b.from <= at)!;
      for (const t of [timeline, again]) {
        const found = t.asOf(p.family, p.v, at);
        assert.ok(!('outside' in found), 'within the history');
        assert.equal(JSON.stringify([found.content.mask, found.content.text, found.content.ends]), contentAt(serving.index, p.family, p.v), `${p.v} at ${at}`);
        assert.equal(found.span.from, serving.from);
      }
      checked++;
    }
    assert.ok(checked > 3000, `${checked} probes`);
    assert.match((timeline.asOf(4, 1n, t0 - 1) as { outside: string }).outside, /^answers are kept from 2028-02-27T00:00:00Z$/);
    // Unchanged stretches add nothing: far fewer versions than segments times builds.
    assert.ok(timeline.versionCount < timeline.segments * 4, `${timeline.versionCount} versions over ${timeline.segments} segments`);

    // Forgetting before the seventh build's start keeps the answers from then on exactly, and
    // what served just before it still answers at the edge.
    const edge = builds[6].from + 60;
    timeline.forgetBefore(edge);
    for (const p of probes.slice(0, 2000)) {
      assert.equal(
        JSON.stringify(Object.values((timeline.asOf(p.family, p.v, edge) as { content: object }).content)),
        contentAt(builds[6].index, p.family, p.v),
      );
      assert.ok('outside' in timeline.asOf(p.family, p.v, edge - 1));
    }
  });

  test('the file keeps up with the serving log; a lost file is rebuilt, a pruned build recorded as lost', () => {
    const dataDir = tempDir();
    const t0 = Date.parse('2026-11-01T00:00:00Z');
    const ids: string[] = [];
    for (let b = 0; b < 4; b++) {
      importFeed({ dataDir, file: writeFile(dataDir, 'vpn.txt', `81.7.${b}.0/24\n`), name: 'vpn', category: 'vpn' });
      ids.push(runBuild({ dataDir, exports: false, now: new Date(t0 + b * HOUR * 1000) }).id);
    }
    const t = updateTimeline(dataDir, t0 + 4 * HOUR * 1000);
    assert.deepEqual(
      t.spans.map((s) => s.build),
      ids,
    );
    const at = (b: number, v: string): boolean => {
      const found = t.asOf(4, BigInt(`0x${v}`), t0 / 1000 + b * HOUR + 1);
      return 'content' in found && found.content.mask !== 0;
    };
    assert.deepEqual([at(0, '51070000'), at(1, '51070000'), at(1, '51070100')], [true, false, true]);
    const written = fs.statSync(timelineFile(dataDir)).mtimeMs;
    updateTimeline(dataDir, t0 + 4 * HOUR * 1000);
    assert.equal(fs.statSync(timelineFile(dataDir)).mtimeMs, written, 'nothing new: not written');
    // Lost, then rebuilt with the first build pruned: its span is known to be lost.
    fs.rmSync(timelineFile(dataDir));
    fs.rmSync(path.join(dataDir, 'builds', ids[0]), { recursive: true });
    const rebuilt = updateTimeline(dataDir, t0 + 4 * HOUR * 1000);
    assert.deepEqual(
      rebuilt.spans.map((s) => [s.build, s.lost ?? false]),
      ids.map((id, k) => [id, k === 0]),
    );
    assert.match((rebuilt.asOf(4, 0x51070000n, t0 / 1000 + 10) as { outside: string }).outside, /was pruned before its answers were recorded$/);
    assert.equal(readTimeline(dataDir)!.spans.length, 4);
  });

  test('at is read as RFC 3339: offsets, fractions, leap days and seconds; anything else, or a time to come, is refused with a message', () => {
    const now = Date.parse('2028-03-01T12:00:00Z');
    const ok = (raw: string): number => (parseAt(raw, now) as { seconds: number }).seconds;
    assert.equal(ok('2028-02-29T23:30:00Z'), Date.parse('2028-02-29T23:30:00Z') / 1000);
    assert.equal(ok('2028-03-01T00:30:00%2B01:00'), Date.parse('2028-02-29T23:30:00Z') / 1000, 'an offset, percent-encoded');
    assert.equal(ok('2028-03-01T00:30:00+01:00'), Date.parse('2028-02-29T23:30:00Z') / 1000, 'a + read as a space would not parse');
    assert.equal(ok('2028-02-29t18:30:00.999-05:00'), Date.parse('2028-02-29T23:30:00.999Z') / 1000 - 0.999);
    assert.equal(ok('2028-02-29 23:30:00z'), Date.parse('2028-02-29T23:30:00Z') / 1000);
    for (const bad of ['not-a-time', '2027-02-29T00:00:00Z', '2028-02-29', '2028-02-29T24:00:00Z', '2028-13-01T00:00:00Z', '1700000000', '%E0%A4%A', ''])
      assert.match((parseAt(bad, now) as { refused: string }).refused, /^at must be an RFC 3339 time/, bad);
    assert.match((parseAt('2028-03-01T12:00:01Z', now) as { refused: string }).refused, /^at must not be in the future/);
  });
});

describe('GET /{ip}?at=', () => {
  const dataDir = tempDir();
  const plans = plansFile(dataDir);
  const t1 = Date.parse('2026-11-01T00:00:00Z');
  const t2 = t1 + 36 * HOUR * 1000;
  let svc: Service;
  const keys: Record<string, string> = {};
  const builds: string[] = [];

  before(async () => {
    importFeed({ dataDir, file: writeFile(dataDir, 'vpn.txt', '81.7.3.0/24\n'), name: 'vpn', category: 'vpn', details: { provider: 'OldVPN' } });
    builds.push(runBuild({ dataDir, exports: false, now: new Date(t1) }).id);
    importFeed({ dataDir, file: writeFile(dataDir, 'vpn.txt', '81.7.3.0/25\n'), name: 'vpn', category: 'vpn', details: { provider: 'NewVPN' } });
    builds.push(runBuild({ dataDir, exports: false, now: new Date(t2) }).id);
    const db = openTestControlDb(dataDir);
    for (const plan of ['free', 'scale', 'max']) {
      const orgId = createOrganisation(db, loadPlans(plans), `${plan} co`, plan).id;
      keys[plan] = createKey(db, { orgId, name: 'k' }).secret;
      keys[`${plan}+changes`] = createKey(db, { orgId, name: 'feed', scopes: ['changes.read'] }).secret;
    }
    db.close();
    svc = await startTestService({ dataDir, plansFile: plans });
  });
  after(() => svc?.close());

  const ask = (p: string, plan?: string) => get(svc.port, p, plan ? { Authorization: `Bearer ${keys[plan]}` } : {});

  test('answers as the build that served then, with as_of; the plan of today decides the fields; without at, the answer of now byte for byte', async () => {
    const old = await ask(`/81.7.3.200?at=${encodeURIComponent('2026-11-01T05:00:00+01:00')}`, 'max');
    assert.equal(old.status, 200, old.text);
    assert.equal(old.json.vpn.provider, 'OldVPN');
    assert.equal(old.json.as_of, '2026-11-01T00:00:00Z');
    const later = await ask('/81.7.3.200?at=2026-11-02T13:00:00Z', 'max');
    assert.deepEqual([later.json.is_vpn, later.json.as_of], [false, '2026-11-02T12:00:00Z'], 'the second build dropped it');
    const inside = await ask('/81.7.3.20?at=2026-11-02T13:00:00Z', 'scale');
    assert.deepEqual([inside.json.is_vpn, inside.json.vpn?.provider], [true, 'NewVPN']);
    // The answer without at is the index's, byte for byte, and carries no as_of.
    const now = await ask('/81.7.3.20', 'max');
    assert.equal(now.text, answerText(svc.holder.current!.index, '81.7.3.20'));
    // The same key's answer now and as of now differ only by as_of.
    const asOfNow = await ask(`/81.7.3.20?at=${new Date().toISOString()}`, 'max');
    assert.equal(asOfNow.text, now.text.replace(/}$/, ',"as_of":"2026-11-02T12:00:00Z"}'));
    // IPv4-mapped and bogon spellings answer as their address does.
    assert.equal((await ask('/::ffff:81.7.3.200?at=2026-11-01T01:00:00Z', 'max')).json.vpn.provider, 'OldVPN');
    assert.equal((await ask('/10.0.0.1?at=2026-11-01T01:00:00Z', 'max')).json.is_vpn, false);
  });

  test('refusals: not a time, the future, before the history, twice; no key; a plan without history', async () => {
    const refused = async (p: string, plan: string | undefined, status: number, message: RegExp): Promise<void> => {
      const r = await ask(p, plan);
      assert.equal(r.status, status, `${p}: ${r.text}`);
      assert.match(r.json.error, message, p);
    };
    await refused('/81.7.3.20?at=not-a-time', 'max', 400, /^at must be an RFC 3339 time/);
    await refused('/81.7.3.20?at=2099-01-01T00:00:00Z', 'max', 400, /^at must not be in the future/);
    await refused('/81.7.3.20?at=2026-10-01T00:00:00Z', 'max', 400, /^at is outside the history kept: answers are kept from 2026-11-01T00:00:00Z$/);
    await refused('/81.7.3.20?at=2026-11-01T01:00:00Z&at=2026-11-01T02:00:00Z', 'max', 400, /^at was given twice/);
    await refused('/not-an-ip?at=2026-11-01T01:00:00Z', 'max', 400, /^not a valid IP address$/);
    await refused('/81.7.3.20?at=2026-11-01T01:00:00Z', undefined, 401, /^an API key is required$/);
    await refused('/81.7.3.20?at=2026-11-01T01:00:00Z', 'free', 403, /^lookups as of a time \(at\) are not in this plan/);
    // /myip too.
    await refused('/myip?at=2026-11-01T01:00:00Z', 'free', 403, /^lookups as of a time/);
    assert.equal((await ask('/myip?at=2026-11-01T01:00:00Z', 'max')).json.as_of, '2026-11-01T00:00:00Z');
  });

  test('a batch with at: each distinct address as of then, errors per entry, the same refusals as a single lookup', async () => {
    const batch = (body: unknown, plan?: string) =>
      request(svc.port, 'POST', '/batch', typeof body === 'string' ? body : JSON.stringify(body), {
        'Content-Type': 'application/json',
        ...(plan ? { Authorization: `Bearer ${keys[plan]}` } : {}),
      });
    const r = await batch({ ips: ['81.7.3.200', 'nope', '81.7.3.200', '10.0.0.1', '::ffff:81.7.3.1'], at: '2026-11-01T05:00:00Z' }, 'max');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.json.results), ['81.7.3.200', '10.0.0.1', '::ffff:81.7.3.1']);
    assert.deepEqual(
      [r.json.results['81.7.3.200'].vpn.provider, r.json.results['81.7.3.200'].as_of, r.json.results['10.0.0.1'].is_vpn],
      ['OldVPN', '2026-11-01T00:00:00Z', false],
    );
    assert.deepEqual(r.json.errors, { nope: { status: 400, error: 'not a valid IP address' } });
    // Each entry as the single lookup of the same address and time.
    const single = await ask('/81.7.3.200?at=2026-11-01T05:00:00Z', 'max');
    assert.deepEqual(r.json.results['81.7.3.200'], single.json);
    const refused = async (body: unknown, plan: string | undefined, status: number, message: RegExp) => {
      const x = await batch(body, plan);
      assert.deepEqual([x.status, message.test(x.json.error)], [status, true], x.text);
    };
    await refused({ ips: ['81.7.3.1'], at: '2026-11-01T05:00:00Z' }, 'free', 403, /^lookups as of a time/);
    await refused({ ips: ['81.7.3.1'], at: '2026-11-01T05:00:00Z' }, undefined, 401, /^an API key is required$/);
    await refused({ ips: ['81.7.3.1'], at: 'soon' }, 'max', 400, /^at must be an RFC 3339 time/);
    await refused({ ips: ['81.7.3.1'], at: 5 }, 'max', 400, /^at must be a string/);
    await refused({ ips: ['81.7.3.1'], at: '2020-01-01T00:00:00Z' }, 'max', 400, /^at is outside the history kept/);
    await refused('{"ips":["81.7.3.1"],"\\u0061t":"2026-11-01T05:00:00Z"}', 'max', 400, /^at must be spelt "at"/);
    // Without at: as before, from today's index.
    const now = await batch({ ips: ['81.7.3.200'] }, 'max');
    assert.deepEqual([now.status, now.json.results['81.7.3.200'].as_of, now.json.results['81.7.3.200'].is_vpn], [200, undefined, false]);
    // "at" as an entry, not a field: a batch of today, the entry not an address.
    const entry = await batch({ ips: ['81.7.3.200', 'at'] }, 'max');
    assert.equal(entry.status, 200, entry.text);
    assert.deepEqual([entry.json.results['81.7.3.200'].as_of, entry.json.errors.at], [undefined, { status: 400, error: 'not a valid IP address' }]);
  });

  test("the operator sees every plan's answer as of a time, and ipsift explain --at the answer and the build", async () => {
    const db = openTestControlDb(dataDir);
    const token = createAdminToken(db, 'ops', ['admin.read']).secret;
    db.close();
    const auth = { Authorization: `Bearer ${token}` };
    const r = await get(svc.adminPort, '/admin/v1/answers/81.7.3.200?at=2026-11-01T06:00:00+01:00', auth);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual([r.json.at, r.json.as_of, r.json.keyless.answer.is_vpn], ['2026-11-01T05:00:00Z', '2026-11-01T00:00:00Z', true]);
    assert.equal(r.json.plans.find((p: { plan: string }) => p.plan === 'free').answer.vpn, undefined, 'each plan at its own fields');
    assert.equal(r.json.plans.find((p: { plan: string }) => p.plan === 'max').answer.vpn.provider, 'OldVPN');
    const bad = await get(svc.adminPort, '/admin/v1/answers/81.7.3.200?at=yesterday', auth);
    assert.deepEqual([bad.status, /^at must be an RFC 3339 time/.test(bad.json.error)], [400, true]);
    const cli = await cliInThread(['explain', '81.7.3.200', '--at', '2026-11-01T05:00:00Z', '--json'], { ...process.env, ...testStoreEnv(dataDir) });
    assert.equal(cli.code, 0, cli.stderr);
    const said = JSON.parse(cli.stdout);
    assert.deepEqual([said.build, said.answer.vpn.provider, said.answer.as_of], [builds[0], 'OldVPN', '2026-11-01T00:00:00Z']);
    const outside = await cliInThread(['explain', '81.7.3.200', '--at', '2020-01-01T00:00:00Z'], { ...process.env, ...testStoreEnv(dataDir) });
    assert.deepEqual([outside.code, /outside the history kept/.test(outside.stderr)], [2, true]);
  });

  test('the change feed pages every changed range once, in order, and what a later build changes after the last cursor', async () => {
    const page = async (since: string, limit = 1, plan = 'max+changes') =>
      get(svc.port, `/api/v1/changes?since=${since}&limit=${limit}`, { Authorization: `Bearer ${keys[plan]}` });
    const first = await page('0');
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(
      first.json.changes.map((c: { first: string; last: string; build: string; at: string; categories: object }) => [
        c.first,
        c.last,
        c.build,
        c.at,
        Object.keys(c.categories),
      ]),
      [['81.7.3.0', '81.7.3.127', builds[1], '2026-11-02T12:00:00Z', ['vpn']]],
    );
    assert.deepEqual([first.json.changes[0].categories.vpn.before.provider, first.json.changes[0].categories.vpn.after.provider], ['OldVPN', 'NewVPN']);
    const second = await page(first.json.next);
    assert.deepEqual(
      second.json.changes.map((c: { first: string; last: string; categories: { vpn: { after: unknown } } }) => [c.first, c.last, c.categories.vpn.after]),
      [['81.7.3.128', '81.7.3.255', null]],
    );
    const none = await page(second.json.next);
    assert.deepEqual([none.json.changes, none.json.next], [[], second.json.next], 'nothing new: the same cursor');
    // A later build: asked again with the last cursor, only its changes.
    importFeed({ dataDir, file: writeFile(dataDir, 'vpn.txt', '81.7.3.0/25\n82.1.2.3\n'), name: 'vpn', category: 'vpn', details: { provider: 'NewVPN' } });
    builds.push(runBuild({ dataDir, exports: false }).id);
    updateTimeline(dataDir, Date.now());
    let fresh = await page(none.json.next, 10);
    await until(async () => (fresh = await page(none.json.next, 10)).json.changes.length > 0, 5000, 'the new build in the feed');
    // Only the new build's changes (its details are dated today, so its /25 is among them).
    const later: { first: string; build: string }[] = fresh.json.changes;
    assert.ok(later.every((c) => c.build === builds[2]) && later.some((c) => c.first === '82.1.2.3'), JSON.stringify(later));
    // All at once, the same ranges as page by page.
    const all = await page('0', 1000);
    assert.deepEqual(
      all.json.changes.map((c: { first: string }) => c.first),
      ['81.7.3.0', '81.7.3.128', ...later.map((c) => c.first)],
    );
    // Refusals.
    const refused = async (p: string, headers: Record<string, string>, status: number, message: RegExp) => {
      const r = await get(svc.port, p, headers);
      assert.deepEqual([r.status, message.test(r.json.message)], [status, true], `${p}: ${r.text}`);
    };
    const bearer = (k: string) => ({ Authorization: `Bearer ${keys[k]}` });
    await refused('/api/v1/changes', {}, 401, /^an API key with the changes.read scope is required$/);
    await refused('/api/v1/changes', bearer('max'), 401, /lacks the changes.read scope/);
    await refused('/api/v1/changes', bearer('free+changes'), 403, /not in this plan/);
    await refused('/api/v1/changes?since=nope', bearer('max+changes'), 400, /^since must be 0 or the next of an earlier page$/);
    await refused('/api/v1/changes?limit=0', bearer('max+changes'), 400, /^limit must be a whole number/);
    await refused('/api/v1/changes?x=1', bearer('max+changes'), 400, /^unknown parameter "x"/);
  });
});
