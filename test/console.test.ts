// The operator's console in a real browser (headless Chromium driven by playwright-core)
// against a real server: signing in, each page, the writes an operator makes (an organisation,
// a key whose secret is shown once, a revocation, a licence, another build made serving), the
// usage chart moving after lookups, a read-only token that sees no write control and whose
// forced write is refused, a refused token, the console's headers (policy, caching), its bytes
// over the wire, and that it never calls the public port. Each page's screenshot is written to
// dist/test-artifacts/console/.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { importFeed } from '../src/feeds/import.js';
import { runBuild } from '../src/build/build.js';
import { createAdminToken } from '../src/control/admin-tokens.js';
import { CONSOLE_CSP } from '../src/api/admin/console.js';
import { HARVEST_MS } from '../src/control/key-activity.js';
import { TestClock } from './test-clock.js';
import type { Service } from '../src/service.js';
import { readDisabledSources } from '../src/feeds/source-switches.js';
import { get, openTestControlDb, PROJECT_ROOT, request, startTestService, tempDir, until, writeFile } from './helpers.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = path.join(PROJECT_ROOT, 'dist/test-artifacts/console');

const FEED = `network,category,provider,confidence,method,last_seen
81.7.3.16/28,tor,Tor Project,high,,2026-11-02
45.83.64.0/24,vpn,ExampleVPN,medium,,2026-11-01
`;

