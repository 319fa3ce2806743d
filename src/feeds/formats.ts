// Public list formats (issue #5): each turns a file into rows of (line, network text,
// category, details); import.ts validates the rows. Where a format names no category or
// provider, the documented default applies and options override it.

import { readCsv } from './csv.js';
import { type FeedFormatDef, FormatError, type FormatRow } from './format-def.js';
import { FIRST_PARTY_FORMATS } from './formats-first-party.js';
import { addressRows, isObject, Lines, list_, looksJson, parseJson } from './json-text.js';

export { type FeedFormatDef, FormatError, type FormatInput, type FormatRow } from './format-def.js';

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
    // Relays share addresses (one address, several ExitNode records): one row per address,
    // with the newest ExitAddress date, so that a build and `explain` see each claim once.
    const out: FormatRow[] = [];
    const rowOf = new Map<string, FormatRow>();
    text.split(/\r?\n/).forEach((l, i) => {
      const m = /^ExitAddress\s+(\S+)(?:\s+(\d{4}-\d{2}-\d{2}))?/.exec(l);
      if (!m) return;
      const seen = rowOf.get(m[1]);
      if (seen === undefined) {
        const row: FormatRow = { line: i + 1, network: m[1], details: { provider: 'Tor Project', ...(m[2] ? { last_seen: m[2] } : {}) } };
        rowOf.set(m[1], row);
        out.push(row);
      } else if (m[2] && !((seen.details?.last_seen ?? '') >= m[2])) seen.details = { ...seen.details, last_seen: m[2] };
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
    const category = /private relay|icloud/i.test(name)
      ? 'relay'
      : /\bvpn/i.test(name)
        ? 'vpn'
        : /\b(cdn|cloudflare|fastly|akamai|stackpath|bunny)/i.test(name)
          ? 'cdn'
          : /\b(cloud|aws|amazon|azure|gcp|oci|ovh|hosting|datacenter|data center)\b/i.test(name)
            ? 'hosting'
            : undefined;
    const lines = new Lines(text);
    return doc.list.map((v) => ({ line: typeof v === 'string' ? lines.of(v) : 0, network: String(v), category }));
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
    const lines = new Lines(text);
    return nets.map((v) => ({ line: typeof v === 'string' ? lines.of(v) : 0, network: String(v), details: provider ? { provider } : {} }));
  },
};

