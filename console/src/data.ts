// The configured sources (trouble first; each refreshed, disabled or enabled), the builds (the
// serving one marked; another made serving after a confirmation), the report of the build
// looked at (feeds, ranges per category, exports, stage timings) and what it changed against
// the build before it, this server's last warnings and errors, and the imported feeds.

import { seg } from './api.js';
import { browsable } from './browse.js';
import { attempt, type Context, type Page } from './context.js';
import { ago, bytes, count, duration, fill, h, section, table, when } from './dom.js';

interface Build {
  id: string;
  current: boolean;
  created: string;
  bytes: number;
  compared: boolean;
}

function report(m: any): HTMLElement {
  const ranges = (fam: 'v4' | 'v6'): string =>
    Object.entries(m.ranges[fam] as Record<string, number>)
      .map(([c, n]) => `${c} ${count(n)}`)
      .join(', ') || 'none';
  return h(
    'div',
    { 'data-test': 'build-report' },
    h('p', {}, `Build ${m.id}, made ${when(m.created, true)} (${ago(m.created)}); ${m.made_serving ? 'made serving when built' : 'built without serving'}.`),
    table(
      ['Family', 'Ranges per category'],
      [
        ['IPv4', ranges('v4')],
        ['IPv6', ranges('v6')],
      ],
    ),
    table(
      ['Feed', 'Size', 'SHA-256'],
      m.feeds.map((f: any) => [f.name, bytes(f.bytes), h('code', {}, f.sha256.slice(0, 16) + '…')]),
    ),
    table(
      ['Database', 'Entries', 'Files'],
      Object.entries(m.exports as Record<string, any>).map(([id, e]) => [
        id,
        count(e.entries),
        Object.entries(e.bytes as Record<string, number>)
          .map(([f, b]) => `${f} ${bytes(b)}`)
          .join(', '),
      ]),
    ),
    table(
      ['Stage', 'Time'],
      Object.entries(m.timings_ms as Record<string, number>).map(([stage, ms]) => [stage, `${count(Math.round(ms))} ms`]),
    ),
    m.unknown_providers?.length
      ? h(
          'details',
          {},
          h('summary', {}, `${m.unknown_providers.length} provider names the registry does not know`),
          h('p', { class: 'hint' }, m.unknown_providers.join(', ')),
        )
      : null,
  );
}

async function drawBuilds(ctx: Context, el: HTMLElement, reportEl: HTMLElement, shown: string | null): Promise<void> {
  const { builds } = (await ctx.api.get('/admin/v1/builds')) as { builds: Build[] };
  const look = shown ?? builds.find((b) => b.current)?.id ?? builds[0]?.id ?? null;
  const confirmArea = h('div', { class: 'confirm-area' });
  const serve = (b: Build): void =>
    fill(
      confirmArea,
      h(
        'div',
        { class: 'confirm', role: 'dialog' },
        h('p', {}, `Serve build ${b.id}? Every front-end thread switches to it; lookups answer from it from then on.`),
        h(
          'button',
          {
            class: 'danger',
            'data-test': 'confirm-serve',
            onclick: () =>
              void attempt(ctx, async () => {
                const r = await ctx.api.post(`/admin/v1/builds/${seg(b.id)}/serve`);
                ctx.say(r.message, 'ok');
                await drawBuilds(ctx, el, reportEl, b.id);
              }),
          },
          `Serve ${b.id}`,
        ),
        h('button', { onclick: () => fill(confirmArea) }, 'Cancel'),
      ),
    );
  fill(
    el,
    table(
      ['Build', 'Made', 'Index', '', ''],
      builds.map((b) => [
        h('span', { class: b.current ? 'serving' : '' }, b.id, b.current ? ' (serving)' : ''),
        ago(b.created),
        bytes(b.bytes),
        h('button', { onclick: () => void attempt(ctx, () => drawBuilds(ctx, el, reportEl, b.id)) }, 'Report'),
        ctx.canWrite && !b.current ? h('button', { 'data-test': `serve-${b.id}`, onclick: () => serve(b) }, 'Serve…') : '',
      ]),
      { 'data-test': 'builds' },
    ),
    confirmArea,
  );
  const looked = builds.find((b) => b.id === look);
  if (looked) fill(reportEl, await changes(ctx, looked), report(await ctx.api.get(`/admin/v1/builds/${seg(looked.id)}`)));
  else fill(reportEl, h('p', {}, 'No build yet: import feeds and run ipsift build.'));
}

