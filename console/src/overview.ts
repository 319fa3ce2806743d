// The first page: a banner when sources are in trouble, the serving build and its age,
// readiness of every front-end thread, the HTTP server and runtime, the process (memory, CPU,
// files, batch pool, event loops) and the last hour of traffic, read again every period.

import { lineChart } from './chart.js';
import type { Page } from './context.js';
import { ago, bytes, count, duration, facts, fill, h, section, table, when } from './dom.js';
import { counts, lastUsed, type KeyUse } from './organisations.js';

/** A point of GET /admin/v1/overview (TrafficSample in the OpenAPI document; the console is compiled apart from the server, so it states the wire shape itself). */
interface Sample {
  at: string;
  requests_per_s: number;
  client_errors_per_s: number;
  rate_limited_per_s: number;
  server_errors_per_s: number;
  lookup_p50_ms: number | null;
  lookup_p99_ms: number | null;
  batch_p99_ms: number | null;
}

const time = (iso: string): string => iso.slice(11, 16);

/** States of a source an operator must hear about first (source-state.ts SourceHealth). */
const TROUBLE: Record<string, string> = {
  failed: 'unreachable',
  refused: 'refused',
  stale: 'stale',
  expired: 'expired (their claims no longer count)',
};

/** A problem the overview names (GET /admin/v1/overview's health). */
interface Problem {
  kind: string;
  message: string;
  see: string;
}

const PAGES: Record<string, string> = { '#/data': 'See Data', '#/overview': 'See below' };

/**
 * The banner at the top: what the server says is wrong (readiness, an old build, accounting
 * answered from memory, a replica behind), then sources in trouble, a line each with a link
 * to the detail; nothing when all is well.
 */
function healthBanner(problems: readonly Problem[], sources: readonly { name: string; state: string }[]): HTMLElement | string {
  const parts = Object.entries(TROUBLE).flatMap(([state, words]) => {
    const names = sources.filter((x) => x.state === state).map((x) => x.name);
    return names.length ? [`${names.length} ${words}: ${names.slice(0, 5).join(', ')}${names.length > 5 ? ', …' : ''}`] : [];
  });
  const lines = [
    ...problems.map((p) => h('li', { 'data-kind': p.kind }, `${p.message} `, h('a', { href: p.see }, PAGES[p.see] ?? 'See more'))),
    ...(parts.length ? [h('li', { 'data-kind': 'sources' }, `Sources: ${parts.join('; ')}. `, h('a', { href: '#/data' }, 'See Data'))] : []),
  ];
  if (lines.length === 0) return '';
  return h('div', { class: 'banner bad', role: 'alert', 'data-test': 'health-banner' }, h('ul', {}, ...lines));
}

/**
 * Who is refused: the organisations and keys this server turned away most over the window
 * (429s, then other 4xx), with each key's last use.
 */
function refusedSection(
  a: { organizations: { id: string; name: string | null; requests: number; limited: number; refused: number }[]; keys: KeyUse[] },
  words: string,
): HTMLElement {
  const orgLink = (id: string, name: string | null): HTMLElement => h('a', { href: `#/orgs/${id}` }, name ?? id);
  return section(
    `Who is refused, the last ${words}`,
    a.organizations.length === 0
      ? h('p', { class: 'hint' }, 'No request with a key in this window.')
      : h(
          'div',
          {},
          table(
            ['Organisation', 'Requests / 429 / other 4xx'],
            a.organizations.map((o) => [orgLink(o.id, o.name), counts(o)]),
            { 'data-test': 'refused-orgs' },
          ),
          table(
            ['Key', 'Organisation', 'Requests / 429 / other 4xx', 'Last used'],
            a.keys.map((k) => [k.name ?? k.id, orgLink(k.org_id, k.org_name), counts(k), lastUsed(k)]),
            { 'data-test': 'refused-keys' },
          ),
        ),
    h('p', { class: 'hint' }, 'Most refused first, then by requests; counted by this server in ten-minute spans, kept across restarts.'),
  );
}

/** The process part of GET /admin/v1/overview, as the wire has it. */
interface Process {
  rss_bytes: number;
  heap_used_bytes: number;
  external_bytes: number;
  cpu_seconds: number;
  cpu_cores: number | null;
  open_fds: number | null;
  batch: { workers: number; running: number; queued: number; utilization: number };
  threads: { thread: number; loop_delay_ms: { p50: number; p99: number; max: number } }[];
}

function processSection(p: Process): HTMLElement {
  return section(
    'The process',
    facts([
      ['CPU', p.cpu_cores === null ? `${duration(p.cpu_seconds)} used so far` : `${p.cpu_cores} cores (${duration(p.cpu_seconds)} used so far)`],
      ['Memory', `${bytes(p.rss_bytes)} resident; JavaScript heap ${bytes(p.heap_used_bytes)}, outside it ${bytes(p.external_bytes)} (the index among it)`],
      ['Open files', p.open_fds === null ? '—' : count(p.open_fds)],
      [
        'Batch workers',
        h(
          'span',
          { 'data-test': 'batch-pool' },
          `${p.batch.running} of ${p.batch.workers} busy, ${p.batch.queued} batches waiting; busy ${Math.round(p.batch.utilization * 100)} % of the time since start`,
        ),
      ],
    ]),
  );
}