const aws: FeedFormatDef = {
  name: 'aws',
  summary: 'AWS ip-ranges.json: hosting, provider Amazon Web Services; CLOUDFRONT services as cdn (Amazon CloudFront)',
  defaultCategory: 'hosting',
  detect: (text) => looksJson(text) && /"syncToken"/.test(text) && /"ip_prefix"\s*:/.test(text),
  rows({ text }) {
    const doc = parseJson(text);
    if (!isObject(doc)) throw new FormatError(0, 'expected a JSON object');
    const out: FormatRow[] = [];
    const lines = new Lines(text);
    const take = (items: unknown, key: string): void => {
      if (!Array.isArray(items)) return;
      for (const p of items) {
        if (!isObject(p) || typeof p[key] !== 'string') continue;
        const cdn = typeof p.service === 'string' && p.service.startsWith('CLOUDFRONT');
        out.push({
          line: lines.of(p[key] as string),
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

const google: FeedFormatDef = {
  name: 'google',
  summary: "Google's cloud.json / goog.json ({prefixes: [{ipv4Prefix|ipv6Prefix, service}]}): hosting, provider from service, else Google",
  defaultCategory: 'hosting',
  detect: (text) => looksJson(text) && /"ipv[46]Prefix"\s*:/.test(text),
  rows({ text }) {
    const doc = parseJson(text);
    if (!isObject(doc) || !Array.isArray(doc.prefixes)) throw new FormatError(0, 'expected {prefixes: [...]}');
    const lines = new Lines(text);
    return doc.prefixes.flatMap((p: unknown) => {
      if (!isObject(p)) return [];
      const net = (p.ipv4Prefix ?? p.ipv6Prefix) as string | undefined;
      if (typeof net !== 'string') return [];
      return [{ line: lines.of(net), network: net, details: { provider: typeof p.service === 'string' ? p.service : 'Google' } }];
    });
  },
};

/** Lines of a CSV-ish text, without blank lines and '#' comments: [line number, fields]. */
function csvLines(text: string): [number, string[]][] {
  const out: [number, string[]][] = [];
  text.split(/\r?\n/).forEach((l, i) => {
    const t = l.trim();
    if (t !== '' && !t.startsWith('#')) out.push([i + 1, t.split(',').map((f) => f.trim())]);
  });
  return out;
}

const geofeed: FeedFormatDef = {
  name: 'geofeed',
  summary: 'RFC 8805 geofeed CSV (prefix,country,region,city[,postal]), e.g. DigitalOcean, Linode, Apple Private Relay egress (give --category relay)',
  defaultCategory: 'hosting',
  detect: (text) => {
    const first = csvLines(text)[0]?.[1];
    return !!first && first.length >= 4 && first.length <= 5 && /\//.test(first[0]) && /^([A-Z]{2})?$/.test(first[1]);
  },
  rows: ({ text }) => csvLines(text).map(([line, f]) => ({ line, network: f[0] })),
};

const ipcat: FeedFormatDef = {
  name: 'ipcat',
  summary: 'start,end,provider,url CSV without header (client9/ipcat): hosting, provider from the row',
  defaultCategory: 'hosting',
  detect: (text) => {
    const first = csvLines(text)[0]?.[1];
    return !!first && first.length === 4 && /^\d+\.\d+\.\d+\.\d+$/.test(first[0]) && /^\d+\.\d+\.\d+\.\d+$/.test(first[1]);
  },
  rows: ({ text }) => csvLines(text).map(([line, f]) => ({ line, network: `${f[0]}-${f[1]}`, details: f[2] ? { provider: f[2] } : {} })),
};

/** A CSV with a header: rows as objects keyed by lower-case column name. */
function headed(text: string): { line: number; row: Record<string, string> }[] {
  const lines = csvLines(text);
  if (lines.length === 0) return [];
  const head = lines[0][1].map((h) => h.toLowerCase());
  return lines.slice(1).map(([line, f]) => ({ line, row: Object.fromEntries(head.map((h, k) => [h, f[k] ?? ''])) }));
}

const mullvadCsv: FeedFormatDef = {
  name: 'mullvad-csv',
  summary: 'ip,hostname,first_seen,last_seen CSV: vpn, provider Mullvad, method server_list, last_seen carried over (vpn details have no first_seen)',
  defaultCategory: 'vpn',
  detect: (text) => /^ip,hostname,first_seen,last_seen\s*$/m.test(text.split('\n')[0]),
  rows: ({ text }) =>
    headed(text).map(({ line, row }) => ({
      line,
      network: row.ip,
      details: { provider: 'Mullvad', method: 'server_list', ...(row.last_seen ? { last_seen: row.last_seen.slice(0, 10) } : {}) },
    })),
};

const torCsv: FeedFormatDef = {
  name: 'tor-csv',
  summary: 'CSV exit lists with a header naming an address column (ipaddr, ip, address): tor, provider Tor Project',
  defaultCategory: 'tor',
  detect: (text) => /^fingerprint,(ipaddr|ip|address)\b/.test(text.split('\n')[0].toLowerCase()),
  rows: ({ text }) => headed(text).map(({ line, row }) => ({ line, network: row.ipaddr ?? row.ip ?? row.address ?? '', details: { provider: 'Tor Project' } })),
};

const proxyCsv: FeedFormatDef = {
  name: 'proxy-csv',
  summary: "exit-IP or subnet CSVs with a header ('proxy exit ip' or 'subnet mask' first): the proxy category you give (default dcproxy)",
  defaultCategory: 'dcproxy',
  detect: (text) => /^(proxy exit ip|subnet mask),/m.test(text),
  rows: ({ text }) => headed(text).map(({ line, row }) => ({ line, network: row['proxy exit ip'] ?? row['subnet mask'] ?? '' })),
};

const proxiesJson: FeedFormatDef = {
  name: 'proxies-json',
  summary: 'JSON array of checked proxies ({host, port, exit_ip, …}): host and observed exit_ip, the proxy category you give (default dcproxy)',
  defaultCategory: 'dcproxy',
  detect: (text) => /^\s*\[/.test(text) && /"host"\s*:/.test(text) && /"exit_ip"\s*:/.test(text),
  rows({ text }) {
    const doc = parseJson(text);
    if (!Array.isArray(doc)) throw new FormatError(0, 'expected a JSON array of proxies');
    const seen = new Set<string>();
    const out: FormatRow[] = [];
    const lines = new Lines(text);
    for (const p of doc) {
      if (!isObject(p)) continue;
      for (const ip of [p.host, p.exit_ip]) {
        if (typeof ip !== 'string' || ip === '' || seen.has(ip)) continue;
        seen.add(ip);
        out.push({ line: lines.of(ip), network: ip });
      }
    }
    return out;
  },
};

/** A JSON format whose networks are strings found under known keys; one provider for all. */
function jsonPrefixes(
  name: string,
  summary: string,
  defaultCategory: string,
  provider: string,
  detect: RegExp,
  collect: (doc: Record<string, unknown>) => unknown[],
): FeedFormatDef {
  return {
    name,
    summary,
    defaultCategory,
    detect: (text) => looksJson(text) && detect.test(text),
    rows({ text }) {
      const doc = parseJson(text);
      if (!isObject(doc)) throw new FormatError(0, 'expected a JSON object');
      return addressRows(text, collect(doc), { provider });
    },
  };
}

const azure = jsonPrefixes(
  'azure',
  'Azure Service Tags JSON (values[].properties.addressPrefixes): hosting, provider Microsoft Azure',
  'hosting',
  'Microsoft Azure',
  /"addressPrefixes"\s*:/,
  (doc) => list_(doc.values).flatMap((v) => (isObject(v) && isObject(v.properties) ? list_(v.properties.addressPrefixes) : [])),
);

const oracle = jsonPrefixes(
  'oracle',
  'Oracle Cloud public_ip_ranges.json (regions[].cidrs[].cidr): hosting, provider Oracle Cloud',
  'hosting',
  'Oracle Cloud',
  /"regions"\s*:[\s\S]*"cidrs"\s*:/,
  (doc) => list_(doc.regions).flatMap((r) => (isObject(r) ? list_(r.cidrs).map((c) => (isObject(c) ? c.cidr : undefined)) : [])),
);

const githubMeta = jsonPrefixes(
  'github',
  "GitHub's meta API JSON (every array of CIDRs: hooks, web, api, actions, …): hosting, provider GitHub",
  'hosting',
  'GitHub',
  /"verifiable_password_authentication"\s*:/,
  (doc) => Object.entries(doc).flatMap(([k, v]) => (k === 'ssh_keys' ? [] : list_(v).filter((x) => typeof x === 'string' && /^[0-9a-f:.]+\/\d+$/i.test(x)))),
);

const fastly = jsonPrefixes(
  'fastly',
  "Fastly's public-ip-list JSON ({addresses, ipv6_addresses}): cdn, provider Fastly",
  'cdn',
  'Fastly',
  /"ipv6_addresses"\s*:/,
  (doc) => [...list_(doc.addresses), ...list_(doc.ipv6_addresses)],
);

const zscaler = jsonPrefixes('zscaler', "Zscaler's cloud IP JSON (hubPrefixes): hosting, provider Zscaler", 'hosting', 'Zscaler', /"hubPrefixes"\s*:/, (doc) =>
  list_(doc.hubPrefixes),
);

const protonLogicals: FeedFormatDef = {
  name: 'protonvpn-logicals',
  summary: "ProtonVPN's logicals JSON (LogicalServers[].Servers[].ExitIP): vpn, provider ProtonVPN, method server_list",
  defaultCategory: 'vpn',
  detect: (text) => looksJson(text) && /"LogicalServers"\s*:/.test(text),
  rows({ text }) {
    const doc = parseJson(text);
    if (!isObject(doc)) throw new FormatError(0, 'expected a JSON object');
    const exits = list_(doc.LogicalServers).flatMap((logical) =>
      isObject(logical) ? list_(logical.Servers).map((server) => (isObject(server) ? server.ExitIP : undefined)) : [],
    );
    return addressRows(text, exits, { provider: 'ProtonVPN', method: 'server_list' });
  },
};

const cidrVendor: FeedFormatDef = {
  name: 'cidr-vendor',
  summary: 'cidr,hostmin,hostmax,vendor CSV with header (quoted fields allowed): hosting, provider from vendor',
  defaultCategory: 'hosting',
  detect: (text) => /^"?cidr"?,"?hostmin"?,"?hostmax"?,"?vendor"?\s*$/m.test(text.split('\n')[0]),
  rows({ text }) {
    const out: FormatRow[] = [];
    let header = true;
    for (const rec of readCsv(text)) {
      if (header) {
        header = false;
        continue;
      }
      const [cidr, , , vendor] = rec.fields.map((f) => f.trim());
      out.push({ line: rec.line, network: cidr ?? '', details: vendor ? { provider: vendor } : {} });
    }
    return out;
  },
};

const ipObjects: FeedFormatDef = {
  name: 'ip-objects',
  summary: 'JSON array of objects with an "ip" member (e.g. relay geolocation lists): the category you give',
  detect: (text) => /^\s*\[\s*\{\s*"ip"\s*:/.test(text),
  rows({ text }) {
    const doc = parseJson(text);
    if (!Array.isArray(doc)) throw new FormatError(0, 'expected a JSON array');
    const lines = new Lines(text);
    return doc.flatMap((o) => (isObject(o) && typeof o.ip === 'string' ? [{ line: lines.of(o.ip), network: o.ip }] : []));
  },
};

const spys: FeedFormatDef = {
  name: 'spys',
  summary: 'spys.me-style proxy list (a few header lines, then "ip:port CC-A-S +" lines, a footer): the proxy category you give (default dcproxy)',
  defaultCategory: 'dcproxy',
  detect: (text) => /^Proxy list \(#\d+\)/.test(text) && /^IP address:Port /m.test(text),
  rows({ text }) {
    const out: FormatRow[] = [];
    text.split(/\r?\n/).forEach((l, i) => {
      const m = /^(\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\]):\d+\s/.exec(l);
      if (m) out.push({ line: i + 1, network: m[1].replace(/^\[|\]$/g, '') });
    });
    return out;
  },
};

const markdownTable: FeedFormatDef = {
  name: 'markdown-table',
  // No default category: a table of servers does not say what they serve.
  summary: 'a Markdown table with a "Server IP" (or "IP") column, e.g. the PIA server watch: the category and provider you give',
  detect: (text) => /^\|.*\b(Server IP|IP)\b.*\|\s*$/m.test(text) && /^\|[-| :]+\|\s*$/m.test(text),
  rows({ text }) {
    const lines = text.split(/\r?\n/);
    const cells = (l: string): string[] =>
      l
        .trim()
        .replace(/^\||\|$/g, '')
        .split('|')
        .map((c) => c.trim());
    const headerAt = lines.findIndex((l) => /^\|.*\b(Server IP|IP)\b/.test(l));
    if (headerAt < 0) throw new FormatError(0, 'no table with a Server IP column');
    const column = cells(lines[headerAt]).findIndex((c) => /^(server ip|ip)$/i.test(c));
    const out: FormatRow[] = [];
    for (let i = headerAt + 2; i < lines.length && lines[i].trim().startsWith('|'); i++) {
      out.push({ line: i + 1, network: cells(lines[i])[column] ?? '' });
    }
    return out;
  },
};

export const FEED_FORMATS: readonly FeedFormatDef[] = [
  list,
  torExitAddresses,
  torCsv,
  misp,
  cloudJson,
  aws,
  google,
  azure,
  oracle,
  githubMeta,
  fastly,
  zscaler,
  geofeed,
  ipcat,
  protonLogicals,
  mullvadCsv,
  proxyCsv,
  proxiesJson,
  cidrVendor,
  ipObjects,
  spys,
  markdownTable,
  ...FIRST_PARTY_FORMATS,
];

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
