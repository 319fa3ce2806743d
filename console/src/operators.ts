// Operator tokens: who may use this console and the admin API. Listed without secrets; a new
// one's secret shown once; revoked at once after a confirmation. Changes need admin.write and
// are audited.

import { attempt, type Context, type Page } from './context.js';
import { ago, fill, h, table } from './dom.js';
import { seg } from './api.js';

/** An entry of GET /admin/v1/tokens (AdminToken in the OpenAPI document). */
interface Token {
  id: string;
  name: string;
  token_prefix: string;
  scopes: string[];
  revoked_at: string | null;
  created_at: string;
}

export const operators: Page = (ctx, root) => {
  const list = h('div');
  const shown = h('div');
  const confirmArea = h('div', { class: 'confirm-area' });
  const draw = async (): Promise<void> => {
    const { tokens } = (await ctx.api.get('/admin/v1/tokens')) as { tokens: Token[] };
    fill(
      list,
      table(
        ['Name', 'Prefix', 'Scopes', 'Created', 'State', ''],
        tokens.map((t) => [
          t.name,
          h('code', {}, t.token_prefix),
          t.scopes.join(', '),
          ago(t.created_at),
          t.revoked_at ? `revoked ${ago(t.revoked_at)}` : 'live',
          ctx.canWrite && !t.revoked_at
            ? h('button', { class: 'danger', 'data-test': `revoke-token-${t.name}`, onclick: () => confirmRevoke(t) }, 'Revoke')
            : '',
        ]),
        { 'data-test': 'tokens' },
      ),
    );
  };
  const confirmRevoke = (t: Token): void =>
    fill(
      confirmArea,
      h(
        'div',
        { class: 'confirm', role: 'dialog' },
        h('p', {}, `Revoke operator token ${t.name} (${t.token_prefix}…)? Whoever holds it is refused from the next request on.`),
        h(
          'button',
          {
            class: 'danger',
            'data-test': 'confirm-revoke-token',
            onclick: () =>
              void attempt(ctx, async () => {
                fill(confirmArea);
                await ctx.api.del(`/admin/v1/tokens/${seg(t.id)}`);
                ctx.say(`operator token ${t.name} revoked`, 'ok');
                await draw();
              }),
          },
          `Revoke ${t.name}`,
        ),
        h('button', { onclick: () => fill(confirmArea) }, 'Cancel'),
      ),
    );
  root.append(h('h1', {}, 'Operators'), confirmArea, shown, list);
  if (ctx.canWrite) root.append(createForm(ctx, shown, draw));
  else root.append(h('p', { class: 'hint' }, 'This token reads only: making and revoking operator tokens needs admin.write.'));
  void attempt(ctx, draw);
};

function createForm(ctx: Context, shown: HTMLElement, redraw: () => Promise<void>): HTMLFormElement {
  const name = h('input', { 'aria-label': 'Name', placeholder: 'who holds it', required: true, 'data-test': 'token-name' });
  const scope = h(
    'select',
    { 'aria-label': 'Scope', 'data-test': 'token-scope' },
    h('option', { value: 'admin.read' }, 'read only'),
    h('option', { value: 'admin.write' }, 'read and write'),
  );
  const form = h('form', { class: 'inline' }, h('h2', {}, 'New operator token'), name, scope, h('button', { type: 'submit' }, 'Create'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void attempt(ctx, async () => {
      const made: Token & { token: string } = await ctx.api.post('/admin/v1/tokens', { name: name.value.trim(), scopes: [scope.value] });
      name.value = '';
      fill(
        shown,
        h(
          'div',
          { class: 'secret', role: 'status' },
          h('p', {}, `Operator token ${made.name} made. Copy its secret now: it is shown this once and never again.`),
          h('code', { 'data-test': 'new-token' }, made.token),
          h('button', { onclick: () => fill(shown) }, 'Done'),
        ),
      );
      await redraw();
    });
  });
  return form;
}
