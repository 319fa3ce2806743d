// Builds (the serving one marked; another made serving after a confirmation), the report of
// the build looked at (feeds, ranges per category, exports, stage timings), the imported
// feeds and the configured sources with their age and state.

import { seg } from './api.js';
import { browsable } from './browse.js';
import { attempt, type Context, type Page } from './context.js';
import { ago, bytes, count, duration, fill, h, section, table, when } from './dom.js';

interface Build {
  id: string;
  current: boolean;
  created: string;
  bytes: number;
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
  if (look) fill(reportEl, report(await ctx.api.get(`/admin/v1/builds/${seg(look)}`)));
  else fill(reportEl, h('p', {}, 'No build yet: import feeds and run ipsift build.'));
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
  root.append(section('Builds', builds), section('Build report', reportEl), section('Feeds', feeds), section('Sources', sources));
  void attempt(ctx, async () => {
    await drawBuilds(ctx, builds, reportEl, null);
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
    const s = await ctx.api.get('/admin/v1/sources');
    // Trouble first: failed and refused sources, then stale and expired ones, then the rest.
    const trouble = (x: any): boolean => x.state !== 'ok';
    fill(
      sources,
      s.sources.length
        ? browsable<any>(
            s.sources,
            [
              { title: 'Source', cell: (x) => x.name, sort: (x) => x.name },
              { title: 'State', cell: (x) => h('span', { class: x.state === 'ok' ? 'good' : 'bad' }, x.state), sort: (x) => x.state },
              { title: 'Entries', cell: (x) => count(x.entries), sort: (x) => x.entries },
              { title: 'Good copy', cell: (x) => (x.age_s === null ? 'none' : `${duration(x.age_s)} old`), sort: (x) => x.age_s ?? Infinity },
              {
                title: 'Content unchanged',
                cell: (x) =>
                  x.content_age_s === null ? '—' : `${duration(x.content_age_s)}${x.max_age_s === null ? '' : ` of ${duration(x.max_age_s)} allowed`}`,
                sort: (x) => x.content_age_s ?? Infinity,
              },
              { title: 'Last tried', cell: (x) => (x.fetched_at ? ago(x.fetched_at) : 'never'), sort: (x) => x.fetched_at ?? '' },
              { title: 'Next fetch', cell: (x) => when(x.next_at), sort: (x) => x.next_at ?? '' },
              { title: 'Why', cell: (x) => x.reason ?? x.freshness_reason ?? '' },
              // One source fetched now, due or not (audited); a build follows if it changed.
              ...(ctx.canWrite
                ? [
                    {
                      title: '',
                      cell: (x: any) =>
                        h(
                          'button',
                          {
                            'data-test': `refresh-source-${x.name}`,
                            onclick: () =>
                              void attempt(ctx, async () => {
                                const r = await ctx.api.post(`/admin/v1/sources/${seg(x.name)}/refresh`);
                                ctx.say(r.message, 'ok');
                              }),
                          },
                          'Refresh',
                        ),
                    },
                  ]
                : []),
            ],
            { test: 'sources', text: (x) => `${x.name} ${x.state} ${x.url ?? ''} ${x.reason ?? ''}`, first: trouble },
          )
        : h('p', {}, 'No public source configured (SOURCES=public turns the registry on).'),
    );
  });
};
