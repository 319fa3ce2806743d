// Organisations: the list (paged by the API, searched by name or id among those loaded) and
// a form to create one; one organisation's plan, overage limit, keys (a new secret is shown
// once and is then gone), licences, this month's usage against quota and limit, and its
// download history.

import { seg } from './api.js';
import { usageBar } from './chart.js';
import { attempt, type Context, type Page } from './context.js';
import { ago, count, facts, fill, h, section, table, when } from './dom.js';

interface Org {
  id: string;
  name: string;
  plan: string;
  quota: number;
  hard_limit: number | null;
  created_at: string;
  deleted_at?: string | null;
}

const SCOPES = ['db.download', 'apikeys.manage'];

/** A key's line of GET /admin/v1/activity (the console is compiled apart: the wire shape, stated here). */
export interface KeyUse {
  id: string;
  name: string | null;
  org_id: string;
  org_name: string | null;
  requests: number;
  limited: number;
  refused: number;
  last_used_at: string | null;
  last_used_from: string | null;
}

/** When and from where a key was last used, as this server saw it. */
export const lastUsed = (u: KeyUse | undefined): HTMLElement | string =>
  u?.last_used_at ? h('span', { 'data-test': 'last-used' }, `${ago(u.last_used_at)} from ${u.last_used_from}`) : 'not in the last day';

export const counts = (u: { requests: number; limited: number; refused: number } | undefined): string =>
  u ? `${count(u.requests)} / ${count(u.limited)} / ${count(u.refused)}` : '0 / 0 / 0';

async function plans(ctx: Context): Promise<{ plans: { plan: string }[]; license_bases: string[] }> {
  return ctx.api.get('/admin/v1/plans');
}

export const organisations: Page = (ctx, root) => {
  const list = h('div');
  const more = h('div');
  const search = h('input', { type: 'search', placeholder: 'name or id', maxlength: 200, 'aria-label': 'Search organisations', 'data-test': 'org-search' });
  let loaded: Org[] = [];
  let next: string | null = null;
  const draw = (): void => {
    fill(
      list,
      table(
        ['Name', 'Plan', 'Quota', 'Overage limit', 'Created'],
        loaded.map((o) => [
          h('a', { href: `#/orgs/${o.id}` }, o.name),
          o.plan,
          count(o.quota),
          o.hard_limit === null ? 'none' : count(o.hard_limit),
          ago(o.created_at),
        ]),
        { 'data-test': 'orgs' },
      ),
    );
    fill(more, next ? h('button', { onclick: () => void attempt(ctx, () => load(false)) }, 'Load more') : null);
  };
  /** A page of the list, searched by the server (name or id); `fresh`: from the first page. */
  let asked = 0;
  const load = async (fresh: boolean): Promise<void> => {
    const q = new URLSearchParams({ limit: '100' });
    if (search.value.trim()) q.set('q', search.value.trim());
    if (!fresh && next) q.set('after', next);
    const mine = ++asked;
    const page = await ctx.api.get(`/admin/v1/organizations?${q}`);
    if (mine !== asked) return; // a later search has been asked for
    loaded = fresh ? page.organizations : [...loaded, ...page.organizations];
    next = page.next;
    draw();
  };
  let typing: ReturnType<typeof setTimeout> | undefined;
  search.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => void attempt(ctx, () => load(true)), 200);
  });
  root.append(h('h1', {}, 'Organisations'), h('div', { class: 'toolbar' }, search), list, more);
  if (ctx.canWrite) {
    const name = h('input', { name: 'name', required: true, maxlength: 200, 'aria-label': 'Name', placeholder: 'Name' });
    const plan = h('select', { name: 'plan', 'aria-label': 'Plan' });
    const create = form(
      'create-org',
      'Name and plan',
      [name, plan],
      'Create organisation',
      async () => {
        const org = await ctx.api.post('/admin/v1/organizations', { name: name.value, plan: plan.value });
        ctx.go(`#/orgs/${org.id}`);
      },
      ctx,
    );
    root.append(section('New organisation', create));
    void attempt(ctx, async () => fill(plan, ...(await plans(ctx)).plans.map((p) => h('option', { value: p.plan }, p.plan))));
  }
  void attempt(ctx, () => load(true));
  return () => clearTimeout(typing);
};

/**
 * Deleting the organisation, after its name is typed back: its keys are revoked and its
 * licences end at once; its usage, downloads and audit stay readable.
 */
function deletion(ctx: Context, org: Org, path: string): HTMLElement {
  const area = h('div', { class: 'confirm-area' });
  const ask = (): void => {
    const typed = h('input', { 'aria-label': 'Organisation name', placeholder: org.name, maxlength: 200, 'data-test': 'delete-org-name' });
    const confirm = h(
      'button',
      {
        'data-test': 'confirm-delete-org',
        disabled: true,
        onclick: () =>
          void attempt(ctx, async () => {
            const r = await ctx.api.del(path);
            ctx.go('#/orgs');
            ctx.say(`${org.name} deleted: ${count(r.keys_revoked)} keys revoked, ${count(r.licences_ended)} licences ended`, 'ok');
          }),
      },
      'Delete organisation',
    );
    typed.addEventListener('input', () => void (confirm.disabled = typed.value !== org.name));
    fill(
      area,
      h(
        'div',
        { class: 'confirm', role: 'dialog' },
        h(
          'p',
          {},
          `Its keys are revoked (servers refuse them within a second) and its licences end now; its usage, downloads and audit stay. Type ${org.name} to confirm.`,
        ),
        typed,
        confirm,
        h('button', { onclick: () => fill(area) }, 'Cancel'),
      ),
    );
    typed.focus();
  };
  return h('div', {}, h('button', { class: 'danger', 'data-test': 'delete-org', onclick: ask }, 'Delete organisation…'), area);
}

