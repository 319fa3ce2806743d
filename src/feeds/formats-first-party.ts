// Formats of operators' own publications: the Tor Project's Onionoo, the VPN
// providers' server lists (Mullvad, NordVPN, Private Internet Access, IVPN, AirVPN, Windscribe,
// RiseupVPN, PrivadoVPN, VPN Gate), bunny.net's edge list, Vultr's geofeed JSON and Zscaler's
// CENR document. Each reads the layout its operator serves, every server address in it; the
// registry names where that layout is documented, and test/fixtures/upstream holds a sample of
// each in that layout.

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

/**
 * A VPN provider's JSON server list: `addresses` picks every server address out of the parsed
 * document, or answers null where the document is not of that shape (`needs` says what it lacks).
 */
function jsonServerList(o: {
  name: string;
  summary: string;
  detect: (text: string) => boolean;
  provider?: string;
  needs: string;
  addresses: (doc: unknown) => unknown[] | null;
}): FeedFormatDef {
  const details = o.provider ? { provider: o.provider, method: 'server_list' } : { method: 'server_list' };
  return {
    name: o.name,
    summary: o.summary,
    defaultCategory: 'vpn',
    detect: o.detect,
    rows({ text }) {
      const found = o.addresses(parseJson(text));
      if (found === null) throw new FormatError(0, o.needs);
      return addressRows(text, found, details);
    },
  };
}

