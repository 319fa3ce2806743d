// The plan projection (interface.md §2.2): which fields an answer carries for a plan.
// One pure function; the index precomputes its output per record and tier at build time.

import { CATEGORIES, type Category, type Classification, type Detail } from './categories.js';

/** Field tiers, cumulative. Plans map onto them; absent fields are absent, never false/null. */
export const TIERS = ['basic', 'starter', 'scale', 'max'] as const;
export type Tier = (typeof TIERS)[number];
export const TIER_COUNT = TIERS.length;

export const TIER_BASIC = 0;
export const TIER_STARTER = 1;
export const TIER_SCALE = 2;
export const TIER_MAX = 3;

/** Plan names of the contract mapped to tiers; no key answers like `free`. */
export const PLAN_TIERS: Readonly<Record<string, number>> = Object.freeze({
  none: TIER_BASIC,
  free: TIER_BASIC,
  starter: TIER_STARTER,
  scale: TIER_SCALE,
  max: TIER_MAX,
});

export function tierIndex(tier: string): number {
  const i = (TIERS as readonly string[]).indexOf(tier);
  if (i < 0) throw new Error(`unknown tier ${JSON.stringify(tier)}: one of ${TIERS.join(', ')}`);
  return i;
}

/** The first tier at which each category's flag and detail object appear. */
const FLAG_TIER: Readonly<Record<Category, number>> = {
  vpn: TIER_BASIC,
  hosting: TIER_STARTER,
  relay: TIER_STARTER,
  tor: TIER_STARTER,
  cdn: TIER_STARTER,
  resproxy: TIER_SCALE,
  dcproxy: TIER_SCALE,
  mobproxy: TIER_SCALE,
};
const DETAIL_TIER: Readonly<Record<Category, number>> = {
  vpn: TIER_STARTER,
  hosting: TIER_SCALE,
  relay: TIER_SCALE,
  tor: TIER_SCALE,
  cdn: TIER_SCALE,
  resproxy: TIER_MAX,
  dcproxy: TIER_MAX,
  mobproxy: TIER_MAX,
};

export interface TierFields {
  /** Categories whose is_<category> flag the tier carries, in answer order. */
  readonly flags: readonly Category[];
  /** Categories whose detail object the tier carries, in answer order. */
  readonly details: readonly Category[];
}

export const TIER_FIELDS: readonly TierFields[] = TIERS.map((_, t) =>
  Object.freeze({
    flags: CATEGORIES.filter((c) => t >= FLAG_TIER[c]),
    details: CATEGORIES.filter((c) => t >= DETAIL_TIER[c]),
  }),
);

export type Answer = Record<string, string | boolean | Detail>;

/**
 * The lookup result for `ip` classified as `c` (null: a bogon or not in the dataset),
 * as the given tier sees it. Keys come in the contract's order: ip, flags, details.
 */
export function project(ip: string, c: Classification | null, tier: number): Answer {
  const fields = TIER_FIELDS[tier];
  const answer: Answer = { ip };
  for (const cat of fields.flags) answer[`is_${cat}`] = c?.[cat] !== undefined;
  for (const cat of fields.details) answer[cat] = c?.[cat] ?? {};
  return answer;
}

// The index stores answers in two pieces that rely on this: each tier's flags and detail
// objects are prefixes of the contract's order (checked here, at load).
for (const f of TIER_FIELDS) {
  if (f.flags.some((c, i) => CATEGORIES[i] !== c) || f.details.some((c, i) => CATEGORIES[i] !== c)) {
    throw new Error('tier fields must be prefixes of the category order');
  }
}

/** Bit k of a flag mask: the address is in CATEGORIES[k]. */
export function flagMask(detailJson: readonly (string | undefined)[]): number {
  let mask = 0;
  for (let k = 0; k < CATEGORIES.length; k++) if (detailJson[k] !== undefined) mask |= 1 << k;
  return mask;
}

/** The flags piece of an answer for a tier and flag mask: `,"is_vpn":true,…`. */
export function flagsText(tier: number, mask: number): string {
  let text = '';
  for (const [k, cat] of TIER_FIELDS[tier].flags.entries()) text += `,"is_${cat}":${(mask & (1 << k)) !== 0}`;
  return text;
}

/**
 * The details piece of a record: every category's `,"<cat>":{…}` in order, and where each
 * tier's prefix of it ends (index = tier).
 */
export function detailsText(detailJson: readonly (string | undefined)[]): { text: string; ends: number[] } {
  let bytes = 0;
  const endAfter = DETAIL_ENDS;
  const parts = DETAIL_PARTS;
  for (let k = 0; k < CATEGORIES.length; k++) {
    const json = detailJson[k] ?? '{}';
    parts[2 * k + 1] = json;
    // Piece by piece: the byte length of the text so far would flatten it at every category.
    bytes += DETAIL_KEYS[k].length + Buffer.byteLength(json);
    endAfter[k] = bytes;
  }
  // Joined, not concatenated: one flat string, where `+=` leaves a rope of sixteen pieces a
  // record that lives until the index is encoded (a second of collection on a 1 M-range build).
  const text = parts.join('');
  const ends = TIER_FIELDS.map((f) => (f.details.length === 0 ? 0 : endAfter[f.details.length - 1]));
  return { text, ends };
}
/** The UTF-8 length of detailsText's text, without making it. */
export function detailsBytes(detailJson: readonly (string | undefined)[]): number {
  let bytes = 0;
  for (let k = 0; k < CATEGORIES.length; k++) bytes += DETAIL_KEYS[k].length + (detailJson[k] === undefined ? 2 : Buffer.byteLength(detailJson[k]!));
  return bytes;
}
/** `,"<cat>":` for each category (ASCII: its length is its byte length). */
const DETAIL_KEYS = CATEGORIES.map((cat) => `,"${cat}":`);
/** Scratch for detailsText: each category's key, then its detail. */
const DETAIL_PARTS: string[] = DETAIL_KEYS.flatMap((key) => [key, '']);
/** Scratch for detailsText: where each category's piece ends. */
const DETAIL_ENDS = new Array<number>(CATEGORIES.length).fill(0);
