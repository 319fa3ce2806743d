// Formats of operators' own publications: the Tor Project's Onionoo, the VPN
// providers' server APIs (Mullvad, NordVPN, Private Internet Access, IVPN), bunny.net's edge
// list, Vultr's geofeed JSON and Zscaler's CENR document. Each reads the layout its operator
// serves; the registry names where that layout is documented, and test/fixtures/upstream holds
// a sample of each in that layout.

import { type FeedFormatDef, FormatError, type FormatRow } from './format-def.js';
import { addressRows, isObject, Lines, list_, looksJson, parseJson } from './json-text.js';

/** The address of an OR address "1.2.3.4:9001" or "[2001:db8::1]:9001". */
const orAddress = (v: unknown): string | undefined => {
  if (typeof v !== 'string') return undefined;
  const m = /^\[([0-9a-fA-F:.]+)\]:\d+$/.exec(v) ?? /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(v);
  return m?.[1];
};

const onionoo: FeedFormatDef = {
  name: 'onionoo',
  summary:
    "the Tor Project's Onionoo details document (relays[]): each exit's IPv4 OR address and exit_addresses, its IPv6 OR address where its IPv6 exit policy accepts, last_seen: tor, provider Tor Project",
  defaultCategory: 'tor',
  detect: (text) => looksJson(text) && /"relays_published"\s*:/.test(text) && /"relays"\s*:/.test(text),
  rows({ text }) {
    const doc = parseJson(text);
    if (!isObject(doc) || !Array.isArray(doc.relays)) throw new FormatError(0, 'an Onionoo details document needs a relays array');
    const lines = new Lines(text);
    const rowOf = new Map<string, FormatRow>();
    const out: FormatRow[] = [];
    const add = (ip: string, lastSeen: string | undefined): void => {
      const seen = rowOf.get(ip);
      if (seen) {
        if (lastSeen && !((seen.details?.last_seen ?? '') >= lastSeen)) seen.details = { ...seen.details, last_seen: lastSeen };
        return;
      }
      const row: FormatRow = { line: lines.of(ip), network: ip, details: { provider: 'Tor Project', ...(lastSeen ? { last_seen: lastSeen } : {}) } };
      rowOf.set(ip, row);
      out.push(row);
    };
    for (const relay of doc.relays) {
      if (!isObject(relay)) continue;
      const lastSeen = typeof relay.last_seen === 'string' ? relay.last_seen.slice(0, 10) : undefined;
      const or = list_(relay.or_addresses).map(orAddress);
      // The first OR address is where the relay registered; it exits from it unless its
      // exit_addresses say otherwise (Onionoo lists only addresses that differ).
      const v4 = or.find((a) => a?.includes('.'));
      if (v4) add(v4, lastSeen);
      for (const a of list_(relay.exit_addresses)) if (typeof a === 'string') add(a, lastSeen);
      // An IPv6 OR address is an exit address only where the relay exits over IPv6 at all.
      const v6Policy = relay.exit_policy_v6_summary;
      if (isObject(v6Policy) && Array.isArray(v6Policy.accept) && v6Policy.accept.length > 0) {
        for (const a of or) if (a?.includes(':')) add(a, lastSeen);
      }
    }
    return out;
  },
};

