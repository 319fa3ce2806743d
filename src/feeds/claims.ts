// Sanity of what a feed claims: a /8 of IPv4 or a /16 of IPv6 is almost never one
// provider's (the few /8s that are, Apple's 17/8 say, can be taken on purpose), and some
// globally reachable blocks belong to nobody's network however a list names them: 6to4
// relays every IPv4 host, NAT64 maps the whole IPv4 space. A feed that claims such a network
// is almost always a mistake (a Vultr list once claimed 2002::/16, making every 6to4 address
// "hosting"), so the import refuses it unless told to take it. (Bogon space needs no rule:
// it is never looked up.)

import { parseNetwork, type Network } from '../net/network.js';

/** Globally reachable IPv6 blocks no provider's network holds (IANA special-purpose registry). */
const SPECIAL_V6: readonly [string, Network][] = [
  ['2002::/16 (6to4)', '2002::/16'],
  ['64:ff9b::/96 (NAT64)', '64:ff9b::/96'],
  ['64:ff9b:1::/48 (local NAT64)', '64:ff9b:1::/48'],
].map(([name, cidr]) => {
  const r = parseNetwork(cidr);
  if (!r.ok) throw new Error(r.reason);
  return [name, r.network];
});

const overlaps = (n: Network, b: Network): boolean => n.start <= b.end && b.start <= n.end;

/** Why a feed may not claim the network (without --allow-large-blocks), or null. */
export function claimProblem(n: Network): string | null {
  const size = n.end - n.start + 1n;
  if (n.family === 4 && size >= 2n ** 24n) return "a /8 or larger, almost never one provider's";
  if (n.family === 6 && size >= 2n ** 112n) return "a /16 or larger, almost never one provider's";
  if (n.family === 6) for (const [name, block] of SPECIAL_V6) if (overlaps(n, block)) return `in ${name}, which no provider holds`;
  return null;
}
