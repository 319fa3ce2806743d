// A table an operator can work through: trouble first, filtered as one types, sorted by a
// column's heading, and paged, so that seventy sources fit on one screen with the failing ones
// on top (the Data page was 8 875 px tall with failures mixed in).

import { type Child, fill, h } from './dom.js';

export interface Column<T> {
  title: string;
  cell: (row: T) => Child;
  /** The value a click on the heading sorts by (absent: not sortable). */
  sort?: (row: T) => string | number;
}

export interface BrowseOptions<T> {
  /** data-test of the table; the filter, pager and buttons are named after it. */
  test: string;
  /** The text a filter matches (any case). */
  text: (row: T) => string;
  /** Rows shown before the rest until a heading is clicked: failures. */
  first?: (row: T) => boolean;
  pageSize?: number;
}

export function browsable<T>(rows: readonly T[], columns: readonly Column<T>[], o: BrowseOptions<T>): HTMLElement {
  const pageSize = o.pageSize ?? 25;
  let query = '';
  let page = 0;
  let sortBy: number | null = null;
  let descending = false;
  const body = h('div');
  const filter = h('input', { type: 'search', placeholder: 'filter', 'aria-label': 'Filter', 'data-test': `${o.test}-filter` });
  filter.addEventListener('input', () => {
    query = filter.value.trim().toLowerCase();
    page = 0;
    draw();
  });
  const ordered = (): T[] => {
    const shown = rows.filter((r) => query === '' || o.text(r).toLowerCase().includes(query));
    if (sortBy !== null) {
      const key = columns[sortBy].sort!;
      return shown.sort((a, b) => {
        const [x, y] = [key(a), key(b)];
        return (x < y ? -1 : x > y ? 1 : 0) * (descending ? -1 : 1);
      });
    }
    return o.first ? [...shown.filter(o.first), ...shown.filter((r) => !o.first!(r))] : shown;
  };
  const draw = (): void => {
    const all = ordered();
    const pages = Math.max(1, Math.ceil(all.length / pageSize));
    page = Math.min(page, pages - 1);
    const slice = all.slice(page * pageSize, (page + 1) * pageSize);
    const heading = (c: Column<T>, i: number): HTMLElement =>
      c.sort
        ? h(
            'th',
            {
              class: 'sortable',
              'aria-sort': sortBy === i ? (descending ? 'descending' : 'ascending') : 'none',
              'data-sort': c.title,
              onclick: () => {
                descending = sortBy === i ? !descending : false;
                sortBy = i;
                draw();
              },
            },
            c.title,
            sortBy === i ? (descending ? ' ▼' : ' ▲') : '',
          )
        : h('th', {}, c.title);
    fill(
      body,
      h(
        'table',
        { 'data-test': o.test },
        h('thead', {}, h('tr', {}, ...columns.map(heading))),
        h('tbody', {}, ...slice.map((r) => h('tr', {}, ...columns.map((c) => h('td', {}, c.cell(r)))))),
      ),
      h(
        'p',
        { class: 'pager' },
        h('span', { 'data-test': `${o.test}-shown` }, all.length === 0 ? 'none' : `${page * pageSize + 1}–${page * pageSize + slice.length} of ${all.length}`),
        ' ',
        h('button', { disabled: page === 0, 'data-test': `${o.test}-previous`, onclick: () => (page--, draw()) }, 'Previous'),
        h('button', { disabled: page >= pages - 1, 'data-test': `${o.test}-next`, onclick: () => (page++, draw()) }, 'Next'),
      ),
    );
  };
  draw();
  return h('div', { class: 'browse' }, filter, body);
}
