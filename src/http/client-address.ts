// The address /myip reports: the TCP peer, or — when the peer is a trusted proxy — the
// client named in Forwarded (RFC 7239) or X-Forwarded-For, read right to left past
// further trusted proxies.

import { IPV4_MAPPED, NOT_ADDRESS, ParsedAddress, formatIPv4, normalisedText, parseAddress } from '../net/address.js';
import { inNetworks, type Network } from '../net/network.js';

/** Address part of one Forwarded `for=` value or X-Forwarded-For element, port and brackets removed. */
export function hopAddress(raw: string): string {
  let s = raw.trim();
  if (s.startsWith('"') && s.endsWith('"') && s.length >= 2) s = s.slice(1, -1);
  if (s.startsWith('[')) {
    const close = s.indexOf(']');
    return close > 0 ? s.slice(1, close) : s;
  }
  // IPv4 with a port: exactly one colon.
  const colon = s.indexOf(':');
  if (colon > 0 && s.indexOf(':', colon + 1) < 0) return s.slice(0, colon);
  return s;
}

/** Hops from a Forwarded header, in order (left = farthest). */
export function forwardedHops(header: string): string[] {
  const hops: string[] = [];
  for (const element of header.split(',')) {
    for (const pair of element.split(';')) {
      const eq = pair.indexOf('=');
      if (eq > 0 && pair.slice(0, eq).trim().toLowerCase() === 'for') hops.push(hopAddress(pair.slice(eq + 1)));
    }
  }
  return hops;
}

/**
 * The client address text for a request from `peer`. Returns the peer when it is not a
 * trusted proxy or the headers name no usable address; a forwarded address comes in any
 * spelling, so it is returned as the peer's would be written (IPv4-mapped as IPv4, IPv6 per
 * RFC 5952).
 */
export function clientAddress(peer: string, forwarded: string, xForwardedFor: string, trusted: readonly Network[]): string {
  const p = new ParsedAddress();
  if (!inNetworks(p, parseAddress(peer, 0, peer.length, p), trusted)) return peer;
  const hops = forwarded ? forwardedHops(forwarded) : xForwardedFor ? xForwardedFor.split(',').map(hopAddress) : [];
  let client = peer;
  for (let i = hops.length - 1; i >= 0; i--) {
    const kind = parseAddress(hops[i], 0, hops[i].length, p);
    if (kind === NOT_ADDRESS) break; // obfuscated or garbled: nothing further left is believable
    client = kind === IPV4_MAPPED ? formatIPv4(p.v4) : normalisedText(hops[i], 0, hops[i].length, p);
    if (!inNetworks(p, kind, trusted)) break;
  }
  return client;
}

/**
 * The origin (scheme://host) a trusted proxy says the client asked for: X-Forwarded-Proto and
 * X-Forwarded-Host, or Forwarded's proto= and host= (first element: the client's own hop).
 * Null when the peer is not a trusted proxy or the headers name no plausible origin, so a
 * client's own Host never reaches a link.
 */
export function forwardedOrigin(peer: string, forwarded: string, xProto: string, xHost: string, trusted: readonly Network[]): string | null {
  if (trusted.length === 0) return null;
  const p = new ParsedAddress();
  if (!inNetworks(p, parseAddress(peer, 0, peer.length, p), trusted)) return null;
  let proto = xProto.split(',')[0].trim().toLowerCase();
  let host = xHost.split(',')[0].trim();
  if (forwarded) {
    for (const pair of forwarded.split(',')[0].split(';')) {
      const eq = pair.indexOf('=');
      if (eq < 0) continue;
      const name = pair.slice(0, eq).trim().toLowerCase();
      const value = pair
        .slice(eq + 1)
        .trim()
        .replace(/^"(.*)"$/, '$1');
      if (name === 'proto') proto = value.toLowerCase();
      else if (name === 'host') host = value;
    }
  }
  if (proto !== 'http' && proto !== 'https') return null;
  // A host name or address with an optional port: nothing that could end or redirect the URL.
  if (!/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/.test(host)) return null;
  return `${proto}://${host}`;
}
