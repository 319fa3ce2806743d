// The quality report of a real build (`npm run real-build` prints it; the real-build test holds
// it to its thresholds). Computed from the imported files themselves:
// - recall: every VPN provider's server list answers is_vpn with that provider (per provider);
// - precision, held out: random addresses of the cloud and CDN owners' own published space
//   that no VPN server list holds should not answer is_vpn;
// - public resolvers are not VPNs.

import path from 'node:path';
import type { EvidenceKind } from '../src/feeds/evidence.js';
import { NOT_IN_CATEGORY, readFeed, type StoredRange } from '../src/feeds/feed-store.js';
import type { RangeIndex } from '../src/index/range-index.js';
import { answerObject } from '../src/lookup/answer.js';
import { TIER_MAX } from '../src/model/projection.js';
import { NOT_ADDRESS, ParsedAddress, parseAddress } from '../src/net/address.js';
import { isBogonV4, isBogonV6 } from '../src/net/bogons.js';
import { formatBigIPv4, formatBigIPv6 } from '../src/net/network.js';

export const PUBLIC_RESOLVERS = [
  '8.8.8.8',
  '8.8.4.4',
  '1.1.1.1',
  '1.0.0.1',
  '9.9.9.9',
  '149.112.112.112',
  '208.67.222.222',
  '2001:4860:4860::8888',
  '2606:4700:4700::1111',
  '2620:fe::fe',
];
const OWNER_SAMPLE = 3000;

export interface QualitySource {
  name: string;
  rel: string;
  evidence: EvidenceKind;
  details: { provider?: string };
}

export interface Quality {
  /** Per VPN provider: server-list addresses, and how many answer is_vpn with that provider. */
  providers: { provider: string; listed: number; answered: number }[];
  /** Held out: sampled owner-space addresses outside every server list, and how many answer is_vpn. */
  ownerSpace: { sampled: number; vpn: number; examples: string[] };
  resolvers: { ip: string; is_vpn: boolean }[];
}

const parsed = new ParsedAddress();

/** The max-tier answer of an address, as GET /{ip} writes it. */
export const classify = (index: RangeIndex, ip: string): Record<string, unknown> => answerObject(index, ip, TIER_MAX)!;

/** IPv4 keys above every IPv6 one, so one list of bigint ranges holds both families. */
const V4_BASE = 1n << 128n;
const keyOf = (family: number, v: bigint): bigint => (family === 4 ? v + V4_BASE : v);
const textOf = (family: number, v: bigint): string => (family === 4 ? formatBigIPv4(v) : formatBigIPv6(v));

function ranges(dataDir: string, s: QualitySource): StoredRange[] {
  return [...readFeed(path.join(dataDir, 'feeds', `${s.name}.feed`))].filter((r) => r.detail !== NOT_IN_CATEGORY);
}

export function qualityOf(index: RangeIndex, dataDir: string, sources: readonly QualitySource[]): Quality {
  const byProvider = new Map<string, { listed: number; answered: number }>();
  const servers: [bigint, bigint][] = [];
  const owners: StoredRange[] = [];
  for (const s of sources) {
    if (s.evidence === 'server_list') {
      const provider = s.details.provider ?? '(none)';
      const tally = byProvider.get(provider) ?? { listed: 0, answered: 0 };
      byProvider.set(provider, tally);
      for (const r of ranges(dataDir, s)) {
        servers.push([keyOf(r.family, BigInt(r.start)), keyOf(r.family, BigInt(r.end))]);
        const a = classify(index, textOf(r.family, BigInt(r.start)));
        tally.listed++;
        if (a.is_vpn === true && (a.vpn as { provider?: string }).provider === provider) tally.answered++;
      }
    } else if (s.evidence === 'owner' && /^(cloud|cdn)\//.test(s.rel)) owners.push(...ranges(dataDir, s));
  }
  // The union of the server lists' networks, disjoint and sorted, for a binary search.
  servers.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const merged: [bigint, bigint][] = [];
  for (const [a, b] of servers) {
    const last = merged[merged.length - 1];
    if (!last || a > last[1] + 1n) merged.push([a, b]);
    else if (b > last[1]) last[1] = b; // bigints: no Math.max
  }
  const inServers = (k: bigint): boolean => {
    let lo = 0;
    let hi = merged.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (merged[mid][0] <= k) lo = mid + 1;
      else hi = mid - 1;
    }
    return hi >= 0 && k <= merged[hi][1];
  };
  let seed = 20261122;
  const random = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const owner = { sampled: 0, vpn: 0, examples: [] as string[] };
  for (let tries = 0; owner.sampled < OWNER_SAMPLE && owners.length > 0 && tries < OWNER_SAMPLE * 20; tries++) {
    const r = owners[Math.floor(random() * owners.length)];
    const size = BigInt(r.end) - BigInt(r.start) + 1n;
    const at = BigInt(r.start) + (((BigInt(Math.floor(random() * 2 ** 31)) << 31n) | BigInt(Math.floor(random() * 2 ** 31))) % size);
    if (inServers(keyOf(r.family, at))) continue;
    const ip = textOf(r.family, at);
    if (parseAddress(ip, 0, ip.length, parsed) === NOT_ADDRESS || (r.family === 4 ? isBogonV4(parsed.v4) : isBogonV6(parsed.w))) continue;
    owner.sampled++;
    const a = classify(index, ip);
    if (a.is_vpn === true) {
      owner.vpn++;
      if (owner.examples.length < 5) owner.examples.push(`${ip} ${JSON.stringify(a.vpn)}`);
    }
  }
  return {
    providers: [...byProvider].map(([provider, t]) => ({ provider, ...t })).sort((a, b) => b.listed - a.listed),
    ownerSpace: owner,
    resolvers: PUBLIC_RESOLVERS.map((ip) => ({ ip, is_vpn: classify(index, ip).is_vpn === true })),
  };
}

/** The report's lines. */
export function qualityLines(q: Quality): string[] {
  const pct = (a: number, b: number): string => `${b === 0 ? '–' : ((100 * a) / b).toFixed(2)} %`;
  return [
    'quality (computed from the imported files):',
    `  VPN server lists answered is_vpn with their provider: ${q.providers.map((p) => `${p.provider} ${p.answered}/${p.listed}`).join(', ')}`,
    `  held out, cloud and CDN owners' own space outside every VPN server list: ${q.ownerSpace.vpn} of ${q.ownerSpace.sampled} random addresses answer is_vpn (${pct(q.ownerSpace.vpn, q.ownerSpace.sampled)})${q.ownerSpace.examples.length ? `, e.g. ${q.ownerSpace.examples.join('; ')}` : ''}`,
    `  public resolvers answering is_vpn: ${
      q.resolvers
        .filter((r) => r.is_vpn)
        .map((r) => r.ip)
        .join(', ') || 'none'
    } (of ${q.resolvers.length})`,
  ];
}
