// The database catalogue (DESIGN.md §6): which databases exist, their schema versions, formats
// and columns, and how a build's combined record becomes each database's row. A schema
// version fixes the columns; ids are <base>_v<version>.

import { CATEGORIES, DETAIL_FIELDS, type Category, type DetailField } from '../model/categories.js';
import type { MmdbValue } from './mmdb-data.js';

export type Format = 'csvgz' | 'mmdb';
export const FORMATS: readonly Format[] = ['csvgz', 'mmdb'];

export interface Column {
  name: string;
  type: string;
  description: string;
}

/** A combined record: per category its detail object, or undefined when not in it. */
export type RecordDetails = readonly (Readonly<Record<string, string | number>> | undefined)[];

export type Cell = string | number | boolean;

/** A database's view of one record: its MMDB value and CSV rows (after the network column). */
export interface RecordView {
  mmdb: MmdbValue;
  rows: Cell[][];
}

export interface DatabaseDef {
  base: string;
  version: number;
  /** `<base>_v<version>` */
  id: string;
  name: string;
  summary: string;
  versionSummary: string;
  updateFreq: 'daily';
  formats: readonly Format[];
  /** `ranges` databases are keyed by network; `providers` by provider id (CSV only). */
  keyedBy: 'ranges' | 'providers';
  schema: Partial<Record<Format, Column[]>>;
  /** For `ranges` databases: the record's view, or null when the record is not in the database. */
  view?: (d: RecordDetails) => RecordView | null;
  /**
   * Optional fast path for the CSV: the record's line tails made from cached per-category
   * pieces (`piece(k, id)`: the CSV text of category k's detail id, ',,,' for none), for
   * databases with a distinct view per record. The view's rows are then not used.
   */
  csvTails?: (ids: ArrayLike<number>, at: number, piece: (k: number, id: number) => string) => string[];
  /**
   * The categories a view depends on, and whether only their presence matters: records
   * equal in these have equal views, so views are made once per distinct combination.
   */
  dependsOn?: { categories: readonly Category[]; presenceOnly: boolean };
  /** For `providers` databases: the categories whose providers it lists. */
  providerCategories?: readonly Category[];
  /** The MMDB's database_type (default `ipsift-<id>`): what typed readers check. */
  mmdbType?: string;
  /**
   * The base of the database whose MMDB this one is, under its own database_type: written
   * beside it from the same tree and data (no second export), for typed readers that test
   * the type for equality (MaxMind's Go reader) and so can read only one type a file.
   */
  editionOf?: string;
}

const FIELD_TYPES: Record<DetailField, [string, string]> = {
  provider: ['string', 'provider name'],
  confidence: ['string', 'low, medium or high'],
  method: ['string', 'how the range was found: server_list, exit_probe, traffic or asn'],
  first_seen: ['date', 'first day seen (YYYY-MM-DD)'],
  last_seen: ['date', 'last day seen (YYYY-MM-DD)'],
  hits: ['integer', 'observations'],
  hits_days_pct: ['number', 'share of days observed, 0..100'],
  providers_num: ['integer', 'number of providers seen on the range'],
};

const NETWORK: Column = { name: 'network', type: 'string', description: 'CIDR network (IPv4 or IPv6)' };
const flagName = (c: Category): string => `is_${c}`;
const flagColumns = (): Column[] => CATEGORIES.map((c) => ({ name: flagName(c), type: 'boolean', description: `whether the network is ${c}` }));
const detailColumns = (c: Category, prefix: string): Column[] =>
  DETAIL_FIELDS[c].map((f) => ({ name: `${prefix}${f}`, type: FIELD_TYPES[f][0], description: FIELD_TYPES[f][1] }));
const cells = (c: Category, d: Readonly<Record<string, string | number>> | undefined): Cell[] => DETAIL_FIELDS[c].map((f) => d?.[f] ?? '');

