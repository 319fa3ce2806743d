// Public list formats (issue #5): each turns a file into rows of (line, network text,
// category, details); import.ts validates the rows. Where a format names no category or
// provider, the documented default applies and options override it.

import type { DetailField } from '../model/categories.js';

export interface FormatRow {
  line: number;
  network: string;
  category?: string;
  details?: Partial<Record<DetailField, string>>;
}

export interface FormatInput {
  file: string;
  text: string;
}

/** A problem with the file as a whole (not one line). */
export class FormatError extends Error {
  constructor(
    readonly line: number,
    reason: string,
  ) {
    super(reason);
  }
}

export interface FeedFormatDef {
  name: string;
  summary: string;
  /** Category used when neither the file nor --category gives one (undefined: required). */
  defaultCategory?: string;
  /** Whether the content is unmistakably this format (for --format auto). */
  detect(text: string): boolean;
  rows(input: FormatInput): FormatRow[];
}

/** The address part of one list line: comments, ports, schemes and brackets removed. */
export function listToken(raw: string): string {
  let s = raw;
  const hash = s.indexOf('#');
  if (hash >= 0) s = s.slice(0, hash);
  s = s.trim();
  if (s === '' || s.startsWith(';') || s.startsWith('//')) return '';
  s = s.split(/[\s,]+/)[0]; // the first field; the rest is a label
  const scheme = s.indexOf('://');
  if (scheme >= 0) s = s.slice(scheme + 3);
  const slashPath = s.indexOf('/', s.lastIndexOf(']') + 1);
  if (scheme >= 0 && slashPath >= 0) s = s.slice(0, slashPath); // scheme://host:port/path
  if (s.startsWith('[')) {
    const close = s.indexOf(']');
    return close > 0 ? s.slice(1, close) : s;
  }
  // IPv4 with a port: exactly one colon, before which there is a dot.
  const colon = s.indexOf(':');
  if (colon > 0 && s.indexOf(':', colon + 1) < 0 && s.lastIndexOf('.', colon) > 0) s = s.slice(0, colon);
  return s;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new FormatError(0, `not JSON: ${(e as Error).message}`);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const looksJson = (text: string): boolean => /^\s*[{[]/.test(text);

/** The line where a JSON string value first appears (errors name a line even in JSON). */
function lineOf(text: string, value: string): number {
  const at = text.indexOf(JSON.stringify(value));
  return at < 0 ? 0 : text.slice(0, at).split('\n').length;
}

const list: FeedFormatDef = {
  name: 'list',
  summary: 'one address, CIDR or range per line; # and ; comments, trailing labels, ip:port, scheme://ip:port, [v6]:port',
  detect: () => false, // the fallback, never claimed by content
  rows({ text }) {
    const out: FormatRow[] = [];
    text.split(/\r?\n/).forEach((l, i) => {
      const network = listToken(l);
      if (network !== '') out.push({ line: i + 1, network });
    });
    return out;
  },
};

const torExitAddresses: FeedFormatDef = {
  name: 'tor-exit-addresses',
  summary: "the Tor Project's TorDNSEL exit-addresses: ExitAddress lines give the address and last_seen",
  defaultCategory: 'tor',
  detect: (text) => /^ExitNode [0-9A-F]{40}\s*$/m.test(text) && /^ExitAddress /m.test(text),
  rows({ text }) {
    const out: FormatRow[] = [];
    text.split(/\r?\n/).forEach((l, i) => {
      const m = /^ExitAddress\s+(\S+)(?:\s+(\d{4}-\d{2}-\d{2}))?/.exec(l);
      if (m) out.push({ line: i + 1, network: m[1], details: { provider: 'Tor Project', ...(m[2] ? { last_seen: m[2] } : {}) } });
    });
    return out;
  },
};

const misp: FeedFormatDef = {
  name: 'misp',
  summary: 'MISP warning list JSON ({name, description, list: [CIDR…]}); category from --category, else guessed from the name',
  detect: (text) => looksJson(text) && /"list"\s*:\s*\[/.test(text) && /"(name|description)"\s*:/.test(text),
  rows({ text }) {
    const doc = parseJson(text);
    if (!isObject(doc) || !Array.isArray(doc.list)) throw new FormatError(0, 'a MISP warning list needs a list array');
    const name = `${String(doc.name ?? '')} ${String(doc.description ?? '')}`;
    const category = /private relay|icloud/i.test(name) ? 'relay' : /\bvpn/i.test(name) ? 'vpn' : /\b(cdn|cloudflare|fastly|akamai|stackpath)/i.test(name) ? 'cdn' : undefined;
    return doc.list.map((v) => ({ line: typeof v === 'string' ? lineOf(text, v) : 0, network: String(v), category }));
  },
};

const cloudJson: FeedFormatDef = {
  name: 'cloud-json',
  summary: '{provider, ipv4: [CIDR…], ipv6: [CIDR…]} (disposable/cloud-ip-ranges); hosting, provider from the file',
  defaultCategory: 'hosting',
  detect: (text) => looksJson(text) && /"provider"\s*:/.test(text) && /"ipv[46]"\s*:\s*\[/.test(text),
  rows({ text }) {
    const doc = parseJson(text);
    if (!isObject(doc)) throw new FormatError(0, 'expected a JSON object');
    const provider = typeof doc.provider === 'string' ? doc.provider : undefined;
    const nets = [...(Array.isArray(doc.ipv4) ? doc.ipv4 : []), ...(Array.isArray(doc.ipv6) ? doc.ipv6 : [])];
    return nets.map((v) => ({ line: typeof v === 'string' ? lineOf(text, v) : 0, network: String(v), details: provider ? { provider } : {} }));
  },
};

const aws: FeedFormatDef = {
  name: 'aws',
  summary: "AWS ip-ranges.json: hosting, provider Amazon Web Services; CLOUDFRONT services as cdn (Amazon CloudFront)",
  defaultCategory: 'hosting',
  detect: (text) => looksJson(text) && /"syncToken"/.test(text) && /"prefixes"\s*:/.test(text),
  rows({ text }) {
    const doc = parseJson(text);
    if (!isObject(doc)) throw new FormatError(0, 'expected a JSON object');
    const out: FormatRow[] = [];
    const take = (items: unknown, key: string): void => {
      if (!Array.isArray(items)) return;
      for (const p of items) {
        if (!isObject(p) || typeof p[key] !== 'string') continue;
        const cdn = typeof p.service === 'string' && p.service.startsWith('CLOUDFRONT');
        out.push({
          line: lineOf(text, p[key] as string),
          network: p[key] as string,
          category: cdn ? 'cdn' : undefined,
          details: { provider: cdn ? 'Amazon CloudFront' : 'Amazon Web Services' },
        });
      }
    };
    take(doc.prefixes, 'ip_prefix');
    take(doc.ipv6_prefixes, 'ipv6_prefix');
    return out;
  },
};

export const FEED_FORMATS: readonly FeedFormatDef[] = [list, torExitAddresses, misp, cloudJson, aws];

export function formatByName(name: string): FeedFormatDef | undefined {
  return FEED_FORMATS.find((f) => f.name === name);
}

/** The one format whose detector claims the text; list when none does; an error when several do. */
export function detectFormat(text: string): FeedFormatDef | FormatError {
  const claims = FEED_FORMATS.filter((f) => f.detect(text));
  if (claims.length > 1) return new FormatError(0, `the format is ambiguous (${claims.map((f) => f.name).join(', ')}): give --format`);
  if (claims.length === 1) return claims[0];
  return looksJson(text) ? new FormatError(0, 'JSON in no known layout: give --format') : list;
}
