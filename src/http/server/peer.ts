// The TCP peer as uWS gives it, for servers that report it as text (node:http, Bun.serve).

import { IPV4, IPV4_MAPPED, IPV6, ParsedAddress, parseAddress } from '../../net/address.js';

const peer = new ParsedAddress();

/** A peer address as uWS gives it: 4 bytes for IPv4 (mapped too), else 16 (zeros when unknown). */
export function peerBytes(text: string | undefined): ArrayBuffer {
  const t = text ?? '';
  const kind = parseAddress(t, 0, t.length, peer);
  if (kind === IPV4 || kind === IPV4_MAPPED) {
    const v = peer.v4;
    return new Uint8Array([v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255]).buffer;
  }
  const out = new DataView(new ArrayBuffer(16));
  if (kind === IPV6) for (let i = 0; i < 4; i++) out.setUint32(4 * i, peer.w[i]);
  return out.buffer;
}