/** The eight flags as one object literal: a fixed shape is several times faster to build. */
function flags(d: RecordDetails): Record<string, boolean> {
  return {
    is_vpn: d[0] !== undefined,
    is_hosting: d[1] !== undefined,
    is_relay: d[2] !== undefined,
    is_tor: d[3] !== undefined,
    is_cdn: d[4] !== undefined,
    is_resproxy: d[5] !== undefined,
    is_dcproxy: d[6] !== undefined,
    is_mobproxy: d[7] !== undefined,
  };
}
if (CATEGORIES.map(flagName).join() !== Object.keys(flags([])).join()) throw new Error('flags() is out of step with CATEGORIES');

/** A database listing some categories, one CSV row per category present (with its name). */
function grouped(cats: readonly Category[], column: string): (d: RecordDetails) => RecordView | null {
  const ks = cats.map((c) => CATEGORIES.indexOf(c));
  return (d) => {
    const present = ks.filter((k) => d[k] !== undefined);
    if (present.length === 0) return null;
    const mmdb: Record<string, MmdbValue> = { [column === 'kind' ? 'kinds' : 'categories']: present.map((k) => CATEGORIES[k]) };
    // The detail objects themselves, not copies: the MMDB writer stores each once and points to it.
    for (const k of present) mmdb[CATEGORIES[k]] = d[k]! as MmdbValue;
    return { mmdb, rows: present.map((k) => [CATEGORIES[k], ...DETAIL_FIELDS[cats[0]].map((f) => d[k]![f] ?? '')]) };
  };
}

const PROXY: readonly Category[] = ['resproxy', 'dcproxy', 'mobproxy'];

/**
 * GeoIP2 Anonymous IP (and Anonymous Plus) fields from ipsift's categories (README, "GeoIP2-
 * compatible database"). A network is in the database when it is in any category that
 * anonymizes or hosts; its Plus fields come from the first of ANONYMIZERS it is in.
 */
const ANONYMIZERS: readonly Category[] = ['vpn', 'resproxy', 'dcproxy', 'mobproxy', 'tor', 'relay', 'hosting'];
const GEOIP2_FLAGS = ['is_anonymous', 'is_anonymous_vpn', 'is_hosting_provider', 'is_public_proxy', 'is_residential_proxy', 'is_tor_exit_node'] as const;
/** ipsift's confidence words as GeoIP Anonymous Plus's anonymizer_confidence (1–99). */
const CONFIDENCE: Record<string, number> = { low: 30, medium: 60, high: 90 };

function geoip2Anonymous(d: RecordDetails): RecordView | null {
  const has = (c: Category): boolean => d[CATEGORIES.indexOf(c)] !== undefined;
  const source = ANONYMIZERS.find(has);
  if (source === undefined) return null;
  const flagValues = [true, has('vpn'), has('hosting'), has('dcproxy'), has('resproxy') || has('mobproxy'), has('tor')];
  const detail = d[CATEGORIES.indexOf(source)]!;
  const confidence = CONFIDENCE[String(detail.confidence ?? '')];
  const lastSeen = detail.last_seen === undefined ? undefined : String(detail.last_seen);
  const provider = detail.provider === undefined ? undefined : String(detail.provider);
  // As MaxMind's files: only the flags that are true, and no empty Plus field.
  const mmdb: Record<string, MmdbValue> = {};
  for (const [i, f] of GEOIP2_FLAGS.entries()) if (flagValues[i]) mmdb[f] = true;
  if (confidence !== undefined) mmdb.anonymizer_confidence = confidence;
  if (lastSeen !== undefined) mmdb.network_last_seen = lastSeen;
  if (provider !== undefined) mmdb.provider_name = provider;
  return { mmdb, rows: [[...flagValues.map((v) => (v ? 1 : 0)), confidence ?? '', lastSeen ?? '', provider ?? '']] };
}

