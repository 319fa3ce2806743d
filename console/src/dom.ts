// Building the page: elements are made with text content and attributes only, never from
// HTML text, so whatever a customer named a thing is shown as text, whatever it holds.

export type Child = Node | string | number | null | undefined | false;
type Props = Record<string, string | number | boolean | null | undefined | ((e: Event) => void)>;

/** An element with its properties (on… are listeners, others attributes) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (value === true) el.setAttribute(name, '');
    else if (value !== false && value !== null && value !== undefined) el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

export function append(el: Element, children: Child[]): void {
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(typeof c === 'number' ? String(c) : c);
}

/** Replaces an element's children. */
export function fill(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

/** A table: a head row and one row per item. */
export function table(head: string[], rows: Child[][], props: Props = {}): HTMLTableElement {
  return h(
    'table',
    props,
    h('thead', {}, h('tr', {}, ...head.map((t) => h('th', {}, t)))),
    h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((c) => h('td', {}, c))))),
  );
}

/** A heading and a section's content. */
export const section = (title: string, ...children: Child[]): HTMLElement => h('section', {}, h('h2', {}, title), ...children);

/** Key facts as a definition list. */
export const facts = (pairs: [string, Child][]): HTMLDListElement =>
  h('dl', { class: 'facts' }, ...pairs.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB'];
export function bytes(n: number): string {
  let u = 0;
  while (n >= 1024 && u < UNITS.length - 1) {
    n /= 1024;
    u++;
  }
  return `${u === 0 ? n : n.toFixed(1)} ${UNITS[u]}`;
}

/** A duration in seconds as the largest two units (3 d 4 h, 5 min 2 s). */
export function duration(s: number): string {
  s = Math.max(0, Math.round(s));
  const parts: [number, string][] = [
    [86400, 'd'],
    [3600, 'h'],
    [60, 'min'],
    [1, 's'],
  ];
  const out: string[] = [];
  for (const [size, unit] of parts) {
    if (s >= size || (unit === 's' && out.length === 0)) {
      out.push(`${Math.floor(s / size)} ${unit}`);
      s %= size;
    }
    if (out.length === 2) break;
  }
  return out.join(' ');
}

/** How long ago an ISO time was. */
export const ago = (iso: string | null, nowMs = Date.now()): string => (iso === null ? 'never' : `${duration((nowMs - Date.parse(iso)) / 1000)} ago`);

export const count = (n: number): string => n.toLocaleString('en-US');

/**
 * A time as every page shows one: `2026-11-27 20:41 UTC` (to the second where `seconds`), or
 * the day alone (`2026-11-27`) for a time at midnight UTC, as licence terms are. null: '—'.
 */
export function when(iso: string | null, seconds = false): string {
  if (iso === null) return '—';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const text = new Date(t).toISOString();
  if (!seconds && text.endsWith('T00:00:00.000Z')) return text.slice(0, 10);
  return `${text.slice(0, seconds ? 19 : 16).replace('T', ' ')} UTC`;
}

/** A message in the page's notice area: what went wrong, or what was done. */
export function notice(el: Element, text: string, kind: 'error' | 'ok' = 'error'): void {
  fill(el, h('p', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text));
}