/** What a build changed against the build before it, per category, and the first ranges. */
async function changes(ctx: Context, b: Build): Promise<HTMLElement> {
  if (!b.compared) return h('p', { 'data-test': 'build-changes' }, 'No comparison: the first build here, or the one before it was gone when it was made.');
  const c = await ctx.api.get(`/admin/v1/builds/${seg(b.id)}/changes`);
  const side = (v: Record<string, unknown> | null): string => (v === null ? 'not in it' : JSON.stringify(v));
  const rows = Object.entries(c.categories as Record<string, any>).filter(([, n]) => n.ranges > 0);
  return h(
    'div',
    { 'data-test': 'build-changes' },
    h('h3', {}, `Against ${c.from}: ${count(c.ranges)} range${c.ranges === 1 ? '' : 's'} changed`),
    rows.length
      ? table(
          ['Category', 'Ranges', 'Gained', 'Lost', 'Other detail', 'IPv4 addresses'],
          rows.map(([cat, n]) => [cat, count(n.ranges), count(n.gained), count(n.lost), count(n.changed), count(Number(n.ipv4_addresses))]),
        )
      : h('p', {}, 'Every address answers as it did.'),
    c.examples.length
      ? h(
          'details',
          {},
          h(
            'summary',
            {},
            c.more ? `The first ${c.examples.length} changed ranges (${count(c.more)} more)` : `The changed range${c.examples.length === 1 ? '' : 's'}`,
          ),
          table(
            ['Category', 'Range', 'Before', 'After'],
            c.examples.map((e: any) => [e.category, e.first === e.last ? e.first : `${e.first} – ${e.last}`, side(e.before), side(e.after)]),
          ),
        )
      : null,
  );
}

/** This server's last warnings and errors, newest first. */
async function drawLog(ctx: Context, el: HTMLElement): Promise<void> {
  const { lines } = await ctx.api.get('/admin/v1/log');
  fill(
    el,
    lines.length
      ? browsable<any>(
          lines,
          [
            { title: 'When', cell: (x) => ago(x.time), sort: (x) => x.time },
            { title: 'Level', cell: (x) => h('span', { class: x.level === 'error' ? 'bad' : '' }, x.level), sort: (x) => x.level },
            { title: 'Message', cell: (x) => x.msg },
            { title: 'Fields', cell: (x) => h('code', {}, JSON.stringify(x.fields)) },
          ],
          { test: 'log-tail', text: (x) => `${x.level} ${x.msg} ${JSON.stringify(x.fields)}` },
        )
      : h('p', {}, 'No warning or error since this server started.'),
  );
}

/**
 * A button that sets work going (POST, admin.write) after a confirmation in `area`; the
 * answer's message is shown, and `after` redraws what it changes.
 */
function actionButton(ctx: Context, area: HTMLElement, test: string, label: string, question: string, path: string, after: () => Promise<void>): HTMLElement {
  const ask = (): void =>
    fill(
      area,
      h(
        'div',
        { class: 'confirm', role: 'dialog' },
        h('p', {}, question),
        h(
          'button',
          {
            'data-test': `confirm-${test}`,
            onclick: () =>
              void attempt(ctx, async () => {
                fill(area);
                const r = await ctx.api.post(path);
                ctx.say(r.message, 'ok');
                await after();
              }),
          },
          label,
        ),
        h('button', { onclick: () => fill(area) }, 'Cancel'),
      ),
    );
  return h('button', { 'data-test': test, onclick: ask }, label);
}

