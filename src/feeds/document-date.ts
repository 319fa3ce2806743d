// The date a publisher writes inside its own document: the best evidence of when the content
// was made, whoever copied it since. Read from the head (and a MISP list's tail, where its
// version stands) of the formats that carry one; times without a zone are UTC, as each of
// these publishers writes them.

import fs from 'node:fs';

/** A date pattern per format: its first group is the date, read by `parse`. */
interface DatePattern {
  re: RegExp;
  parse: (text: string) => number;
  /** Where it stands: the head of the file, or its tail. */
  at: 'head' | 'tail';
  /** The latest match counts, not the first (a list of timestamped records). */
  latest?: boolean;
}

const iso = (t: string): number => Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(t) ? t.replace(' ', 'T') : `${t.replace(' ', 'T')}Z`);
/** AWS writes 2025-07-24-20-23-14. */
const awsDate = (t: string): number => {
  const [y, mo, d, h, mi, s] = t.split('-').map(Number);
  return Date.UTC(y, mo - 1, d, h, mi, s);
};
/** MISP versions its lists by day: 20260819. */
const dayNumber = (t: string): number => Date.UTC(Number(t.slice(0, 4)), Number(t.slice(4, 6)) - 1, Number(t.slice(6, 8)));

const STAMP = '(\\d{4}-\\d\\d-\\d\\d[ T]\\d\\d:\\d\\d:\\d\\d(?:\\.\\d+)?(?:Z|[+-]\\d\\d:?\\d\\d)?)';

const PATTERNS: Readonly<Record<string, DatePattern>> = {
  aws: { re: /"createDate"\s*:\s*"(\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d)"/, parse: awsDate, at: 'head' },
  google: { re: new RegExp(`"creationTime"\\s*:\\s*"${STAMP}"`), parse: iso, at: 'head' },
  oracle: { re: new RegExp(`"last_updated_timestamp"\\s*:\\s*"${STAMP}"`), parse: iso, at: 'head' },
  'cloud-json': { re: new RegExp(`"last_update"\\s*:\\s*"${STAMP}"`), parse: iso, at: 'head' },
  onionoo: { re: new RegExp(`"relays_published"\\s*:\\s*"${STAMP}"`), parse: iso, at: 'head' },
  'vultr-geofeed': { re: new RegExp(`"updated"\\s*:\\s*"${STAMP}"`), parse: iso, at: 'head' },
  geofeed: { re: new RegExp(`^#\\s*Last modified:\\s*${STAMP}`, 'im'), parse: iso, at: 'head' },
  misp: { re: /"version"\s*:\s*(20\d\d[01]\d[0-3]\d)\s*[,}]/, parse: dayNumber, at: 'tail' },
  'tor-exit-addresses': { re: new RegExp(`^(?:Published|LastStatus) ${STAMP}`, 'gm'), parse: iso, at: 'head', latest: true },
};

const HEAD_BYTES = 64 << 10;
const TAIL_BYTES = 4 << 10;

function slice(file: string, at: 'head' | 'tail'): string {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const length = Math.min(size, at === 'head' ? HEAD_BYTES : TAIL_BYTES);
    const buf = Buffer.alloc(length);
    fs.readSync(fd, buf, 0, length, at === 'head' ? 0 : size - length);
    return buf.toString('utf8');
  } finally {
    fs.closeSync(fd);
  }
}

/** The date the document gives itself (ms since the epoch), or null: its format carries none, or this copy lacks it. */
export function documentDate(format: string, file: string): number | null {
  const p = PATTERNS[format];
  if (!p) return null;
  const text = slice(file, p.at);
  let best: number | null = null;
  if (p.latest) {
    for (const m of text.matchAll(p.re)) {
      const t = p.parse(m[1]);
      if (Number.isFinite(t) && (best === null || t > best)) best = t;
    }
  } else {
    const m = p.re.exec(text);
    const t = m ? p.parse(m[1]) : NaN;
    if (Number.isFinite(t)) best = t;
  }
  return best;
}

/** The date a found link names (Microsoft's ServiceTags_Public_20260824.json), or null. */
export function linkDate(url: string): number | null {
  const m = /_(20\d\d)([01]\d)([0-3]\d)\.[a-z]+$/i.exec(new URL(url).pathname);
  return m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : null;
}

/** The formats whose documents date themselves. */
export const DATED_FORMATS = Object.keys(PATTERNS);
