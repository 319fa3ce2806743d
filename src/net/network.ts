// Networks as they appear in feeds: a CIDR, an inclusive range `a-b`, or one address.
// Cold path (import, build, configuration): bigints are fine here.

import { IPV4, IPV4_MAPPED, NOT_ADDRESS, ParsedAddress, addressBigInt, formatIPv6Groups, parseAddress, type AddressKind } from './address.js';

export type Family = 4 | 6;

export interface Network {
  family: Family;
  /** First and last address, inclusive, as integers within the family. */
  start: bigint;
  end: bigint;
}

export type NetworkResult = { ok: true; network: Network } | { ok: false; reason: string };

const MAPPED_BASE = 0xffff_0000_0000n;
const MAPPED_LAST = 0xffff_ffff_ffffn;

export function familyBits(family: Family): number {
  return family === 4 ? 32 : 128;
}

function parseOne(text: string, p: ParsedAddress): { family: Family; value: bigint; mapped: boolean } | null {
  const kind = parseAddress(text, 0, text.length, p);
  if (kind === NOT_ADDRESS) return null;
  const family: Family = kind === IPV4 ? 4 : 6;
  const w = p.w;
  const value = kind === IPV4 ? BigInt(p.v4) : (BigInt(w[0]) << 96n) | (BigInt(w[1]) << 64n) | (BigInt(w[2]) << 32n) | BigInt(w[3]);
  return { family, value, mapped: kind === IPV4_MAPPED };
}

/** An IPv6 range lying inside ::ffff:0:0/96 is the IPv4 range it maps. */
function unmap(n: Network): Network {
  if (n.family === 6 && n.start >= MAPPED_BASE && n.end <= MAPPED_LAST) {
    return { family: 4, start: n.start - MAPPED_BASE, end: n.end - MAPPED_BASE };
  }
  return n;
}

export function parseNetwork(raw: string): NetworkResult {
  const text = raw.trim();
  const p = new ParsedAddress();
  const slash = text.indexOf('/');
  if (slash >= 0) {
    const addr = parseOne(text.slice(0, slash), p);
    if (!addr) return { ok: false, reason: `not a network address: ${JSON.stringify(text.slice(0, slash))}` };
    const prefixText = text.slice(slash + 1);
    const bits = familyBits(addr.family);
    if (!/^(0|[1-9][0-9]{0,2})$/.test(prefixText) || Number(prefixText) > bits) {
      return { ok: false, reason: `prefix length must be an integer 0..${bits}: ${JSON.stringify(prefixText)}` };
    }
    const prefix = Number(prefixText);
    const hostBits = BigInt(bits - prefix);
    const hostMask = (1n << hostBits) - 1n;
    if ((addr.value & hostMask) !== 0n) {
      const base = addr.value & ~hostMask;
      return { ok: false, reason: `host bits are set in ${text} (the network is ${formatNetworkStart(addr.family, base)}/${prefix})` };
    }
    return { ok: true, network: unmap({ family: addr.family, start: addr.value, end: addr.value | hostMask }) };
  }
  const dash = text.indexOf('-');
  if (dash >= 0) {
    const a = parseOne(text.slice(0, dash).trim(), p);
    const b = parseOne(text.slice(dash + 1).trim(), p);
    if (!a || !b) return { ok: false, reason: `not an address, CIDR or range: ${JSON.stringify(text)}` };
    if (a.family !== b.family) return { ok: false, reason: `range mixes IPv4 and IPv6: ${JSON.stringify(text)}` };
    if (a.value > b.value) return { ok: false, reason: `range ends before it starts: ${JSON.stringify(text)}` };
    return { ok: true, network: unmap({ family: a.family, start: a.value, end: b.value }) };
  }
  const one = parseOne(text, p);
  if (!one) return { ok: false, reason: `not an address, CIDR or range: ${JSON.stringify(text)}` };
  return { ok: true, network: unmap({ family: one.family, start: one.value, end: one.value }) };
}

function formatNetworkStart(family: Family, value: bigint): string {
  return family === 4 ? formatBigIPv4(value) : formatBigIPv6(value);
}

export function formatBigIPv4(v: bigint): string {
  const n = Number(v);
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

export function formatBigIPv6(v: bigint): string {
  const g: number[] = [];
  for (let i = 7; i >= 0; i--) g.push(Number((v >> BigInt(i * 16)) & 0xffffn));
  return formatIPv6Groups(g);
}

export function formatAddress(family: Family, v: bigint): string {
  return family === 4 ? formatBigIPv4(v) : formatBigIPv6(v);
}

/** Whether the parsed address (of the given kind; IPv4-mapped counts as IPv4) lies in one of the networks. */
export function inNetworks(p: ParsedAddress, kind: AddressKind, networks: readonly Network[]): boolean {
  if (networks.length === 0 || kind === NOT_ADDRESS) return false;
  const family = kind === 6 ? 6 : 4;
  const v = addressBigInt(p);
  return networks.some((n) => n.family === family && v >= n.start && v <= n.end);
}

/** The networks of CIDR texts already validated (a key's allowed ranges); any that fail to parse are left out. */
export function networksOf(cidrs: readonly string[]): Network[] {
  const out: Network[] = [];
  for (const c of cidrs) {
    const n = parseNetwork(c);
    if (n.ok) out.push(n.network);
  }
  return out;
}

/** Every network of `inner` lies inside one of `outer`. */
export function networksWithin(inner: readonly Network[], outer: readonly Network[]): boolean {
  return inner.every((n) => outer.some((o) => o.family === n.family && o.start <= n.start && n.end <= o.end));
}
