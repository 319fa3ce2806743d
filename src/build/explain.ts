// `ipsift explain <ip>`: every imported feed range that covers an address, per category, in
// the order the build resolves them (resolve.ts, evidence.ts), and the rule that made the
// winner win. What an operator needs when a customer disputes a verdict.

import { CATEGORIES, type Category } from '../model/categories.js';
import { EVIDENCE, type EvidenceKind } from '../feeds/evidence.js';
import { feedStanding } from '../feeds/freshness.js';
import { readDisabledSources } from '../feeds/source-switches.js';
import { NOT_IN_CATEGORY, listFeeds, readFeed } from '../feeds/feed-store.js';
import { readSourceStates } from '../feeds/source-state.js';
import { IPV4, IPV4_MAPPED, NOT_ADDRESS, ParsedAddress, addressBigInt, normalisedText, parseAddress } from '../net/address.js';
import { isBogonV4, isBogonV6 } from '../net/bogons.js';
import { formatAddress, type Family } from '../net/network.js';

export interface Claim {
  feed: string;
  evidence: EvidenceKind;
  priority: number;
  /** The covering range as first-last (a CIDR when it is one). */
  network: string;
  /** The detail the feed gives, or null where it says the network is not in the category. */
  detail: Record<string, unknown> | null;
  /** Where a fetched source's feed came from: its URL (or path), and when that copy was fetched and confirmed. */
  source: ClaimSource | null;
}

export interface ClaimSource {
  url: string | null;
  /** When the copy that answers was fetched (imported). */
  fetched_at: string | null;
  /** When its content last changed, by the publisher's evidence (dated_by says which), not by the fetch. */
  changed_at: string | null;
  dated_by: string | null;
  /** When it was last confirmed current (fetched, or answered 304). */
  confirmed_at: string | null;
}

export interface CategoryExplanation {
  /** The winning claim's detail (null: not in the category). */
  answer: Record<string, unknown> | null;
  /** Why: which claim won and over what. */
  rule: string;
  /** Every covering claim, the winner first. */
  claims: Claim[];
}

export interface Explanation {
  ip: string;
  bogon: boolean;
  categories: Partial<Record<Category, CategoryExplanation>>;
}

interface Covering extends Claim {
  size: bigint;
  order: number;
}

/** The range as CIDR where it is one, else first-last. */
function networkText(family: Family, start: bigint, end: bigint): string {
  const size = end - start + 1n;
  const bits = size.toString(2).length - 1;
  const aligned = size === 1n << BigInt(bits) && start % size === 0n;
  return aligned ? `${formatAddress(family, start)}/${(family === 4 ? 32 : 128) - bits}` : `${formatAddress(family, start)}-${formatAddress(family, end)}`;
}

const lastSeen = (c: Claim): string => String(c.detail?.last_seen ?? '');
const fields = (c: Claim): number => (c.detail ? Object.keys(c.detail).length : 0);
const text = (c: Claim): string => JSON.stringify(c.detail);

/** The build's order (resolve.ts): band and priority, the more specific range, "not" on ties, then the detail. */
function compare(a: Covering, b: Covering): number {
  if (a.order !== b.order) return b.order - a.order;
  if (a.size !== b.size) return a.size < b.size ? -1 : 1;
  if ((a.detail === null) !== (b.detail === null)) return a.detail === null ? -1 : 1;
  if (lastSeen(a) !== lastSeen(b)) return lastSeen(a) > lastSeen(b) ? -1 : 1;
  if (fields(a) !== fields(b)) return fields(b) - fields(a);
  return text(a) > text(b) ? -1 : text(a) < text(b) ? 1 : 0;
}

/** Why the winner beats the runner-up, in the terms of the rules. */
function ruleOf(category: Category, w: Covering, next: Covering | undefined): string {
  const says = w.detail === null ? `${w.feed} (${w.evidence}) says ${w.network} is not ${category}` : `${w.feed} (${w.evidence}) claims ${w.network}`;
  if (!next) return `${says}: the only claim`;
  const over = `over ${next.feed} (${next.evidence}, ${next.network})`;
  if (EVIDENCE[w.evidence].band !== EVIDENCE[next.evidence].band) return `${says}: ${w.evidence} evidence outranks ${next.evidence} ${over}`;
  if (w.priority !== next.priority) return `${says}: priority ${w.priority} outranks ${next.priority} ${over}`;
  if (w.size !== next.size) return `${says}: the more specific network wins ${over}`;
  if ((w.detail === null) !== (next.detail === null)) return `${says}: "not ${category}" wins a tie ${over}`;
  if (lastSeen(w) !== lastSeen(next)) return `${says}: the newer last_seen wins ${over}`;
  if (fields(w) !== fields(next)) return `${says}: the fuller detail wins ${over}`;
  return `${says}: equal in all else, the greater detail text wins ${over}`;
}

/** Explains the address from the imported feeds of dataDir; null when the text is not an address. */
export function explainAddress(dataDir: string, ip: string, nowMs = Date.now()): Explanation | null {
  const p = new ParsedAddress();
  const kind = parseAddress(ip, 0, ip.length, p);
  if (kind === NOT_ADDRESS) return null;
  // IPv4-mapped addresses are answered as the IPv4 address.
  const family: Family = kind === IPV4 || kind === IPV4_MAPPED ? 4 : 6;
  const key = family === 4 ? BigInt(p.v4) : addressBigInt(p);
  const out: Explanation = { ip: normalisedText(ip, 0, ip.length, p), bogon: family === 4 ? isBogonV4(p.v4) : isBogonV6(p.w), categories: {} };
  const byCategory = new Map<Category, Covering[]>();
  const states = readSourceStates(dataDir);
  const disabled = readDisabledSources(dataDir);
  for (const feed of listFeeds(dataDir)) {
    // As the build leaves it out.
    if (feed.name in disabled) continue;
    const st = states[feed.name];
    // As the build ranks them: a stale source a band lower, an expired one not at all.
    const standing = feedStanding(feed, states, nowMs);
    if (standing.freshness === 'expired') continue;
    const source: ClaimSource | null = st
      ? {
          url: st.url,
          fetched_at: new Date(feed.importedMs).toISOString(),
          changed_at: st.changed_at,
          dated_by: st.dated_by ?? (st.changed_at ? 'observed' : null),
          confirmed_at: st.good_at,
        }
      : null;
    for (const r of readFeed(feed.file)) {
      if (r.family !== family) continue;
      const start = BigInt(r.start);
      const end = BigInt(r.end);
      if (key < start || key > end) continue;
      const list = byCategory.get(r.category) ?? [];
      byCategory.set(r.category, list);
      list.push({
        feed: feed.name,
        evidence: feed.evidence,
        priority: feed.priority,
        network: networkText(family, start, end),
        detail: r.detail === NOT_IN_CATEGORY ? null : (JSON.parse(standing.detail(r.detail, r.category)) as Record<string, unknown>),
        source,
        size: end - start + 1n,
        order: standing.order,
      });
    }
  }
  for (const category of CATEGORIES) {
    const claims = byCategory.get(category);
    if (!claims) continue;
    claims.sort(compare);
    out.categories[category] = {
      answer: claims[0].detail,
      rule: ruleOf(category, claims[0], claims[1]),
      claims: claims.map(({ size: _size, order: _order, ...c }) => c),
    };
  }
  return out;
}