const mullvadRelays = jsonServerList({
  name: 'mullvad-relays',
  summary:
    "Mullvad's relay list JSON ([{hostname, active, ipv4_addr_in, ipv6_addr_in, …}]): the active relays' addresses (one marked inactive is out of service), vpn, provider Mullvad, method server_list",
  detect: (text) => /^\s*\[/.test(text) && /"ipv4_addr_in"\s*:/.test(text),
  provider: 'Mullvad',
  needs: "Mullvad's relay list is a JSON array",
  addresses: (doc) => (Array.isArray(doc) ? doc.flatMap((r) => (isObject(r) && r.active !== false ? [r.ipv4_addr_in, r.ipv6_addr_in] : [])) : null),
});

const nordvpnServers = jsonServerList({
  name: 'nordvpn-servers',
  summary:
    "NordVPN's server API JSON, v2 ({servers: [{hostname, station, station_ipv6, ips: [{ip: {ip}}]}], groups, …}) or v1 ([{hostname, station, ipv6_station, ips, …}]): vpn, provider NordVPN, method server_list",
  detect: (text) => looksJson(text) && /"station"\s*:/.test(text) && /"hostname"\s*:/.test(text),
  provider: 'NordVPN',
  needs: "NordVPN's server list is a JSON array (v1) or an object with a servers array (v2)",
  addresses(doc) {
    const servers = Array.isArray(doc) ? doc : isObject(doc) ? doc.servers : undefined;
    if (!Array.isArray(servers)) return null;
    return servers.flatMap((s) =>
      isObject(s) ? [s.station, s.station_ipv6, s.ipv6_station, ...list_(s.ips).map((i) => (isObject(i) && isObject(i.ip) ? i.ip.ip : undefined))] : [],
    );
  },
});

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

const ivpnServers = jsonServerList({
  name: 'ivpn-servers',
  summary:
    "IVPN's servers.json ({wireguard: [{gateway, hosts: [{host, v2ray, ipv6: {host}}]}], openvpn: […], config}): every server's address and its V2Ray address (the API's own addresses in config are not servers), vpn, provider IVPN, method server_list",
  detect: (text) => looksJson(text) && /"wireguard"\s*:\s*\[/.test(text) && /"gateway"\s*:/.test(text) && /"hosts"\s*:/.test(text),
  provider: 'IVPN',
  needs: "IVPN's server list is a JSON object",
  addresses(doc) {
    if (!isObject(doc)) return null;
    const hosts = ['wireguard', 'openvpn'].flatMap((protocol) => list_(doc[protocol]).flatMap((g) => (isObject(g) ? list_(g.hosts) : [])));
    return hosts.flatMap((h) => (isObject(h) ? [h.host, h.v2ray, isObject(h.ipv6) ? h.ipv6.host : undefined] : []));
  },
});

const AIRVPN_FIELDS = ['ip_v4_in1', 'ip_v4_in2', 'ip_v4_in3', 'ip_v4_in4', 'ip_v6_in1', 'ip_v6_in2', 'ip_v6_in3', 'ip_v6_in4'];
const airvpnStatus = jsonServerList({
  name: 'airvpn-status',
  summary:
    "AirVPN's status API ({servers: [{public_name, ip_v4_in1…4, ip_v6_in1…4, health, …}], …}): each server's entry addresses, vpn, provider AirVPN, method server_list",
  detect: (text) => looksJson(text) && /"servers"\s*:\s*\[/.test(text) && /"ip_v4_in1"\s*:/.test(text),
  provider: 'AirVPN',
  needs: "AirVPN's status needs a servers array",
  addresses: (doc) => (isObject(doc) && Array.isArray(doc.servers) ? doc.servers.flatMap((s) => (isObject(s) ? AIRVPN_FIELDS.map((f) => s[f]) : [])) : null),
});

const windscribeServers = jsonServerList({
  name: 'windscribe-servers',
  summary:
    "Windscribe's server list ({data: [{name, groups: [{city, nodes: [{hostname, ip, ip2, ip3}]}]}]}): every node's addresses, vpn, provider Windscribe, method server_list",
  detect: (text) => looksJson(text) && /"data"\s*:\s*\[/.test(text) && /"nodes"\s*:/.test(text) && /"ip2"\s*:/.test(text),
  provider: 'Windscribe',
  needs: "Windscribe's server list needs a data array",
  addresses(doc) {
    if (!isObject(doc) || !Array.isArray(doc.data)) return null;
    const nodes = doc.data.flatMap((region) => (isObject(region) ? list_(region.groups).flatMap((g) => (isObject(g) ? list_(g.nodes) : [])) : []));
    return nodes.flatMap((n) => (isObject(n) ? [n.ip, n.ip2, n.ip3] : []));
  },
});

const leapEipService = jsonServerList({
  name: 'leap-eip-service',
  summary:
    "a LEAP provider's eip-service.json (RiseupVPN's: {gateways: [{host, ip_address, ip_address6, location, capabilities}], …}): every gateway's addresses, vpn, method server_list, the provider you give",
  detect: (text) => looksJson(text) && /"gateways"\s*:\s*\[/.test(text) && /"ip_address"\s*:/.test(text),
  needs: 'an eip-service document needs a gateways array',
  addresses: (doc) => (isObject(doc) && Array.isArray(doc.gateways) ? doc.gateways.flatMap((g) => (isObject(g) ? [g.ip_address, g.ip_address6] : [])) : null),
});

const privadoServers = jsonServerList({
  name: 'privado-servers',
  summary:
    "PrivadoVPN's servers_export.json ({servers: [{country, city, hostname, ip}]}): every server's address, vpn, provider PrivadoVPN, method server_list",
  detect: (text) => looksJson(text) && /"servers"\s*:\s*\[/.test(text) && /"hostname"\s*:/.test(text) && /"ip"\s*:/.test(text) && !/"station"\s*:/.test(text),
  provider: 'PrivadoVPN',
  needs: "PrivadoVPN's export needs a servers array",
  addresses: (doc) => (isObject(doc) && Array.isArray(doc.servers) ? doc.servers.map((s) => (isObject(s) ? s.ip : undefined)) : null),
});

/** VPN Gate's CSV: `*vpn_servers`, a `#HostName,IP,…` header, one row per volunteer server, `*`. */
const vpngateCsv: FeedFormatDef = {
  name: 'vpngate-csv',
  summary:
    "VPN Gate's server list (*vpn_servers, #HostName,IP,Score,…,OpenVPN_ConfigData_Base64, one row per volunteer server, *): the IP column, vpn, provider VPN Gate, method server_list",
  defaultCategory: 'vpn',
  detect: (text) => /^\*vpn_servers\r?\n#HostName,IP,/.test(text),
  rows({ text }) {
    const out: FormatRow[] = [];
    const details = { provider: 'VPN Gate', method: 'server_list' };
    text.split(/\r?\n/).forEach((line, i) => {
      if (line === '' || line.startsWith('*') || line.startsWith('#')) return;
      // HostName then IP: neither holds a comma, whatever the later columns quote.
      const first = line.indexOf(',');
      const second = line.indexOf(',', first + 1);
      if (first < 0 || second < 0) throw new FormatError(i + 1, 'a VPN Gate row needs HostName,IP,… columns');
      out.push({ line: i + 1, network: line.slice(first + 1, second), details });
    });
    return out;
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
  airvpnStatus,
  windscribeServers,
  leapEipService,
  privadoServers,
  vpngateCsv,
  addressArray,
  vultrGeofeed,
  zscalerCenr,
];