function geoip2Columns(): Column[] {
  const flag = (name: string, what: string): Column => ({ name, type: 'boolean', description: `${what} (CSV: 1 or 0; MMDB: present only when true)` });
  return [
    flag('is_anonymous', 'in any anonymizing or hosting category'),
    flag('is_anonymous_vpn', 'vpn'),
    flag('is_hosting_provider', 'hosting'),
    flag('is_public_proxy', 'dcproxy'),
    flag('is_residential_proxy', 'resproxy or mobproxy'),
    flag('is_tor_exit_node', 'tor'),
    {
      name: 'anonymizer_confidence',
      type: 'integer',
      description: 'confidence of the first of vpn, resproxy, dcproxy, mobproxy, tor, relay, hosting the network is in: low 30, medium 60, high 90',
    },
    { name: 'network_last_seen', type: 'date', description: 'that category’s last_seen (YYYY-MM-DD)' },
    { name: 'provider_name', type: 'string', description: 'that category’s provider' },
  ];
}
const HOSTING: readonly Category[] = ['hosting', 'relay', 'tor', 'cdn'];

function def(d: Omit<DatabaseDef, 'id' | 'version' | 'updateFreq'>): DatabaseDef {
  return { ...d, id: `${d.base}_v1`, version: 1, updateFreq: 'daily' };
}