/** The route families the server times, as the page says them. */
const ROUTE_NAMES: Record<string, string> = {
  lookup: 'GET /{ip}, /myip',
  batch: 'POST /batch',
  account: 'account and keys',
  database: 'database catalogue',
  files: 'file downloads',
};

/** The traffic windows offered, as the API names them and as the page says them. */
const WINDOWS: [string, string][] = [
  ['1h', 'hour'],
  ['6h', '6 hours'],
  ['24h', '24 hours'],
];

export const overview: Page = (ctx, root) => {
  const body = h('div');
  root.append(h('h1', {}, 'Overview'), body);
  let shown = '1h';
  const windowButtons = (): HTMLElement =>
    h(
      'div',
      { class: 'toolbar', role: 'group', 'aria-label': 'Traffic window', 'data-test': 'traffic-window' },
      ...WINDOWS.map(([w, words]) =>
        h(
          'button',
          {
            'aria-pressed': w === shown ? 'true' : 'false',
            'data-window': w,
            onclick: () => {
              shown = w;
              run();
            },
          },
          `Last ${words}`,
        ),
      ),
    );
  const draw = async (): Promise<void> => {
    const [o, activity] = await Promise.all([ctx.api.get(`/admin/v1/overview?window=${shown}`), ctx.api.get(`/admin/v1/activity?window=${shown}`)]);
    const sources: { name: string; state: string }[] = (await ctx.api.get('/admin/v1/sources')).sources;
    const samples: Sample[] = o.traffic.samples;
    const labels = samples.map((x) => time(x.at));
    const last = samples[samples.length - 1];
    fill(
      body,
      healthBanner(o.health, sources),
      facts([
        [
          'Serving build',
          o.build
            ? h('span', { 'data-test': 'serving-build' }, o.build.id)
            : o.lookups_without_build === 503
              ? "none yet: lookups answer 503 until the sources' first fetch builds"
              : 'none: lookups answer 500 until a build serves',
        ],
        ['Loaded', o.build ? `${duration(o.build.age_s)} ago` : '—'],
        ['Ready', h('span', { class: o.ready ? 'good' : 'bad' }, o.ready ? 'yes' : o.draining ? 'no: shutting down' : 'no')],
        ['HTTP server', o.http_server],
        ['Runtime', o.runtime],
        ['Version', o.version],
        ['Up since', `${when(o.started_at, true)} (${ago(o.started_at)})`],
        ['Last published', o.last_published_at ? ago(o.last_published_at) : 'never'],
        ['Requests now', last ? `${last.requests_per_s} /s` : '—'],
      ]),
      section(
        `Traffic, the last ${WINDOWS.find(([w]) => w === o.traffic.window)?.[1] ?? 'hour'}`,
        windowButtons(),
        lineChart('requests per second', 'req/s', labels, [
          { name: 'all requests', cls: 's1', values: samples.map((x) => x.requests_per_s) },
          { name: '429 rate limited', cls: 's2', values: samples.map((x) => x.rate_limited_per_s) },
          { name: '4xx other', cls: 's4', values: samples.map((x) => x.client_errors_per_s) },
          { name: '5xx', cls: 's3', values: samples.map((x) => x.server_errors_per_s) },
        ]),
        lineChart('lookup latency', 'ms', labels, [
          { name: 'lookup p50', cls: 's1', values: samples.map((x) => x.lookup_p50_ms) },
          { name: 'lookup p99', cls: 's2', values: samples.map((x) => x.lookup_p99_ms) },
          { name: 'batch p99', cls: 's4', values: samples.map((x) => x.batch_p99_ms) },
        ]),
        h(
          'p',
          { class: 'hint' },
          `One point every ${duration(o.traffic.period_s)}, from the counters the server keeps for /metrics; the last day is kept across restarts.`,
        ),
      ),
      section(
        'Traffic by route',
        table(
          ['Route', 'Requests', 'Per second', 'p50', 'p99'],
          (o.routes as { family: string; requests: number; per_s: number; p50_ms: number | null; p99_ms: number | null }[]).map((r) => [
            ROUTE_NAMES[r.family] ?? r.family,
            count(r.requests),
            String(r.per_s),
            r.p50_ms === null ? '—' : `${r.p50_ms} ms`,
            r.p99_ms === null ? '—' : `${r.p99_ms} ms`,
          ]),
          { 'data-test': 'routes' },
        ),
        h('p', { class: 'hint' }, 'Over the window shown, or since this server started where it is younger; the busiest first.'),
      ),
      refusedSection(activity, WINDOWS.find(([w]) => w === shown)?.[1] ?? 'hour'),
      processSection(o.process),
      section(
        'Front-end threads',
        table(
          ['Thread', 'Listening', 'Serving the build', 'Event-loop delay p50 / p99 / max'],
          o.threads.map((t: { thread: number; listening: boolean; serving: boolean }) => {
            const d = (o.process as Process).threads.find((x) => x.thread === t.thread)?.loop_delay_ms;
            return [
              String(t.thread),
              t.listening ? 'yes' : 'no',
              h('span', { class: t.serving ? 'good' : 'bad' }, t.serving ? 'yes' : 'no'),
              d ? `${d.p50} / ${d.p99} / ${d.max} ms` : '—',
            ];
          }),
          { 'data-test': 'threads' },
        ),
      ),
    );
  };
  const run = (): void => void draw().catch((e: Error) => ctx.say(e.message));
  run();
  const timer = setInterval(run, 10_000);
  return () => clearInterval(timer);
};
