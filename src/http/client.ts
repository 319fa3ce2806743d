// Who is asking, for accounting and /myip: the TCP peer, or past trusted proxies the client
// they forward (client-address.ts).
//
// The peer is read as binary: on this uWebSockets.js build getRemoteAddressAsText costs a
// sprintf plus a second conversion in JS, and keyless lookups need the peer on every request.
// A keyless client is identified by its IPv4 address as a number (a cheap map key); its text
// is made only when it is first seen or shown.

import type { HttpRequest, HttpResponse } from './server/types.js';
import { IPV6, ParsedAddress, formatIPv4, formatIPv6Groups, parseAddress } from '../net/address.js';
import type { Network } from '../net/network.js';
import { clientAddress, forwardedOrigin } from './client-address.js';

/** The client of the request being handled; valid only while its handler runs. */
export interface Client {
  /**
   * Who is counted for keyless limits: the IPv4 address as a number, or the IPv6 network of
   * the keyless prefix length as text (one host of an IPv6 network holds a whole /64).
   */
  id(): number | string;
  /** Dotted quad for IPv4 (IPv4-mapped peers included), RFC 5952 text for IPv6. */
  text(): string;
}

/** The peer as an IPv4 number (an IPv4-mapped peer too), or -1 for an IPv6 peer. */
function peerV4(bytes: Uint8Array): number {
  if (bytes.length === 4) return ((bytes[0] << 24) | (bytes[1] << 16) | (bytes[2] << 8) | bytes[3]) >>> 0;
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return -1;
  if (bytes[10] !== 0xff || bytes[11] !== 0xff) return -1;
  return ((bytes[12] << 24) | (bytes[13] << 16) | (bytes[14] << 8) | bytes[15]) >>> 0;
}

const groups = new Uint16Array(8);
const parsed = new ParsedAddress();

/** groups[] as the network of `prefix` bits, written `text/prefix` (RFC 5952). */
function maskedGroups(prefix: number): string {
  for (let i = 0; i < 8; i++) {
    const keep = Math.max(0, Math.min(16, prefix - 16 * i));
    groups[i] &= (0xffff << (16 - keep)) & 0xffff;
  }
  return `${formatIPv6Groups(groups)}/${prefix}`;
}

/** The IPv6 network of `prefix` bits holding the address text (other text as it is). */
export function networkOf(text: string, prefix: number): string {
  if (parseAddress(text, 0, text.length, parsed) !== IPV6) return text;
  for (let i = 0; i < 4; i++) {
    groups[2 * i] = parsed.w[i] >>> 16;
    groups[2 * i + 1] = parsed.w[i] & 0xffff;
  }
  return maskedGroups(prefix);
}

/** The IPv6 network of `prefix` bits holding a 16-byte peer. */
function peerNetwork(bytes: Uint8Array, prefix: number): string {
  for (let i = 0; i < 8; i++) groups[i] = (bytes[2 * i] << 8) | bytes[2 * i + 1];
  return maskedGroups(prefix);
}

/** The peer address text of an uWS getRemoteAddress() buffer (4 or 16 bytes). */
export function peerText(bytes: Uint8Array): string {
  const v4 = peerV4(bytes);
  if (v4 >= 0) return formatIPv4(v4);
  for (let i = 0; i < 8; i++) groups[i] = (bytes[2 * i] << 8) | bytes[2 * i + 1];
  return formatIPv6Groups(groups);
}

/**
 * One per thread, reset for each request: reads the peer (and forwarding headers) at most
 * once, and only if accounting or the handler asks.
 */
export class RequestClient implements Client {
  private res: HttpResponse | null = null;
  private req: HttpRequest | null = null;
  private bytes: Uint8Array | null = null;
  private clientText: string | null = null;

  constructor(
    private readonly trustedProxies: readonly Network[],
    private readonly ipv6Prefix = 64,
  ) {}

  /** Starts a request; returns this, for use in the same synchronous handler only. */
  of(res: HttpResponse, req: HttpRequest): this {
    this.res = res;
    this.req = req;
    this.bytes = null;
    this.clientText = null;
    return this;
  }

  private peer(): Uint8Array {
    return (this.bytes ??= new Uint8Array(this.res!.getRemoteAddress()));
  }

  id(): number | string {
    if (this.trustedProxies.length > 0) {
      const t = this.text();
      return t.includes(':') ? networkOf(t, this.ipv6Prefix) : t;
    }
    const peer = this.peer();
    const v4 = peerV4(peer);
    return v4 >= 0 ? v4 : peerNetwork(peer, this.ipv6Prefix);
  }

  /**
   * The origin for absolute links a trusted proxy forwarded (see forwardedOrigin), or null.
   * Reads headers: for use in the same synchronous handler only.
   */
  forwardedOrigin(): string | null {
    if (this.trustedProxies.length === 0) return null;
    const req = this.req!;
    return forwardedOrigin(
      peerText(this.peer()),
      req.getHeader('forwarded'),
      req.getHeader('x-forwarded-proto'),
      req.getHeader('x-forwarded-host'),
      this.trustedProxies,
    );
  }

  text(): string {
    if (this.clientText === null) {
      const peer = peerText(this.peer());
      this.clientText =
        this.trustedProxies.length === 0
          ? peer
          : clientAddress(peer, this.req!.getHeader('forwarded'), this.req!.getHeader('x-forwarded-for'), this.trustedProxies);
    }
    return this.clientText;
  }
}

/** A client read once and kept: what a request that waits past its handler carries with it. */
export class KeptClient implements Client {
  private readonly keptId: number | string;
  private readonly keptText: string;

  constructor(c: Client) {
    this.keptId = c.id();
    this.keptText = c.text();
  }

  id(): number | string {
    return this.keptId;
  }

  text(): string {
    return this.keptText;
  }
}