describe('operator console (Chromium)', { skip: fs.existsSync(CHROMIUM) ? false : `no browser at ${CHROMIUM} (apt-get install chromium)` }, () => {
  let svc: Service;
  let browser: Browser;
  let write: string;
  let read: string;
  let firstBuild: string;
  let secondBuild: string;
  let base: string;
  /** The server's clock: moved to have the front end hand its key counts over. */
  const clock = new TestClock();

  before(async () => {
    const dataDir = tempDir();
    importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', FEED) });
    firstBuild = runBuild({ dataDir }).id;
    secondBuild = runBuild({ dataDir }).id;
    svc = await startTestService({ dataDir }, undefined, { clock });
    base = `http://127.0.0.1:${svc.adminPort}`;
    const db = openTestControlDb(dataDir);
    try {
      write = createAdminToken(db, 'ops', ['admin.write']).secret;
      read = createAdminToken(db, 'support', ['admin.read']).secret;
    } finally {
      db.close();
    }
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  });
  after(async () => {
    await browser?.close();
    await svc?.close();
  });

  /** A new tab, with every request it makes and every page error recorded. */
  async function tab(): Promise<{ page: Page; urls: string[]; errors: string[] }> {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const urls: string[] = [];
    const errors: string[] = [];
    page.on('request', (r) => urls.push(r.url()));
    page.on('pageerror', (e) => errors.push(e.message));
    // A violation of the page's policy (an inline script or style, another origin) is logged as an error.
    page.on('console', (m) => void (m.type() === 'error' && errors.push(m.text())));
    return { page, urls, errors };
  }

  async function signIn(page: Page, token: string): Promise<void> {
    await page.goto(`${base}/console/`);
    await page.fill('[data-test=token]', token);
    await page.click('[data-test=signin] button[type=submit]');
  }

  const shot = (page: Page, name: string): Promise<Buffer> => page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });

  test('the first load is small, sent compressed, under a strict policy, never cached, and only from the admin port', async () => {
    const { page, urls, errors } = await tab();
    let wire = 0;
    page.on(
      'requestfinished',
      (r) =>
        void r.sizes().then(
          (s) => (wire += s.responseBodySize + s.responseHeadersSize),
          () => {},
        ),
    );
    await signIn(page, write);
    await page.waitForSelector('[data-test=serving-build]');
    await page.waitForLoadState('networkidle');
    assert.equal(await page.textContent('[data-test=serving-build]'), svc.holder.current!.buildId);
    assert.match((await page.textContent('[data-test=who]'))!, /ops · read and write/);
    await shot(page, 'overview');
    // Measured from the responses' own sizes: headers and (compressed) bodies.
    assert.ok(wire > 5_000 && wire < 200_000, `first load ${wire} bytes over the wire`);
    process.stdout.write(`# console first load: ${wire} bytes over the wire, ${urls.length} requests\n`);
    assert.ok(
      urls.every((u) => u.startsWith(`${base}/`) || u.startsWith('data:')),
      urls.join('\n'),
    );
    assert.ok(!urls.some((u) => u.includes(`:${svc.port}/`)));
    // The traffic over the last day, asked for by its button.
    assert.equal(await page.getAttribute('[data-test=traffic-window] button[data-window="1h"]', 'aria-pressed'), 'true');
    await page.click('[data-test=traffic-window] button[data-window="24h"]');
    await page.waitForSelector('h2:has-text("Traffic, the last 24 hours")');
    assert.equal(await page.getAttribute('[data-test=traffic-window] button[data-window="24h"]', 'aria-pressed'), 'true');
    // Traffic per route family, one row each, the busiest first.
    assert.equal(await page.locator('table[data-test=routes] tbody tr').count(), 5);
    assert.match((await page.textContent('table[data-test=routes] thead'))!, /^RouteRequestsPer secondp50p99$/);
    assert.ok(urls.some((u) => u.endsWith('/admin/v1/overview?window=24h')));
    assert.deepEqual(errors, []);
    await page.close();

    const pageReply = await get(svc.adminPort, '/console/', { 'Accept-Encoding': 'gzip, br' });
    assert.equal(pageReply.status, 200);
    assert.equal(pageReply.headers['content-security-policy'], CONSOLE_CSP);
    assert.equal(pageReply.headers['cache-control'], 'no-store');
    assert.equal(pageReply.headers['content-encoding'], 'br');
    const plain = await get(svc.adminPort, '/console/');
    assert.doesNotMatch(plain.text, /<script>|<script [^>]*>[^<]|\sstyle=|\son[a-z]+=/, 'no inline script, style or handler');
    const asset = plain.text.match(/src="(\/console\/assets\/[0-9a-f]{16}\/main\.js)"/)![1];
    const js = await get(svc.adminPort, asset);
    assert.equal(js.status, 200);
    assert.equal(js.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal(js.headers['content-security-policy'], CONSOLE_CSP);
    assert.match(js.headers['content-type']!, /^text\/javascript/);
    const api = await request(svc.adminPort, 'GET', '/admin/v1/overview', undefined, { Authorization: `Bearer ${write}` });
    assert.equal(api.headers['cache-control'], 'private, no-store');
    // Not on the public port.
    assert.equal((await get(svc.port, '/console/')).status === 200 && (await get(svc.port, '/console/')).text.includes('<html'), false);
    assert.equal((await get(svc.adminPort, asset.replace(/[0-9a-f]{16}/, '0000000000000000'))).status, 404);
  });

  test('a wrong token is refused and nothing of the console opens', async () => {
    const { page } = await tab();
    await signIn(page, 'iat_not-a-real-token');
    await page.waitForSelector('.notice.error');
    assert.match((await page.textContent('.notice.error'))!, /Refused: an operator token is required/);
    assert.equal(await page.locator('nav').count(), 0);
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    assert.equal(await page.evaluate(() => document.cookie), '');
    await page.close();
  });

  test('an organisation, a key shown once, a revocation, a licence, the usage chart, and an HTML name shown as text', async () => {
    const { page, urls, errors } = await tab();
    await signIn(page, write);
    await page.waitForSelector('[data-test=serving-build]');
    await page.click('nav a[data-route=orgs]');
    const name = '<img src=x onerror="document.title=1">Acme';
    await page.fill('[data-test=create-org] input[name=name]', name);
    await page.selectOption('[data-test=create-org] select', 'scale');
    await page.click('[data-test=create-org] button[type=submit]');
    await page.waitForSelector('h1:has-text("Acme")');
    assert.equal(await page.textContent('h1'), name, 'the name is text, not markup');
    assert.equal(await page.locator('main img').count(), 0);
    const orgUrl = page.url();
    const orgId = orgUrl.split('/').pop()!;

    await page.fill('[data-test=create-key] input[aria-label="Key name"]', 'prod');
    await page.click('[data-test=create-key] button[type=submit]');
    const secret = (await page.textContent('[data-test=new-secret]'))!;
    assert.match(secret, /^isk_/);
    await page.waitForSelector('[data-test=keys] td:has-text("prod")');
    await shot(page, 'organisation');
    // The secret lives in this page only: a reload shows the key but never its secret again.
    await page.reload();
    await page.waitForSelector('[data-test=keys] td:has-text("prod")');
    assert.equal(await page.locator('[data-test=new-secret]').count(), 0);
    assert.ok(!(await page.content()).includes(secret));
    assert.ok(!JSON.stringify(await page.evaluate(() => ({ ...sessionStorage }))).includes(secret));

    // The key works on the public port; the usage chart moves.
    const requestsShown = async (): Promise<number> => Number(await page.getAttribute('svg.usage rect.used', 'data-requests'));
    assert.equal(await requestsShown(), 0);
    for (let i = 0; i < 5; i++) assert.equal((await get(svc.port, '/81.7.3.20', { Authorization: `Bearer ${secret}` })).status, 200);
    await until(
      async () => {
        await page.reload();
        await page.waitForSelector('svg.usage');
        return (await requestsShown()) >= 5;
      },
      10_000,
      'the usage chart shows the 5 lookups',
    );
    // Who used the key, from where: handed over by the front end, shown on the key's row and
    // among who is refused on the overview.
    clock.advance(HARVEST_MS);
    await until(
      async () => {
        await page.reload();
        await page.waitForSelector('[data-test=keys] td:has-text("prod")');
        return (await page.locator('[data-test=keys] [data-test=last-used]').count()) === 1;
      },
      10_000,
      "the key's last use shown",
    );
    assert.match((await page.textContent('[data-test=keys] [data-test=last-used]'))!, /from 127\.0\.0\.1$/);
    assert.match((await page.textContent('[data-test=keys] tbody tr'))!, /5 \/ 0 \/ 0/);
    await page.click('nav a[data-route=overview]');
    await page.waitForSelector('table[data-test=refused-keys] td:has-text("prod")');
    await shot(page, 'overview-activity');
    await page.goto(orgUrl);
    await page.waitForSelector('[data-test=keys] td:has-text("prod")');
    // Made a minute ago: its pace counts from its creation, not from the month's first day.
    const made: string = (await get(svc.adminPort, `/admin/v1/organizations/${orgId}`, { Authorization: `Bearer ${write}` })).json.created_at;
    assert.match(
      (await page.textContent('[data-test=usage-requests]'))!,
      new RegExp(`requests since ${made.slice(0, 10)} ${made.slice(11, 16)} UTC$`),
      'the usage counts from the creation',
    );
    // Minutes of use project nothing: no "27 at this pace" from two minutes.
    assert.match((await page.textContent('[data-test=usage-pace]'))!, /used · too early to project: \d+ minutes of use$/);

    await page.click('[data-test=grant-licence] button[type=submit]');
    await page.waitForSelector('table[data-test=licences] td:has-text("subscription")');

    await page.click('[data-test=rotate-prod]');
    await page.waitForFunction((old) => document.querySelector('[data-test=new-secret]')?.textContent !== old, secret);
    const rotated = (await page.textContent('[data-test=new-secret]'))!;
    assert.match(rotated, /^isk_/);
    assert.equal((await get(svc.port, '/81.7.3.20', { Authorization: `Bearer ${rotated}` })).status, 200);
    await until(
      async () => (await get(svc.port, '/81.7.3.20', { Authorization: `Bearer ${secret}` })).status === 401,
      5_000,
      'the rotated-out secret is refused',
    );

    await page.click('[data-test=revoke-prod]');
    await page.waitForSelector('[data-test=keys] td:has-text("revoked")');
    await until(async () => (await get(svc.port, '/81.7.3.20', { Authorization: `Bearer ${rotated}` })).status === 401, 5_000, 'the revoked key is refused');

    // The audit log names each change, filtered to the organisation.
    await page.click('a:has-text("changes to this organisation")');
    await page.waitForSelector('table[data-test=audit] td:has-text("key.revoke")');
    for (const action of ['org.create', 'key.create', 'key.rotate', 'license.grant', 'key.revoke'])
      assert.equal(await page.locator(`table[data-test=audit] td:text-is("${action}")`).count(), 1, action);
    await shot(page, 'audit');

    await page.goto(`${base}/console/#/orgs`);
    await page.fill('[data-test=org-search]', 'acme');
    await page.waitForSelector(`table[data-test=orgs] a[href="#/orgs/${orgId}"]`);
    assert.equal(await page.locator('table[data-test=orgs] tbody tr').count(), 1);
    await shot(page, 'organisations');
    assert.ok(urls.every((u) => u.startsWith(`${base}/`) || u.startsWith('data:')));
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('deleting an organisation takes its name typed back; its keys are refused at once and the audit names it', async () => {
    const as = { Authorization: `Bearer ${write}`, 'Content-Type': 'application/json' };
    const org = (await request(svc.adminPort, 'POST', '/admin/v1/organizations', JSON.stringify({ name: 'Leaving Ltd', plan: 'scale' }), as)).json;
    const key = (await request(svc.adminPort, 'POST', `/admin/v1/organizations/${org.id}/keys`, JSON.stringify({ name: 'old' }), as)).json;
    assert.equal((await get(svc.port, '/81.7.3.20', { Authorization: `Bearer ${key.key}` })).status, 200);
    const { page, errors } = await tab();
    await signIn(page, write);
    await page.goto(`${base}/console/#/orgs/${org.id}`);
    await page.click('[data-test=delete-org]');
    const confirm = page.locator('[data-test=confirm-delete-org]');
    assert.equal(await confirm.isDisabled(), true, 'nothing typed');
    await page.fill('[data-test=delete-org-name]', 'Leaving');
    assert.equal(await confirm.isDisabled(), true, 'another name');
    await page.fill('[data-test=delete-org-name]', 'Leaving Ltd');
    await confirm.click();
    await page.waitForSelector('table[data-test=orgs]');
    assert.match((await page.textContent('[role=status]'))!, /Leaving Ltd deleted: 1 keys revoked, 0 licences ended/);
    await until(
      async () => (await get(svc.port, '/81.7.3.20', { Authorization: `Bearer ${key.key}` })).status === 401,
      5_000,
      'the deleted organisation’s key refused',
    );
    const audit = (await get(svc.adminPort, `/admin/v1/audit?org_id=${org.id}`, as)).json;
    assert.ok(
      audit.entries.some((e: { action: string }) => e.action === 'org.delete'),
      JSON.stringify(audit),
    );
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('an address looked up as each plan sees it, with the evidence behind it', async () => {
    const { page } = await tab();
    await signIn(page, write);
    await page.click('nav a[data-route=lookup]');
    await page.fill('[data-test=lookup-input]', '81.7.3.20');
    await page.click('button:has-text("Look up")');
    await page.waitForSelector('table[data-test=plan-answers]');
    const row = (field: string) => page.locator(`table[data-test=plan-answers] tr:has(code:text-is("${field}")) td`).allTextContents();
    const tor = await row('is_tor');
    assert.deepEqual(tor.slice(1), ['—', '—', 'true', 'true', 'true'], 'keyless and free see no is_tor; starter, scale and max see true');
    assert.match((await row('tor'))[5], /provider: Tor Project/);
    await page.click('[data-test=explain]');
    await page.waitForSelector('[data-test=explanation] h3');
    assert.equal(await page.textContent('[data-test=explanation] h3'), 'tor: yes');
    assert.match((await page.textContent('[data-test=explanation] .rule'))!, /claims 81\.7\.3\.16\/28: the only claim/);
    assert.match((await page.textContent('[data-test=explanation] table'))!, /feed \(won\)/);
    await shot(page, 'lookup');
    // As of a time: the answers the timeline keeps, and which build gave them.
    await page.fill('[data-test=lookup-at]', new Date().toISOString());
    await page.click('button:has-text("Look up")');
    await page.waitForSelector('[data-test=as-of]');
    assert.match((await page.textContent('[data-test=as-of]'))!, /^As of \d{4}-\d{2}-\d{2}T[\d:]+Z: build \d{8}-\d+, which served from \d{4}-/);
    assert.deepEqual((await row('is_tor')).slice(1), ['—', '—', 'true', 'true', 'true']);
    await page.fill('[data-test=lookup-at]', '');

    await page.fill('[data-test=lookup-input]', '45.83.64.7, 81.7.3.20 not-an-address');
    await page.click('button:has-text("Look up")');
    await page.waitForSelector('table[data-test=list-answers]');
    const cells = await page.locator('table[data-test=list-answers] td').allTextContents();
    assert.deepEqual(
      cells.filter((_, i) => i % 2 === 0),
      ['45.83.64.7', '81.7.3.20', 'not-an-address'],
    );
    assert.match(cells[1], /^vpn/);
    assert.match(cells[3], /^tor/);
    assert.equal(cells[5], 'not a valid IP address');
    await page.close();
  });

  test('another build is made serving after a confirmation, and the page shows it', async () => {
    const { page } = await tab();
    await signIn(page, write);
    await page.click('nav a[data-route=data]');
    await page.waitForSelector(`[data-test=serve-${firstBuild}]`);
    assert.equal(svc.holder.current!.buildId, secondBuild);
    await page.click(`[data-test=serve-${firstBuild}]`);
    await page.waitForSelector('[data-test=confirm-serve]');
    assert.equal(svc.holder.current!.buildId, secondBuild, 'nothing changes before the confirmation');
    await shot(page, 'data');
    await page.click('[data-test=confirm-serve]');
    await page.waitForSelector(`table[data-test=builds] td:has-text("${firstBuild} (serving)")`);
    await until(() => svc.holder.current?.buildId === firstBuild, 5_000, `the server serves ${firstBuild}`);
    assert.match((await page.textContent('[data-test=build-report]'))!, new RegExp(`Build ${firstBuild}`));
    await page.close();
  });

  test('a build asked for from the Data page after a confirmation serves when done; a refresh with no sources configured is refused with the reason', async () => {
    const { page, errors } = await tab();
    await signIn(page, write);
    await page.click('nav a[data-route=data]');
    await page.waitForSelector('table[data-test=builds]');
    const before = await page.locator('table[data-test=builds] tbody tr').count();
    await page.click('[data-test=build-now]');
    await page.waitForSelector('[data-test=confirm-build-now]');
    await page.click('[data-test=confirm-build-now]');
    await page.waitForSelector('.notice.ok:has-text("build started")');
    await until(
      async () => (await get(svc.adminPort, '/admin/v1/builds', { Authorization: `Bearer ${write}` })).json.builds.length > before,
      60_000,
      'the build',
    );
    const newest = (await get(svc.adminPort, '/admin/v1/builds', { Authorization: `Bearer ${write}` })).json.builds[0].id as string;
    await until(() => svc.holder.current?.buildId === newest, 10_000, `build ${newest} serving`);
    await page.click('[data-test=refresh-sources]');
    await page.click('[data-test=confirm-refresh-sources]');
    await page.waitForSelector('.notice.error:has-text("no sources are configured")');
    assert.deepEqual(
      errors.filter((e) => !/409/.test(e)),
      [],
    );
    await page.close();
  });

  test('a build older than its schedule and sources in trouble are named in a banner at the top of the overview, linking to the detail', async () => {
    // A server whose one source cannot be reached (its first refresh fails at once), serving a
    // build of months ago where one is due daily.
    const dataDir = tempDir();
    importFeed({ dataDir, file: writeFile(dataDir, 'feed.csv', FEED) });
    const old = runBuild({ dataDir, now: new Date('2026-01-05T00:00:00Z') });
    const sources = writeFile(
      dataDir,
      'sources.json',
      JSON.stringify([{ name: 'unreachable-list', url: 'http://127.0.0.1:1/list.txt', format: 'list', category: 'vpn', max_age: '7d' }]),
    );
    const troubled = await startTestService({ dataDir, sourcesFile: sources, sources: '' });
    try {
      const db = openTestControlDb(dataDir);
      const token = createAdminToken(db, 'ops', ['admin.read']).secret;
      db.close();
      await until(async () => (await get(troubled.adminPort, '/metrics')).text.includes('state="failed"'), 10_000, 'the source failed');
      const { page, errors } = await tab();
      await page.goto(`http://127.0.0.1:${troubled.adminPort}/console/`);
      await page.fill('[data-test=token]', token);
      await page.click('[data-test=signin] button[type=submit]');
      await page.waitForSelector('[data-test=health-banner]');
      const lines = await page.locator('[data-test=health-banner] li').allTextContents();
      assert.equal(lines.length, 2, lines.join(' | '));
      assert.match(lines[0], new RegExp(`^The serving build ${old.id} was made \\d+ hours ago; one is due every 24 hours\\. See Data$`));
      assert.equal(lines[1], 'Sources: 1 unreachable: unreachable-list. See Data');
      // The process: the batch pool (two workers here) and each thread's event loop.
      assert.match((await page.textContent('[data-test=batch-pool]'))!, /^0 of 2 busy, 0 batches waiting; busy \d+ % of the time since start$/);
      assert.match((await page.textContent('table[data-test=threads] tbody tr'))!, /^0yesyes[\d.]+ \/ [\d.]+ \/ [\d.]+ ms$/);
      await shot(page, 'overview-failed-source');
      await page.click('[data-test=health-banner] li[data-kind=sources] a');
      await page.waitForSelector('h1:has-text("Data")');
      assert.deepEqual(errors, []);
      await page.close();
    } finally {
      await troubled.close();
    }
  });

  test("the Data page's sources: trouble first, a page at a time, filtered as one types, sorted by a heading", async () => {
    // Thirty healthy lists of its own before a failing one.
    const dataDir = tempDir();
    const healthy = Array.from({ length: 30 }, (_, i) => ({
      name: `own-list-${String(i).padStart(2, '0')}`,
      path: writeFile(dataDir, `own-${i}.txt`, `${Array.from({ length: i + 1 }, (_, j) => `92.${i}.${j}.0/24`).join('\n')}\n`),
      format: 'list',
      category: 'hosting',
      max_age: '7d',
    }));
    const sources = writeFile(
      dataDir,
      'sources.json',
      JSON.stringify([...healthy, { name: 'unreachable-list', url: 'http://127.0.0.1:1/list.txt', format: 'list', category: 'vpn', max_age: '7d' }]),
    );
    const busy = await startTestService({ dataDir, sourcesFile: sources, sources: '' });
    try {
      const db = openTestControlDb(dataDir);
      const token = createAdminToken(db, 'ops', ['admin.write']).secret;
      db.close();
      await until(async () => (await get(busy.adminPort, '/metrics')).text.includes('state="failed"'), 10_000, 'the source failed');
      const { page, errors } = await tab();
      await page.goto(`http://127.0.0.1:${busy.adminPort}/console/#/data`);
      await page.fill('[data-test=token]', token);
      await page.click('[data-test=signin] button[type=submit]');
      await page.click('nav a[data-route=data]');
      await page.waitForSelector('table[data-test=sources] tbody tr');
      const firstRow = async (): Promise<string> => (await page.locator('table[data-test=sources] tbody tr >> nth=0').textContent())!;
      assert.match(await firstRow(), /^unreachable-listhttp:\/\/127\.0\.0\.1:1\/list\.txtfailed/, 'failures first, each with its URL');
      assert.equal(await page.textContent('[data-test=sources-shown]'), '1–25 of 31');
      await page.click('[data-test=sources-next]');
      assert.equal(await page.textContent('[data-test=sources-shown]'), '26–31 of 31');
      await page.fill('[data-test=sources-filter]', 'own-list-1');
      assert.equal(await page.textContent('[data-test=sources-shown]'), '1–10 of 10');
      await page.fill('[data-test=sources-filter]', '');
      await page.click('table[data-test=sources] th[data-sort=Entries]');
      await page.click('table[data-test=sources] th[data-sort=Entries]');
      assert.match(await firstRow(), /^own-list-29\/\S+ok30/, 'the most entries first, once sorted descending');
      await shot(page, 'data-sources');
      // One source fetched again from its row.
      await page.click('[data-test=refresh-source-own-list-29]');
      await page.waitForSelector('text=refresh of own-list-29 started');
      // The failing source's warning in the log tail.
      await page.waitForSelector('table[data-test=log-tail] td:has-text("source not refreshed")');
      // One set aside after a confirmation: a build without it follows, and its report says what changed.
      const first = busy.holder.current!.buildId;
      await page.click('[data-test=disable-source-own-list-28]');
      assert.equal(readDisabledSources(dataDir)['own-list-28'], undefined, 'nothing before the confirmation');
      await page.click('[data-test=confirm-disable-source-own-list-28]');
      await page.waitForSelector('text=own-list-28 disabled');
      await page.waitForSelector('[data-test=enable-source-own-list-28]');
      const servingManifest = (): { disabled?: string[] } =>
        JSON.parse(fs.readFileSync(path.join(dataDir, 'builds', busy.holder.current!.buildId, 'manifest.json'), 'utf8'));
      await until(
        () => busy.holder.current!.buildId !== first && (servingManifest().disabled ?? []).includes('own-list-28'),
        30_000,
        'a build without own-list-28',
      );
      await page.click('nav a[data-route=overview]');
      await page.click('nav a[data-route=data]');
      await page.waitForSelector('[data-test=build-changes] h3');
      // Its 29 adjacent /24s are one range lost: 7 424 addresses.
      assert.match((await page.textContent('[data-test=build-changes] h3'))!, /^Against \d{8}-\d+: 1 range changed$/);
      assert.match((await page.textContent('[data-test=build-changes] tbody tr'))!, /^hosting1010\D?7\D?424$/);
      await page.click('[data-test=build-changes] summary');
      assert.match(
        (await page.textContent('[data-test=build-changes] details tbody tr'))!,
        /^hosting92\.28\.0\.0 – 92\.28\.28\.255\{"confidence":"medium".*\}not in it$/,
      );
      await page.locator('[data-test=build-changes]').screenshot({ path: path.join(ARTIFACTS, 'data-changes.png') });
      await page.click('[data-test=enable-source-own-list-28]');
      await page.waitForSelector('text=own-list-28 enabled');
      assert.deepEqual(errors, []);
      await page.close();
    } finally {
      await busy.close();
    }
  });

  test('operator tokens: one made with its secret shown once, then revoked after a confirmation; the settings page shows each value and where it came from', async () => {
    const { page, errors } = await tab();
    await signIn(page, write);
    await page.click('nav a[data-route=operators]');
    await page.waitForSelector('table[data-test=tokens]');
    await page.fill('[data-test=token-name]', 'night shift');
    await page.selectOption('[data-test=token-scope]', 'admin.read');
    await page.click('form:has([data-test=token-name]) button[type=submit]');
    const secret = (await (await page.waitForSelector('[data-test=new-token]')).textContent())!;
    assert.match(secret, /^iat_/);
    await page.waitForSelector('table[data-test=tokens] td:has-text("night shift")');
    // The new token works until it is revoked, and nothing changes before the confirmation.
    assert.equal((await get(svc.adminPort, '/admin/v1/organizations', { Authorization: `Bearer ${secret}` })).status, 200);
    await page.click('[data-test="revoke-token-night shift"]');
    await page.waitForSelector('[data-test=confirm-revoke-token]');
    assert.equal((await get(svc.adminPort, '/admin/v1/organizations', { Authorization: `Bearer ${secret}` })).status, 200);
    await shot(page, 'operators');
    await page.click('[data-test=confirm-revoke-token]');
    await page.waitForSelector('tr:has-text("night shift") td:has-text("revoked")');
    assert.equal((await get(svc.adminPort, '/admin/v1/organizations', { Authorization: `Bearer ${secret}` })).status, 401);
    // A name spelt with a Cyrillic а beside Latin letters asks first; a lifetime makes one that ends.
    await page.fill('[data-test=token-name]', '\u0430dmin');
    await page.selectOption('[data-test=token-lifetime]', '30');
    await page.click('form:has([data-test=token-name]) button[type=submit]');
    const warning = (await (await page.waitForSelector('[data-test=look-alike]')).textContent())!;
    assert.match(warning, /mixes Latin and Cyrillic letters|looks like the token name/);
    assert.ok(
      !(await get(svc.adminPort, '/admin/v1/tokens', { Authorization: `Bearer ${write}` })).text.includes('\u0430dmin'),
      'nothing made before the confirmation',
    );
    await page.click('[data-test=confirm-look-alike]');
    await page.waitForSelector('tr:has-text("\u0430dmin") td:has-text("live, ends")');
    await page.click('nav a[data-route=settings]');
    const serving = await page.waitForSelector('table[data-test=settings-Serving]');
    const text = (await serving.textContent())!;
    assert.match(text, /KEEP_ALIVE_TIMEOUT_S75default/, 'a default shown as such');
    assert.match(text, /ADMIN_PORT0environment/, 'a setting from the environment');
    assert.match((await page.textContent('table[data-test=credentials]'))!, /AWS_SECRET_ACCESS_KEY(not set|set)/);
    await shot(page, 'settings');
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('a read-only token sees no write control, and a write forced from its page is refused', async () => {
    const { page } = await tab();
    await signIn(page, read);
    await page.waitForSelector('[data-test=who]');
    assert.match((await page.textContent('[data-test=who]'))!, /support · read only/);
    await page.click('nav a[data-route=orgs]');
    await page.waitForSelector('table[data-test=orgs] a');
    assert.equal(await page.locator('[data-test=create-org]').count(), 0);
    await page.click('table[data-test=orgs] a >> nth=0');
    await page.waitForSelector('[data-test=keys]');
    for (const control of ['create-key', 'grant-licence', 'change-plan', 'change-limit', 'delete-org'])
      assert.equal(await page.locator(`[data-test=${control}]`).count(), 0, control);
    assert.equal(await page.locator('main button:has-text("Revoke"), main button:has-text("Rotate"), main button:has-text("End")').count(), 0);
    await page.click('nav a[data-route=data]');
    await page.waitForSelector('table[data-test=builds]');
    assert.equal(await page.locator('table[data-test=builds] button:has-text("Serve")').count(), 0);
    assert.equal(await page.locator('[data-test=build-now], [data-test=refresh-sources]').count(), 0);
    await page.click('nav a[data-route=operators]');
    await page.waitForSelector('table[data-test=tokens]');
    assert.equal(await page.locator('[data-test=token-name], table[data-test=tokens] button').count(), 0, 'no token made or revoked from here');
    // The page's own fetch, with the token it holds: the API refuses whatever the page draws.
    const forced = await page.evaluate(async () => {
      const token = sessionStorage.getItem('ipsift.operator-token');
      const r = await fetch('/admin/v1/organizations', {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'Nope', plan: 'free' }),
      });
      return { status: r.status, body: await r.json() };
    });
    assert.equal(forced.status, 403);
    assert.equal(forced.body.rc, 'FORBIDDEN');
    await page.close();
  });
});