export const data: Page = (ctx, root) => {
  const builds = h('div');
  const reportEl = h('div');
  const feeds = h('div');
  const sources = h('div');
  const logTail = h('div');
  const sourcesAsked = h('div', { class: 'confirm-area' });
  const asked = h('div', { class: 'confirm-area' });
  const redrawBuilds = (): Promise<void> => drawBuilds(ctx, builds, reportEl, null);
  const actions = ctx.canWrite
    ? h(
        'div',
        { class: 'actions' },
        actionButton(
          ctx,
          asked,
          'build-now',
          'Build now',
          'Build now from the imported feeds? The new build serves and is published when done, as the daily run does.',
          '/admin/v1/builds',
          redrawBuilds,
        ),
        actionButton(
          ctx,
          asked,
          'refresh-sources',
          'Refresh sources',
          'Fetch every configured source now, due or not? A build follows when any changed.',
          '/admin/v1/sources/refresh',
          async () => {},
        ),
        asked,
      )
    : null;
  root.append(h('h1', {}, 'Data'));
  if (actions) root.append(actions);
  root.append(
    section('Sources', sourcesAsked, sources),
    section('Builds', builds),
    section('Build report', reportEl),
    section('Warnings and errors', logTail),
    section('Feeds', feeds),
  );
  const drawSources = async (): Promise<void> => {
    const s = await ctx.api.get('/admin/v1/sources');
    // Trouble first: failed and refused sources, then stale, expired and disabled ones, then the rest.
    const trouble = (x: any): boolean => x.state !== 'ok';
    const post = (x: any, verb: string): Promise<void> =>
      attempt(ctx, async () => {
        const r = await ctx.api.post(`/admin/v1/sources/${seg(x.name)}/${verb}`);
        ctx.say(r.message, 'ok');
        if (verb !== 'refresh') await drawSources();
      });
    fill(
      sources,
      s.sources.length
        ? browsable<any>(
            s.sources,
            [
              { title: 'Source', cell: (x) => h('div', {}, x.name, h('div', { class: 'hint' }, x.url ?? '')), sort: (x) => x.name },
              {
                title: 'State',
                cell: (x) =>
                  h(
                    'span',
                    { class: x.state === 'ok' ? 'good' : 'bad', title: x.disabled ? `by ${x.disabled.by}, ${when(x.disabled.at, true)}` : '' },
                    x.state,
                  ),
                sort: (x) => x.state,
              },
              { title: 'Entries', cell: (x) => count(x.entries), sort: (x) => x.entries },
              { title: 'Good copy', cell: (x) => (x.age_s === null ? 'none' : `${duration(x.age_s)} old`), sort: (x) => x.age_s ?? Infinity },
              {
                title: 'Content unchanged',
                cell: (x) =>
                  x.content_age_s === null ? '—' : `${duration(x.content_age_s)}${x.max_age_s === null ? '' : ` of ${duration(x.max_age_s)} allowed`}`,
                sort: (x) => x.content_age_s ?? Infinity,
              },
              { title: 'Last tried', cell: (x) => (x.fetched_at ? ago(x.fetched_at) : 'never'), sort: (x) => x.fetched_at ?? '' },
              { title: 'Next fetch', cell: (x) => (x.disabled ? 'disabled' : when(x.next_at)), sort: (x) => x.next_at ?? '' },
              {
                title: 'Why',
                cell: (x) => (x.disabled ? `disabled by ${x.disabled.by} ${ago(x.disabled.at)}` : (x.reason ?? x.freshness_reason ?? '')),
              },
              // Per source, audited: fetched now (a build follows if it changed), or set aside
              // and taken back (a build without it, or with it again, follows).
              ...(ctx.canWrite
                ? [
                    {
                      title: '',
                      cell: (x: any) =>
                        h(
                          'span',
                          { class: 'row-actions' },
                          x.disabled ? null : h('button', { 'data-test': `refresh-source-${x.name}`, onclick: () => void post(x, 'refresh') }, 'Refresh'),
                          x.disabled
                            ? h('button', { 'data-test': `enable-source-${x.name}`, onclick: () => void post(x, 'enable') }, 'Enable')
                            : actionButton(
                                ctx,
                                sourcesAsked,
                                `disable-source-${x.name}`,
                                'Disable',
                                `Disable ${x.name}? It is no longer fetched, and a build without it follows; Enable takes it back.`,
                                `/admin/v1/sources/${seg(x.name)}/disable`,
                                drawSources,
                              ),
                        ),
                    },
                  ]
                : []),
            ],
            { test: 'sources', text: (x) => `${x.name} ${x.state} ${x.url ?? ''} ${x.reason ?? ''}`, first: trouble },
          )
        : h('p', {}, 'No public source configured (SOURCES=public turns the registry on).'),
    );
  };
  void attempt(ctx, async () => {
    await drawSources();
    await drawBuilds(ctx, builds, reportEl, null);
    await drawLog(ctx, logTail);
    const f = await ctx.api.get('/admin/v1/feeds');
    fill(
      feeds,
      f.feeds.length
        ? browsable<any>(
            f.feeds,
            [
              { title: 'Feed', cell: (x) => x.name, sort: (x) => x.name },
              { title: 'Evidence', cell: (x) => x.evidence, sort: (x) => x.evidence },
              { title: 'Priority', cell: (x) => String(x.priority), sort: (x) => x.priority },
              { title: 'Size', cell: (x) => bytes(x.bytes), sort: (x) => x.bytes },
              { title: 'Imported', cell: (x) => ago(x.imported_at), sort: (x) => x.imported_at },
              { title: 'From', cell: (x) => x.source ?? '—' },
            ],
            { test: 'feeds', text: (x) => `${x.name} ${x.evidence} ${x.source ?? ''}` },
          )
        : h('p', {}, 'No feed imported.'),
    );
  });
};
