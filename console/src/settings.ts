// The configuration the process runs with: each setting by group, its value and where it came
// from (environment, CONFIG_FILE, default). Passwords in URLs come masked and credentials as
// set or not: the page never receives a secret to show.

import { attempt, type Page } from './context.js';
import { fill, h, section, table } from './dom.js';

/** An entry of GET /admin/v1/settings, as the wire has it. */
interface Setting {
  name: string;
  group: string;
  value: string | null;
  origin: 'environment' | 'file' | 'default';
  default?: string;
  password?: 'set';
}

const ORIGIN: Record<Setting['origin'], string> = { environment: 'environment', file: 'CONFIG_FILE', default: 'default' };

export const settings: Page = (ctx, root) => {
  const body = h('div');
  root.append(h('h1', {}, 'Settings'), body);
  void attempt(ctx, async () => {
    const doc: { config_file: string | null; settings: Setting[]; credentials: { name: string; set: boolean }[] } = await ctx.api.get('/admin/v1/settings');
    const groups = [...new Set(doc.settings.map((s) => s.group))];
    const value = (s: Setting): Node | string =>
      s.value === null ? h('span', { class: 'hint' }, s.default ?? 'none') : h('code', {}, s.value, s.password ? ' (password masked)' : '');
    fill(
      body,
      h(
        'p',
        { class: 'hint' },
        doc.config_file ? `CONFIG_FILE: ${doc.config_file}. The environment wins where both set one.` : 'No CONFIG_FILE: the environment and the defaults.',
      ),
      ...groups.map((g) =>
        section(
          g,
          table(
            ['Setting', 'Value', 'From'],
            doc.settings
              .filter((s) => s.group === g)
              .map((s) => [h('code', {}, s.name), value(s), h('span', { class: `origin ${s.origin}` }, ORIGIN[s.origin])]),
            { 'data-test': `settings-${g}` },
          ),
        ),
      ),
      section(
        'Credentials',
        table(
          ['Variable', 'State'],
          doc.credentials.map((c) => [h('code', {}, c.name), c.set ? 'set' : 'not set']),
          { 'data-test': 'credentials' },
        ),
        h('p', { class: 'hint' }, 'Read by the S3 client from the environment; their values are never shown.'),
      ),
    );
  });
};
