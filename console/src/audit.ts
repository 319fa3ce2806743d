// The audit log, newest first: who changed which organisation, licence, key or operator
// token, when and from where; filtered by organisation and by action, paged back in time.

import { attempt, type Page } from './context.js';
import { append, fill, h, table, when } from './dom.js';

/** An entry of GET /admin/v1/audit (AuditEntry in the OpenAPI document), as the wire has it. */
interface Entry {
  id: number;
  at: string;
  actor: string;
  source: string;
  action: string;
  org_id: string | null;
  target: string | null;
  detail: unknown;
}

export const audit: Page = (ctx, root, [orgParam]) => {
  const org = h('input', { 'aria-label': 'Organisation id', placeholder: 'organisation id (all when empty)', value: orgParam ?? '' });
  const action = h('input', { 'aria-label': 'Action', placeholder: 'action, e.g. key.create' });
  const body = h('div');
  const more = h('div');
  let entries: Entry[] = [];
  const draw = (): void => {
    const a = action.value.trim();
    fill(
      body,
      table(
        ['When', 'Action', 'By', 'From', 'Organisation', 'Subject', 'Detail'],
        entries
          .filter((e) => a === '' || e.action.includes(a))
          .map((e) => [
            when(e.at, true),
            e.action,
            e.actor,
            e.source,
            e.org_id ? h('a', { href: `#/orgs/${e.org_id}` }, e.org_id.slice(0, 8)) : '—',
            e.target ?? '—',
            h('code', {}, JSON.stringify(e.detail)),
          ]),
        { class: 'wide', 'data-test': 'audit' },
      ),
    );
  };
  const load = async (before: number | null): Promise<void> => {
    const q = new URLSearchParams({ limit: '100' });
    if (org.value.trim()) q.set('org_id', org.value.trim());
    if (before !== null) q.set('before', String(before));
    const page: Entry[] = (await ctx.api.get(`/admin/v1/audit?${q}`)).entries;
    entries = before === null ? page : [...entries, ...page];
    draw();
    fill(more, page.length === 100 ? h('button', { onclick: () => void attempt(ctx, () => load(entries[entries.length - 1].id)) }, 'Older') : null);
  };
  const f = h('form', { class: 'inline' }, org, action, h('button', { type: 'submit' }, 'Filter'));
  f.addEventListener('submit', (e) => {
    e.preventDefault();
    void attempt(ctx, () => load(null));
  });
  action.addEventListener('input', draw);
  root.append(h('h1', {}, 'Audit log'), f, body, more);
  append(root, [h('p', { class: 'hint' }, 'Secrets never appear here: a key is named by its id and prefix.')]);
  void attempt(ctx, () => load(null));
};
