// Bogons (DESIGN.md §3): address space that no dataset can describe. Answered without a
// dataset lookup: every flag false, every detail {}.
//
// Source: the IANA IPv4 and IPv6 Special-Purpose Address Registries (entries whose
// "Globally Reachable" is False, and the deprecated 6to4 relay anycast block), multicast,
// and reserved space (240.0.0.0/4; for IPv6 everything outside 2000::/3 that IANA keeps
// "Reserved by IETF"). Entries the registries mark globally reachable stay lookups.

import { parseNetwork, type Network } from './network.js';

export const BOGON_IPV4_INCLUDE: readonly string[] = [
  '0.0.0.0/8', // "this network"
  '10.0.0.0/8', // private
  '100.64.0.0/10', // shared address space (CGNAT)
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local
  '172.16.0.0/12', // private
  '192.0.0.0/24', // IETF protocol assignments
  '192.0.2.0/24', // documentation TEST-NET-1
  '192.88.99.0/24', // deprecated 6to4 relay anycast
  '192.168.0.0/16', // private
  '198.18.0.0/15', // benchmarking
  '198.51.100.0/24', // documentation TEST-NET-2
  '203.0.113.0/24', // documentation TEST-NET-3
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, and 255.255.255.255 limited broadcast
];

/** Globally reachable holes inside the blocks above. */
export const BOGON_IPV4_EXCLUDE: readonly string[] = [
  '192.0.0.9/32', // Port Control Protocol anycast
  '192.0.0.10/32', // TURN anycast
];

export const BOGON_IPV6_INCLUDE: readonly string[] = [
  '::/8', // reserved by IETF: unspecified, loopback, IPv4-compatible, …
  '100::/8', // reserved by IETF, holds 100::/64 discard-only
  '200::/7',
  '400::/6',
  '800::/5',
  '1000::/4',
  '2001::/23', // IETF protocol assignments (Teredo, benchmarking, ORCHID, …)
  '2001:db8::/32', // documentation
  '3fff::/20', // documentation (RFC 9637)
  '4000::/3', // reserved by IETF (holds 5f00::/16 SRv6 SIDs)
  '6000::/3',
  '8000::/3',
  'a000::/3',
  'c000::/3',
  'e000::/4',
  'f000::/5',
  'f800::/6',
  'fc00::/7', // unique local
  'fe00::/9', // reserved by IETF
  'fe80::/10', // link-local
  'fec0::/10', // deprecated site-local
  'ff00::/8', // multicast
];

export const BOGON_IPV6_EXCLUDE: readonly string[] = [
  '64:ff9b::/96', // well-known NAT64 prefix: globally reachable
  '2001:1::1/128', // Port Control Protocol anycast
  '2001:1::2/128', // TURN anycast
  '2001:1::3/128', // DNS-SD service registration protocol anycast
  '2001:3::/32', // AMT
  '2001:4:112::/48', // AS112-v6
  '2001:20::/28', // ORCHIDv2
  '2001:30::/28', // drone remote ID
];

/** Disjoint, sorted [start, end] ranges of include minus exclude. */
export function subtractRanges(include: readonly string[], exclude: readonly string[]): Network[] {
  const parse = (t: string): Network => {
    const r = parseNetwork(t);
    if (!r.ok) throw new Error(`bad built-in network ${t}: ${r.reason}`);
    return r.network;
  };
  let ranges = include.map(parse).sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
  const merged: Network[] = [];
  for (const r of ranges) {
    const last = merged[merged.length - 1];
    if (last && r.start <= last.end + 1n) {
      if (r.end > last.end) last.end = r.end;
    } else merged.push({ ...r });
  }
  ranges = merged;
  for (const hole of exclude.map(parse)) {
    const next: Network[] = [];
    for (const r of ranges) {
      if (hole.end < r.start || hole.start > r.end) {
        next.push(r);
        continue;
      }
      if (hole.start > r.start) next.push({ family: r.family, start: r.start, end: hole.start - 1n });
      if (hole.end < r.end) next.push({ family: r.family, start: hole.end + 1n, end: r.end });
    }
    ranges = next;
  }
  return ranges;
}

export const BOGON_RANGES_V4 = subtractRanges(BOGON_IPV4_INCLUDE, BOGON_IPV4_EXCLUDE);
export const BOGON_RANGES_V6 = subtractRanges(BOGON_IPV6_INCLUDE, BOGON_IPV6_EXCLUDE);

// Compiled forms for the lookup path: flat typed arrays, searched without allocation.
const v4Bounds = new Float64Array(BOGON_RANGES_V4.length * 2);
BOGON_RANGES_V4.forEach((r, i) => {
  v4Bounds[2 * i] = Number(r.start);
  v4Bounds[2 * i + 1] = Number(r.end);
});
const v6Bounds = new Uint32Array(BOGON_RANGES_V6.length * 8);
BOGON_RANGES_V6.forEach((r, i) => {
  for (let k = 0; k < 4; k++) {
    v6Bounds[8 * i + k] = Number((r.start >> BigInt(96 - 32 * k)) & 0xffffffffn);
    v6Bounds[8 * i + 4 + k] = Number((r.end >> BigInt(96 - 32 * k)) & 0xffffffffn);
  }
});

/**
 * Per top 16 bits of an address: CLEAN (no bogon inside), BOGON (all bogon) or MIXED (scan
 * the ranges). Almost every lookup is settled by one byte.
 */
const BOGON = 1;
const MIXED = 2;
function topTable(ranges: readonly Network[], bits: number): Uint8Array {
  const table = new Uint8Array(65536);
  const shift = BigInt(bits - 16);
  const span = 1n << shift;
  for (const r of ranges) {
    const first = Number(r.start >> shift);
    const last = Number(r.end >> shift);
    for (let h = first; h <= last; h++) {
      const whole = r.start <= BigInt(h) * span && r.end >= BigInt(h + 1) * span - 1n;
      if (whole) table[h] = BOGON;
      else table[h] = MIXED;
    }
  }
  return table;
}
const v4Top = topTable(BOGON_RANGES_V4, 32);
const v6Top = topTable(BOGON_RANGES_V6, 128);

export function isBogonV4(a: number): boolean {
  const top = v4Top[a >>> 16];
  if (top !== MIXED) return top === BOGON;
  // Ranges are few and sorted: a linear scan that stops early beats a search here.
  for (let i = 0; i < v4Bounds.length; i += 2) {
    if (a < v4Bounds[i]) return false;
    if (a <= v4Bounds[i + 1]) return true;
  }
  return false;
}

/** -1, 0, 1 as the address w compares with the bound at v6Bounds[at..at+3]. */
function compare6(w: Uint32Array, at: number): number {
  for (let k = 0; k < 4; k++) {
    const a = w[k];
    const b = v6Bounds[at + k];
    if (a !== b) return a < b ? -1 : 1;
  }
  return 0;
}

export function isBogonV6(w: Uint32Array): boolean {
  const top = v6Top[w[0] >>> 16];
  if (top !== MIXED) return top === BOGON;
  for (let i = 0; i < v6Bounds.length; i += 8) {
    if (compare6(w, i) < 0) return false;
    if (compare6(w, i + 4) <= 0) return true;
  }
  return false;
}