/** A form of inputs whose submit runs `action` with their values. */
function form(test: string, title: string, fields: HTMLElement[], label: string, action: () => Promise<void>, ctx: Context): HTMLFormElement {
  const f = h('form', { class: 'inline', 'data-test': test }, h('span', { class: 'label' }, title), ...fields, h('button', { type: 'submit' }, label));
  f.addEventListener('submit', (e) => {
    e.preventDefault();
    void attempt(ctx, action);
  });
  return f;
}

export const organisation: Page = (ctx, root, [id]) => {
  const head = h('div');
  const usage = h('div');
  const keys = h('div');
  const secret = h('div', { 'data-test': 'secret-area' });
  const licences = h('div');
  const downloads = h('div');
  const controls = h('div');
  root.append(
    head,
    controls,
    section('Usage this month', usage),
    section('Keys', secret, keys),
    section('Licences', licences),
    section('Downloads', downloads),
  );
  const path = `/admin/v1/organizations/${seg(id)}`;
  /** When the organisation was made (0 until read): the usage's pace counts from it. */
  let createdAtMs = 0;

  const drawUsage = async (): Promise<void> => {
    const u = await ctx.api.get(`${path}/usage`);
    // The pace is taken from when the organisation could first spend: the month's start, or
    // its creation when that came later (a day-old organisation is not judged by the month).
    const from = Math.max(Date.parse(u.window_start), createdAtMs);
    const elapsed = Math.min(1, Math.max(0, Date.now() - from) / (Date.parse(u.window_end) - from));
    fill(
      usage,
      usageBar(u.requests, u.quota, u.hard_limit, elapsed, Math.max(0, Date.now() - from)),
      h('p', { 'data-test': 'usage-requests' }, `${count(u.requests)} requests since ${when(new Date(from).toISOString())}`),
    );
  };
  const drawKeys = async (): Promise<void> => {
    const [{ apikeys, next }, activity] = await Promise.all([
      ctx.api.get(`${path}/keys?limit=200`),
      ctx.api.get(`/admin/v1/activity?window=24h&org_id=${seg(id)}`),
    ]);
    const use = new Map<string, KeyUse>(activity.keys.map((k: KeyUse) => [k.id, k]));
    fill(
      keys,
      table(
        ['Name', 'Prefix', 'Scopes', 'Allowed networks', 'Created', 'State', 'Last used', 'Last day: requests / 429 / other 4xx', ''],
        apikeys.map((k: any) => [
          k.name,
          h('code', {}, k.key_prefix),
          k.allowed_scopes.join(', ') || 'lookups only',
          k.allowed_cidrs.join(', ') || 'any',
          ago(k.created_at),
          k.revoked_at ? `revoked ${ago(k.revoked_at)}` : k.expires ? `expires ${when(k.expires)}` : 'live',
          lastUsed(use.get(k.id)),
          counts(use.get(k.id)),
          ctx.canWrite && !k.revoked_at
            ? h(
                'span',
                {},
                h(
                  'button',
                  {
                    'data-test': `rotate-${k.name}`,
                    onclick: () => void attempt(ctx, async () => showSecret(await ctx.api.post(`/admin/v1/keys/${seg(k.id)}/rotate`), 'rotated')),
                  },
                  'Rotate',
                ),
                h(
                  'button',
                  {
                    class: 'danger',
                    'data-test': `revoke-${k.name}`,
                    onclick: () =>
                      void attempt(ctx, async () => {
                        await ctx.api.del(`/admin/v1/keys/${seg(k.id)}`);
                        ctx.say(`key ${k.name} revoked: servers refuse it within a second`, 'ok');
                        await drawKeys();
                      }),
                  },
                  'Revoke',
                ),
              )
            : '',
        ]),
        { 'data-test': 'keys' },
      ),
      next ? h('p', { class: 'hint' }, 'The first 200 keys, oldest first (GET /admin/v1/organizations/{id}/keys pages the rest).') : null,
    );
  };
  const showSecret = async (k: { name: string; key: string }, what: string): Promise<void> => {
    fill(
      secret,
      h(
        'div',
        { class: 'secret', role: 'status' },
        h('p', {}, `Key ${k.name} ${what}. Copy its secret now: it is shown this once and never again.`),
        h('code', { 'data-test': 'new-secret' }, k.key),
        h('button', { onclick: () => fill(secret) }, 'Done'),
      ),
    );
    await drawKeys();
  };
  const drawLicences = async (): Promise<void> => {
    const { licenses } = await ctx.api.get(`${path}/licenses`);
    fill(
      licences,
      licenses.length
        ? table(
            ['Base', 'Type', 'Starts', 'Expires', 'Renews', ''],
            licenses.map((l: any) => [
              l.base,
              l.license_type,
              when(l.starts),
              when(l.expires),
              when(l.renews_at ?? null),
              ctx.canWrite
                ? h(
                    'button',
                    {
                      class: 'danger',
                      'data-test': `end-${l.base}`,
                      onclick: () =>
                        void attempt(ctx, async () => {
                          await ctx.api.del(`${path}/licenses/${seg(l.base)}`);
                          await drawLicences();
                        }),
                    },
                    'End',
                  )
                : '',
            ]),
            { 'data-test': 'licences' },
          )
        : h('p', { 'data-test': 'licences' }, 'No licence: this organisation downloads no database.'),
    );
  };

  void attempt(ctx, async () => {
    const org = await ctx.api.get(path);
    createdAtMs = Date.parse(org.created_at);
    fill(
      head,
      h('h1', {}, org.name),
      facts([
        ['Id', h('code', {}, org.id)],
        ['Account', String(org.account_id)],
        ['Plan', `${org.plan} (${org.tier})`],
        ['Quota', `${count(org.quota)} a month`],
        ['Overage limit', org.hard_limit === null ? 'none' : count(org.hard_limit)],
        ['Created', ago(org.created_at)],
        ['Audit', h('a', { href: `#/audit/${org.id}` }, 'changes to this organisation')],
      ]),
    );
    if (ctx.canWrite && !org.deleted_at) {
      const meta = await plans(ctx);
      const plan = h('select', { 'aria-label': 'Plan' }, ...meta.plans.map((p) => h('option', { value: p.plan, selected: p.plan === org.plan }, p.plan)));
      const limit = h('input', {
        'aria-label': 'Overage limit',
        placeholder: 'requests, none or default',
        value: org.hard_limit === null ? 'none' : String(org.hard_limit),
      });
      const keyName = h('input', { 'aria-label': 'Key name', placeholder: 'Key name', required: true, maxlength: 200 });
      const scopes = SCOPES.map((sc) => h('input', { type: 'checkbox', value: sc, 'aria-label': sc }));
      const base = h('select', { 'aria-label': 'Base' }, ...meta.license_bases.map((b) => h('option', { value: b }, b)));
      const type = h(
        'select',
        { 'aria-label': 'Licence type' },
        h('option', { value: 'subscription' }, 'subscription'),
        h('option', { value: 'evaluation' }, 'evaluation'),
      );
      const today = new Date().toISOString().slice(0, 10);
      const starts = h('input', { type: 'date', 'aria-label': 'Starts', value: today });
      const expires = h('input', { type: 'date', 'aria-label': 'Expires', value: `${Number(today.slice(0, 4)) + 1}${today.slice(4)}` });
      fill(
        controls,
        section(
          'Change',
          form(
            'change-plan',
            'Plan',
            [plan],
            'Set plan',
            async () => {
              await ctx.api.post(path, { plan: plan.value });
              ctx.go(`#/orgs/${id}`);
            },
            ctx,
          ),
          form(
            'change-limit',
            'Overage limit',
            [limit],
            'Set overage limit',
            async () => {
              const v = limit.value.trim();
              await ctx.api.post(path, { hard_limit: v === 'none' ? null : v === 'default' ? 'default' : Number(v) });
              ctx.go(`#/orgs/${id}`);
            },
            ctx,
          ),
          form(
            'create-key',
            'New key',
            [keyName, ...scopes.flatMap((c) => [h('label', {}, c, c.value)])],
            'Create key',
            async () => {
              const k = await ctx.api.post(`${path}/keys`, { name: keyName.value, allowed_scopes: scopes.filter((c) => c.checked).map((c) => c.value) });
              keyName.value = '';
              await showSecret(k, 'created');
            },
            ctx,
          ),
          form(
            'grant-licence',
            'Licence',
            [base, type, starts, expires],
            'Grant licence',
            async () => {
              await ctx.api.post(`${path}/licenses`, { base: base.value, license_type: type.value, starts: starts.value, expires: expires.value });
              await drawLicences();
            },
            ctx,
          ),
        ),
        section('Delete', deletion(ctx, org, path)),
      );
    }
    await Promise.all([drawUsage(), drawKeys(), drawLicences()]);
    const { downloads: list } = await ctx.api.get(`${path}/downloads?limit=50`);
    fill(
      downloads,
      list.length
        ? table(
            ['When', 'Database', 'Format', 'Outcome', 'Bytes', 'Key', 'From'],
            list.map((d: any) => [
              ago(d.created),
              d.dataset_id,
              d.format,
              `${d.outcome} (${d.http_status})`,
              count(d.bytes ?? 0),
              d.apikey_id ?? '—',
              d.client_ip ?? '—',
            ]),
          )
        : h('p', {}, 'No download yet.'),
    );
  });
  const timer = setInterval(() => void drawUsage().catch(() => {}), 5_000);
  return () => clearInterval(timer);
};
