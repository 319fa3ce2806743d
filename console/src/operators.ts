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
  expires_at: string | null;
}

/** Letters that look like Latin ones in Cyrillic and Greek: a name's skeleton folds them to Latin. */
const LOOK_ALIKES: Record<string, string> = Object.fromEntries(
  [...'аеорсухіјѕԁԛԝАВЕКМНОРСТХІЈЅαοκνρτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ'].map((c, i) => [c, 'aeopcyxijsdqwABEKMHOPCTXIJSaoknptuxABEZHIKMNOPTYX'[i]]),
);
const skeleton = (name: string): string =>
  [...name.normalize('NFKC')]
    .map((c) => LOOK_ALIKES[c] ?? c)
    .join('')
    .toLowerCase();
const SCRIPTS: [string, RegExp][] = [
  ['Latin', /\p{Script=Latin}/u],
  ['Cyrillic', /\p{Script=Cyrillic}/u],
  ['Greek', /\p{Script=Greek}/u],
];

/** Why a new token's name may mislead (it mixes scripts, or looks like a name in use), or null. */
export function lookAlike(name: string, taken: readonly string[]): string | null {
  const twin = taken.find((t) => t !== name && skeleton(t) === skeleton(name));
  if (twin !== undefined) return `"${name}" looks like the token name "${twin}" already in use, but is spelt with other letters.`;
  const scripts = SCRIPTS.filter(([, re]) => re.test(name)).map(([s]) => s);
  if (scripts.length > 1) return `"${name}" mixes ${scripts.join(' and ')} letters, which look alike.`;
  return null;
}

export const operators: Page = (ctx, root) => {
  const list = h('div');
  const shown = h('div');
  const confirmArea = h('div', { class: 'confirm-area' });
  let names: string[] = [];
  const draw = async (): Promise<void> => {
    const { tokens } = (await ctx.api.get('/admin/v1/tokens')) as { tokens: Token[] };
    names = tokens.filter((t) => !t.revoked_at).map((t) => t.name);
    fill(
      list,
      table(
        ['Name', 'Prefix', 'Scopes', 'Created', 'State', ''],
        tokens.map((t) => [
          t.name,
          h('code', {}, t.token_prefix),
          t.scopes.join(', '),
          ago(t.created_at),
          t.revoked_at
            ? `revoked ${ago(t.revoked_at)}`
            : t.expires_at && Date.parse(t.expires_at) <= Date.now()
              ? `expired ${ago(t.expires_at)}`
              : t.expires_at
                ? `live, ends ${t.expires_at.slice(0, 10)}`
                : 'live',
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
  if (ctx.canWrite) root.append(createForm(ctx, shown, confirmArea, () => names, draw));
  else root.append(h('p', { class: 'hint' }, 'This token reads only: making and revoking operator tokens needs admin.write.'));
  void attempt(ctx, draw);
};

function createForm(ctx: Context, shown: HTMLElement, confirmArea: HTMLElement, taken: () => string[], redraw: () => Promise<void>): HTMLFormElement {
  const name = h('input', { 'aria-label': 'Name', placeholder: 'who holds it', required: true, 'data-test': 'token-name' });
  const scope = h(
    'select',
    { 'aria-label': 'Scope', 'data-test': 'token-scope' },
    h('option', { value: 'admin.read' }, 'read only'),
    h('option', { value: 'admin.write' }, 'read and write'),
  );
  const lifetime = h(
    'select',
    { 'aria-label': 'Ends', 'data-test': 'token-lifetime' },
    h('option', { value: '' }, 'never ends'),
    h('option', { value: '1' }, 'ends in a day'),
    h('option', { value: '30' }, 'ends in 30 days'),
    h('option', { value: '90' }, 'ends in 90 days'),
  );
  const form = h('form', { class: 'inline' }, h('h2', {}, 'New operator token'), name, scope, lifetime, h('button', { type: 'submit' }, 'Create'));
  const create = (given: string): void =>
    void attempt(ctx, async () => {
      const days = Number(lifetime.value);
      const expires = days > 0 ? new Date(Date.now() + days * 86_400_000).toISOString() : null;
      const made: Token & { token: string } = await ctx.api.post('/admin/v1/tokens', { name: given, scopes: [scope.value], expires });
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
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const given = name.value.trim();
    const why = lookAlike(given, taken());
    if (why === null) return create(given);
    // A name that reads as another can be made, but not by accident.
    fill(
      confirmArea,
      h(
        'div',
        { class: 'confirm', role: 'dialog', 'data-test': 'look-alike' },
        h('p', {}, `${why} Make it anyway?`),
        h(
          'button',
          {
            'data-test': 'confirm-look-alike',
            onclick: () => {
              fill(confirmArea);
              create(given);
            },
          },
          `Make ${given}`,
        ),
        h('button', { onclick: () => fill(confirmArea) }, 'Cancel'),
      ),
    );
  });
  return form;
}
