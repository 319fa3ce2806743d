// Look up an address, or a pasted list of them: the serving build's answer as a caller on each
// plan sees it, and for one address the evidence behind it (which feed, which kind of
// evidence, which rule won), from the feeds as they are now.

import { seg } from './api.js';
import { attempt, type Context, type Page } from './context.js';
import { fill, h, section, table, when } from './dom.js';

/** At most this many addresses of a pasted list are looked up. */
const MAX_LIST = 100;

/** An answer's fields as short text: the flags that are true, and each category's detail. */
function summary(answer: Record<string, unknown>): string {
  const flags = Object.entries(answer)
    .filter(([k, v]) => k.startsWith('is_') && v === true)
    .map(([k]) => k.slice(3));
  const details = Object.entries(answer)
    .filter(([k, v]) => !k.startsWith('is_') && k !== 'ip' && typeof v === 'object' && v !== null && Object.keys(v).length > 0)
    .map(
      ([k, v]) =>
        `${k}: ${Object.entries(v as Record<string, unknown>)
          .map(([f, x]) => `${f}=${String(x)}`)
          .join(' ')}`,
    );
  return [flags.length ? flags.join(', ') : 'in no category', ...details].join(' · ');
}

/** A category's detail as `field: value` text (empty: the caller's plan shows the category, and the address is not in it). */
const detailText = (v: object): string =>
  Object.entries(v)
    .map(([f, x]) => `${f}: ${String(x)}`)
    .join(', ') || 'none';

/** One row per answer field, one column per caller: what each plan sees, side by side. */
function answersTable(doc: any): HTMLElement {
  const callers: [string, Record<string, unknown>][] = [
    [`keyless (${doc.keyless.tier})`, doc.keyless.answer],
    ...doc.plans.map((p: any): [string, Record<string, unknown>] => [`${p.plan} (${p.tier})`, p.answer]),
  ];
  const fields = Object.keys(callers[callers.length - 1][1]).filter((f) => f !== 'ip' && f !== 'as_of');
  const cell = (v: unknown): string | HTMLElement => {
    if (v === undefined) return h('span', { class: 'absent', title: 'not on this plan' }, '—');
    if (typeof v === 'object' && v !== null) return detailText(v);
    return h('span', { class: v === true ? 'yes' : '' }, String(v));
  };
  return h(
    'div',
    {},
    table(
      ['Field', ...callers.map(([who]) => who)],
      fields.map((f) => [h('code', {}, f), ...callers.map(([, a]) => cell(a[f]))]),
      { 'data-test': 'plan-answers' },
    ),
    h('p', { class: 'hint' }, '— : the field is not on that plan. none: the plan shows the category, and the address is not in it.'),
    doc.as_of ? h('p', { 'data-test': 'as-of' }, `As of ${doc.at}: build ${doc.build ?? 'unknown'}, which served from ${doc.as_of}, answered so.`) : null,
  );
}

function evidence(e: any): HTMLElement {
  const cats = Object.entries(e.categories as Record<string, any>);
  return h(
    'div',
    { 'data-test': 'explanation' },
    e.bogon ? h('p', {}, `${e.ip} is a special-purpose address: it answers in no category.`) : null,
    cats.length === 0 ? h('p', {}, `No feed covers ${e.ip}.`) : null,
    ...cats.map(([cat, c]) =>
      h(
        'div',
        { class: 'category' },
        h('h3', {}, `${cat}: ${c.answer ? 'yes' : 'no'}`),
        h('p', { class: 'rule' }, c.rule),
        table(
          ['Feed', 'Evidence', 'Priority', 'Network', 'Detail', 'Source'],
          c.claims.map((cl: any, i: number) => [
            h('span', { class: i === 0 ? 'won' : '' }, cl.feed, i === 0 ? ' (won)' : ''),
            cl.evidence,
            String(cl.priority),
            h('code', {}, cl.network),
            cl.detail === null ? 'says: not in the category' : detailText(cl.detail),
            cl.source?.url
              ? `${cl.source.url}${cl.source.fetched_at ? `, fetched ${when(cl.source.fetched_at)}` : ''}${
                  cl.source.changed_at ? `, content of ${when(cl.source.changed_at)} (by ${cl.source.dated_by})` : ', content undated'
                }`
              : 'imported file',
          ]),
        ),
      ),
    ),
    e.serving
      ? h(
          'p',
          { class: 'hint' },
          `The serving build ${e.serving.build} answers: ${summary(e.serving.answer)}. The evidence above is read from the feeds now; a later build may differ.`,
        )
      : null,
  );
}

async function explain(ctx: Context, ip: string, el: HTMLElement): Promise<void> {
  fill(el, h('p', {}, `Reading every feed for ${ip}…`));
  fill(el, evidence(await ctx.api.get(`/explain/${seg(ip)}`)));
}

export const lookup: Page = (ctx, root, [initial]) => {
  const input = h('textarea', {
    rows: 3,
    'aria-label': 'Addresses',
    placeholder: 'an address, or a list: one per line, or separated by spaces or commas',
    'data-test': 'lookup-input',
  });
  // An optional time: the answers as of then, from the timeline of answers.
  const at = h('input', {
    type: 'text',
    'aria-label': 'As of (optional)',
    placeholder: 'as of (optional): 2026-11-01T12:00:00Z',
    'data-test': 'lookup-at',
  }) as HTMLInputElement;
  const asOf = (): string => (at.value.trim() ? `?at=${encodeURIComponent(at.value.trim())}` : '');
  const out = h('div');
  const why = h('div');
  const go = (): Promise<void> =>
    attempt(ctx, async () => {
      const ips = [...new Set(input.value.split(/[\s,;]+/).filter((x) => x !== ''))];
      if (ips.length === 0) return;
      fill(why);
      if (ips.length === 1) {
        fill(
          out,
          answersTable(await ctx.api.get(`/admin/v1/answers/${seg(ips[0])}${asOf()}`)),
          h('button', { 'data-test': 'explain', onclick: () => void attempt(ctx, () => explain(ctx, ips[0], why)) }, `Why? The evidence for ${ips[0]}`),
        );
        return;
      }
      const rows: (string | HTMLElement)[][] = [];
      for (const ip of ips.slice(0, MAX_LIST)) {
        try {
          const doc = await ctx.api.get(`/admin/v1/answers/${seg(ip)}${asOf()}`);
          const best = doc.plans[doc.plans.length - 1];
          rows.push([h('a', { href: `#/lookup/${encodeURIComponent(ip)}` }, ip), best ? summary(best.answer) : summary(doc.keyless.answer)]);
        } catch (e) {
          rows.push([ip, h('span', { class: 'bad' }, (e as Error).message)]);
        }
      }
      fill(
        out,
        ips.length > MAX_LIST ? h('p', { class: 'hint' }, `The first ${MAX_LIST} of ${ips.length} addresses.`) : null,
        table(['Address', 'Answer on the widest plan'], rows, { 'data-test': 'list-answers' }),
      );
    });
  const f = h('form', { class: 'inline' }, input, at, h('button', { type: 'submit' }, 'Look up'));
  f.addEventListener('submit', (e) => {
    e.preventDefault();
    void go();
  });
  root.append(h('h1', {}, 'Look up'), f, section('Answers', out), section('Evidence', why));
  if (initial) {
    input.value = decodeURIComponent(initial);
    void go();
  }
};