const mullvadRelays: FeedFormatDef = {
  name: 'mullvad-relays',
  summary: "Mullvad's relay list JSON ([{hostname, ipv4_addr_in, ipv6_addr_in, …}]): vpn, provider Mullvad, method server_list",
  defaultCategory: 'vpn',
  detect: (text) => /^\s*\[/.test(text) && /"ipv4_addr_in"\s*:/.test(text),
  rows({ text }) {
    const doc = parseJson(text);
    if (!Array.isArray(doc)) throw new FormatError(0, "Mullvad's relay list is a JSON array");
    return addressRows(
      text,
      doc.flatMap((r) => (isObject(r) ? [r.ipv4_addr_in, r.ipv6_addr_in] : [])),
      { provider: 'Mullvad', method: 'server_list' },
    );
  },
};

const nordvpnServers: FeedFormatDef = {
  name: 'nordvpn-servers',
  summary: "NordVPN's server API JSON ([{hostname, station, ipv6_station, ips: [{ip: {ip}}], …}]): vpn, provider NordVPN, method server_list",
  defaultCategory: 'vpn',
  detect: (text) => /^\s*\[/.test(text) && /"station"\s*:/.test(text) && /"hostname"\s*:/.test(text),
  rows({ text }) {
    const doc = parseJson(text);
    if (!Array.isArray(doc)) throw new FormatError(0, "NordVPN's server list is a JSON array");
    return addressRows(
      text,
      doc.flatMap((s) => (isObject(s) ? [s.station, s.ipv6_station, ...list_(s.ips).map((i) => (isObject(i) && isObject(i.ip) ? i.ip.ip : undefined))] : [])),
      { provider: 'NordVPN', method: 'server_list' },
    );
  },
};

const piaServers: FeedFormatDef = {
  name: 'pia-servers',
  summary:
    "Private Internet Access's server list (a JSON line {groups, regions: [{servers: {protocol: [{ip, cn}]}}]}, then its signature): vpn, provider Private Internet Access, method server_list",
  defaultCategory: 'vpn',
  detect: (text) => /^\s*\{\s*"groups"\s*:/.test(text) && /"regions"\s*:/.test(text),
  rows({ text }) {
    // The document is the first line; what follows is a signature over it.
    const end = text.indexOf('\n');
    const json = end < 0 ? text : text.slice(0, end);
    const doc = parseJson(json);
    if (!isObject(doc) || !Array.isArray(doc.regions)) throw new FormatError(1, "PIA's server list needs a regions array");
    const ips = doc.regions.flatMap((region) =>
      isObject(region) && isObject(region.servers)
        ? Object.values(region.servers).flatMap((servers) => list_(servers).map((s) => (isObject(s) ? s.ip : undefined)))
        : [],
    );
    return addressRows(json, ips, { provider: 'Private Internet Access', method: 'server_list' });
  },
};

const ivpnServers: FeedFormatDef = {
  name: 'ivpn-servers',
  summary: "IVPN's servers.json ({wireguard: [{gateway, hosts: [{host, ipv6: {host}}]}], openvpn: […]}): vpn, provider IVPN, method server_list",
  defaultCategory: 'vpn',
  detect: (text) => looksJson(text) && /"wireguard"\s*:\s*\[/.test(text) && /"gateway"\s*:/.test(text) && /"hosts"\s*:/.test(text),
  rows({ text }) {
    const doc = parseJson(text);
    if (!isObject(doc)) throw new FormatError(0, "IVPN's server list is a JSON object");
    const hosts = ['wireguard', 'openvpn'].flatMap((protocol) => list_(doc[protocol]).flatMap((g) => (isObject(g) ? list_(g.hosts) : [])));
    return addressRows(
      text,
      hosts.flatMap((h) => (isObject(h) ? [h.host, isObject(h.ipv6) ? h.ipv6.host : undefined] : [])),
      { provider: 'IVPN', method: 'server_list' },
    );
  },
};

const addressArray: FeedFormatDef = {
  name: 'address-array',
  summary: "a JSON array of address strings, or the same as XML <ArrayOfString> (bunny.net's edge server list): the category and provider you give",
  detect: (text) => /^\s*\[\s*"[0-9a-fA-F:.]+(\/\d+)?"\s*[,\]]/.test(text) || /^\s*(<\?xml[^>]*>\s*)?<ArrayOfString\b/.test(text),
  rows({ text }) {
    if (/^\s*\[/.test(text)) {
      const doc = parseJson(text);
      if (!Array.isArray(doc)) throw new FormatError(0, 'expected a JSON array');
      return addressRows(text, doc, undefined);
    }
    const out: FormatRow[] = [];
    text.split(/\r?\n/).forEach((l, i) => {
      for (const m of l.matchAll(/<string>\s*([^<\s]+)\s*<\/string>/g)) out.push({ line: i + 1, network: m[1] });
    });
    return out;
  },
};

const vultrGeofeed: FeedFormatDef = {
  name: 'vultr-geofeed',
  summary: "Vultr's geofeed JSON ({subnets: [{ip_prefix, alpha2code, region, …}]}): hosting, provider Vultr",
  defaultCategory: 'hosting',
  detect: (text) => looksJson(text) && /"subnets"\s*:\s*\[/.test(text) && /"ip_prefix"\s*:/.test(text),
  rows({ text }) {
    const doc = parseJson(text);
    if (!isObject(doc) || !Array.isArray(doc.subnets)) throw new FormatError(0, "Vultr's geofeed needs a subnets array");
    return addressRows(
      text,
      doc.subnets.map((s) => (isObject(s) ? s.ip_prefix : undefined)),
      { provider: 'Vultr' },
    );
  },
};

const zscalerCenr: FeedFormatDef = {
  name: 'zscaler-cenr',
  summary: 'Zscaler\'s CENR JSON ({"zscaler.net": {"continent : …": {"city : …": [{range, …}]}}}): hosting, provider Zscaler',
  defaultCategory: 'hosting',
  detect: (text) => looksJson(text) && /"continent : /.test(text) && /"range"\s*:/.test(text),
  rows({ text }) {
    const doc = parseJson(text);
    if (!isObject(doc)) throw new FormatError(0, 'expected a JSON object');
    const ranges: unknown[] = [];
    for (const cloud of Object.values(doc)) {
      if (!isObject(cloud)) continue;
      for (const continent of Object.values(cloud)) {
        if (!isObject(continent)) continue;
        for (const city of Object.values(continent)) for (const r of list_(city)) if (isObject(r)) ranges.push(r.range);
      }
    }
    return addressRows(text, ranges, { provider: 'Zscaler' });
  },
};

export const FIRST_PARTY_FORMATS: readonly FeedFormatDef[] = [
  onionoo,
  mullvadRelays,
  nordvpnServers,
  piaServers,
  ivpnServers,
  addressArray,
  vultrGeofeed,
  zscalerCenr,
];
