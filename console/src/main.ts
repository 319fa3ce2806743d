// The console's shell: signing in with an operator token (kept in this tab's session storage,
// never in a cookie), the navigation, and the hash routes of the pages.

import { AdminApi, ApiError } from './api.js';
import type { Context, Page } from './context.js';
import { fill, h, notice } from './dom.js';
import { audit } from './audit.js';
import { data } from './data.js';
import { lookup } from './lookup.js';
import { organisation, organisations } from './organisations.js';
import { operators } from './operators.js';
import { overview } from './overview.js';
import { settings } from './settings.js';

const TOKEN_KEY = 'ipsift.operator-token';

/** Route prefix → page; the rest of the hash, split at '/', are its parameters. */
const ROUTES: [string, string, Page][] = [
  ['overview', 'Overview', overview],
  ['data', 'Data', data],
  ['orgs', 'Organisations', organisations],
  ['lookup', 'Look up', lookup],
  ['audit', 'Audit log', audit],
  ['operators', 'Operators', operators],
  ['settings', 'Settings', settings],
];

const app = document.getElementById('app')!;

function signIn(message?: string): void {
  const token = h('input', {
    type: 'password',
    autocomplete: 'off',
    'aria-label': 'Operator token',
    placeholder: 'iat_…',
    required: true,
    'data-test': 'token',
  });
  const note = h('div');
  const form = h(
    'form',
    { class: 'signin', 'data-test': 'signin' },
    h('h1', {}, 'ipsift console'),
    h('p', {}, 'Sign in with an operator token (ipsift admin token create). It is kept in this tab only.'),
    token,
    h('button', { type: 'submit' }, 'Sign in'),
    note,
  );
  if (message) notice(note, message);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void start(token.value.trim(), (m) => notice(note, m));
  });
  fill(app, form);
  token.focus();
}

/** Checks the token and opens the console with it; `refused` says why it was not taken. */
async function start(secret: string, refused: (message: string) => void): Promise<void> {
  const api = new AdminApi(secret);
  let me: { name: string; scopes: string[] };
  try {
    me = await api.get('/admin/v1/token');
  } catch (e) {
    sessionStorage.removeItem(TOKEN_KEY);
    return refused(e instanceof ApiError && e.status === 401 ? `Refused: ${e.message}` : (e as Error).message);
  }
  sessionStorage.setItem(TOKEN_KEY, secret);
  const canWrite = me.scopes.includes('admin.write');
  const notices = h('div', { class: 'notices' });
  const main = h('main');
  // biome-ignore lint/suspicious/noConfusingVoidType: what the page returned (Page)
  let stop: (() => void) | void;
  const ctx: Context = {
    api,
    canWrite,
    say: (text, kind = 'error') => {
      notice(notices, text, kind);
      if (kind === 'error' && /operator token is required/.test(text)) signOut('The token was revoked or is unknown: sign in again.');
    },
    // At once (pushState fires no hashchange), so what is said after it stays on the new page.
    go: (route) => {
      if (location.hash !== route) history.pushState(null, '', route);
      route_();
    },
  };
  const nav = h('nav', {}, ...ROUTES.map(([path, label]) => h('a', { href: `#/${path}`, 'data-route': path }, label)));
  const who = h('span', { class: 'who', 'data-test': 'who' }, `${me.name} · ${canWrite ? 'read and write' : 'read only'}`);
  const out = h('button', { class: 'link', onclick: () => signOut() }, 'Sign out');
  fill(app, h('header', {}, h('strong', {}, 'ipsift'), nav, who, out), notices, main);
  function route_(): void {
    stop?.();
    const [path = 'overview', ...params] = location.hash.replace(/^#\/?/, '').split('/');
    const found = ROUTES.find(([p]) => p === path);
    const page = path === 'orgs' && params[0] ? organisation : (found?.[2] ?? overview);
    for (const a of nav.querySelectorAll('a')) a.classList.toggle('active', a.dataset.route === (found?.[0] ?? 'overview'));
    fill(notices);
    fill(main);
    stop = page(ctx, main, params);
  }
  window.onhashchange = route_;
  route_();
}

function signOut(message?: string): void {
  sessionStorage.removeItem(TOKEN_KEY);
  window.onhashchange = null;
  signIn(message);
}

const kept = sessionStorage.getItem(TOKEN_KEY);
if (kept) void start(kept, (m) => signIn(m));
else signIn();