export const DATABASES: readonly DatabaseDef[] = [
  def({
    base: 'ipsift',
    name: 'ipsift classification',
    summary: 'Every category flag per network',
    versionSummary: 'network and eight boolean flags',
    formats: FORMATS,
    keyedBy: 'ranges',
    schema: { csvgz: [NETWORK, ...flagColumns()], mmdb: flagColumns() },
    dependsOn: { categories: CATEGORIES, presenceOnly: true },
    view: (d) => (d.some((x) => x !== undefined) ? { mmdb: flags(d), rows: [CATEGORIES.map((_, k) => d[k] !== undefined)] } : null),
  }),
  def({
    base: 'ipsift_extended',
    name: 'ipsift classification, extended',
    summary: 'Every category flag and every detail field per network',
    versionSummary: 'flags, then each category’s details as <category>_<field>',
    formats: FORMATS,
    keyedBy: 'ranges',
    schema: {
      csvgz: [NETWORK, ...flagColumns(), ...CATEGORIES.flatMap((c) => detailColumns(c, `${c}_`))],
      mmdb: [...flagColumns(), ...CATEGORIES.map((c) => ({ name: c, type: 'map', description: `${c} details: ${DETAIL_FIELDS[c].join(', ')}` }))],
    },
    dependsOn: { categories: CATEGORIES, presenceOnly: false },
    view: (d) => {
      if (!d.some((x) => x !== undefined)) return null;
      const mmdb: Record<string, MmdbValue> = flags(d);
      for (const [k, c] of CATEGORIES.entries()) if (d[k]) mmdb[c] = d[k]! as MmdbValue;
      return { mmdb, rows: [] };
    },
    csvTails: (ids, at, piece) => {
      let flagsText = '';
      let details = '';
      for (let k = 0; k < CATEGORIES.length; k++) {
        const id = ids[at + k];
        flagsText += id !== 0 ? ',true' : ',false';
        details += piece(k, id);
      }
      return [flagsText + details + '\n'];
    },
  }),
  def({
    base: 'vpn',
    name: 'VPN exits',
    summary: 'VPN exit ranges with provider and evidence',
    versionSummary: 'network and the vpn details',
    formats: FORMATS,
    keyedBy: 'ranges',
    schema: { csvgz: [NETWORK, ...detailColumns('vpn', '')], mmdb: detailColumns('vpn', '') },
    dependsOn: { categories: ['vpn'], presenceOnly: false },
    view: (d) => {
      const v = d[CATEGORIES.indexOf('vpn')];
      return v ? { mmdb: { ...v }, rows: [cells('vpn', v)] } : null;
    },
  }),
  def({
    base: 'proxy',
    name: 'Proxies',
    summary: 'Residential, datacenter and mobile proxy ranges with detail and kind',
    versionSummary: 'network, kind (resproxy, dcproxy, mobproxy) and the proxy details; one row per kind',
    formats: FORMATS,
    keyedBy: 'ranges',
    schema: {
      csvgz: [NETWORK, { name: 'kind', type: 'string', description: 'resproxy, dcproxy or mobproxy' }, ...detailColumns('resproxy', '')],
      mmdb: [
        { name: 'kinds', type: 'array', description: 'the proxy kinds of the network' },
        ...PROXY.map((c) => ({ name: c, type: 'map', description: `${c} details` })),
      ],
    },
    dependsOn: { categories: PROXY, presenceOnly: false },
    view: grouped(PROXY, 'kind'),
  }),
  def({
    base: 'hosting',
    name: 'Hosting, relays, Tor and CDN',
    summary: 'Hosting, relay, Tor and CDN ranges with category',
    versionSummary: 'network, category (hosting, relay, tor, cdn) and its details; one row per category',
    formats: FORMATS,
    keyedBy: 'ranges',
    schema: {
      csvgz: [NETWORK, { name: 'category', type: 'string', description: 'hosting, relay, tor or cdn' }, ...detailColumns('hosting', '')],
      mmdb: [
        { name: 'categories', type: 'array', description: 'the categories of the network' },
        ...HOSTING.map((c) => ({ name: c, type: 'map', description: `${c} details` })),
      ],
    },
    dependsOn: { categories: HOSTING, presenceOnly: false },
    view: grouped(HOSTING, 'category'),
  }),
  def({
    base: 'geoip2_anonymous',
    name: 'GeoIP2 Anonymous IP compatible',
    summary: 'Anonymizer and hosting ranges with the fields and database type of GeoIP2 Anonymous IP, for MaxMind readers',
    versionSummary: 'network, the six GeoIP2 Anonymous IP flags, then anonymizer_confidence, network_last_seen and provider_name',
    formats: FORMATS,
    keyedBy: 'ranges',
    schema: { csvgz: [NETWORK, ...geoip2Columns()], mmdb: geoip2Columns() },
    dependsOn: { categories: ANONYMIZERS, presenceOnly: false },
    view: geoip2Anonymous,
    // Exactly MaxMind's type: the Go reader (geoip2-golang) tests it for equality, the
    // Python, Node, Java and PHP readers for a substring. One type a file.
    mmdbType: 'GeoIP2-Anonymous-IP',
  }),
  def({
    base: 'geoip2_anonymous_plus',
    name: 'GeoIP Anonymous Plus compatible',
    summary: 'The GeoIP2 Anonymous IP compatible database under the database type of GeoIP Anonymous Plus, for its readers (anonymousPlus())',
    versionSummary: 'the six GeoIP2 Anonymous IP flags, anonymizer_confidence, network_last_seen and provider_name (MMDB only: the CSV is geoip2_anonymous_v1)',
    formats: ['mmdb'],
    keyedBy: 'ranges',
    schema: { mmdb: geoip2Columns() },
    editionOf: 'geoip2_anonymous',
    mmdbType: 'GeoIP-Anonymous-Plus',
  }),
  def({
    base: 'vpn_provider',
    name: 'VPN providers',
    summary: 'VPN providers by provider id',
    versionSummary: 'provider id, name and range counts',
    formats: ['csvgz'],
    keyedBy: 'providers',
    providerCategories: ['vpn'],
    schema: { csvgz: providerColumns() },
  }),
  def({
    base: 'proxy_provider',
    name: 'Proxy providers',
    summary: 'Proxy providers by provider id',
    versionSummary: 'provider id, name, kinds and range counts',
    formats: ['csvgz'],
    keyedBy: 'providers',
    providerCategories: PROXY,
    schema: { csvgz: providerColumns() },
  }),
];

function providerColumns(): Column[] {
  return [
    { name: 'provider_id', type: 'string', description: 'stable provider id (lower case, [a-z0-9-])' },
    { name: 'provider', type: 'string', description: 'provider name as the feeds give it' },
    { name: 'categories', type: 'string', description: 'categories the provider appears in, space separated' },
    { name: 'networks_v4', type: 'integer', description: 'IPv4 ranges' },
    { name: 'networks_v6', type: 'integer', description: 'IPv6 ranges' },
  ];
}

/** A provider's stable id: its name in lower case, runs of other characters as one '-'. */
export function providerId(name: string): string {
  const id = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return id || 'provider';
}

export function databaseById(id: string): DatabaseDef | undefined {
  return DATABASES.find((d) => d.id === id);
}
