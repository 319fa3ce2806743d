// What kind of evidence a feed is, and what that kind may claim (DESIGN.md §3, "Evidence").
// The kind is given at import (--evidence, or `evidence` in a sources file) and kept in the
// feed's header. It decides three things:
//
// - its band: inside a category a range of a higher band wins over any range of a lower one,
//   whatever the feeds' priorities (priority orders feeds inside a band);
// - the detail it stamps where the file says nothing (the vpn method, a confidence);
// - what else it says: an owner's own published space is not vpn (it rules out the vpn claims
//   of lower bands on its networks); a mixed aggregate's vpn claims are hosting too.
//
// The result, for vpn: a provider's server list and an observed exit stand everywhere; an
// owner's own cloud space answers not vpn unless one of those names it; third-party lists,
// ASN derivations and aggregates claim vpn only outside owner space.

import type { Category, CONFIDENCE_VALUES, METHOD_VALUES } from '../model/categories.js';

export const EVIDENCE_KINDS = ['server_list', 'exit_probe', 'traffic', 'owner', 'list', 'asn', 'aggregate'] as const;
export type EvidenceKind = (typeof EVIDENCE_KINDS)[number];

/** A feed imported without a kind: a third-party list, as feeds were before kinds. */
export const DEFAULT_EVIDENCE: EvidenceKind = 'list';

export interface EvidenceRule {
  /** Higher wins inside a category, before priority. */
  readonly band: number;
  /** The confidence of its claims where the row states none, in every category that has one. */
  readonly confidence: (typeof CONFIDENCE_VALUES)[number];
  /** The vpn method its claims carry where the row gives none (null: it says nothing of how). */
  readonly method: (typeof METHOD_VALUES)[number] | null;
  /** Categories its networks are not in, whatever lower bands claim. */
  readonly rulesOut: readonly Category[];
  /** Categories its vpn claims are also in (without a provider: the list does not say whose). */
  readonly vpnAlso: readonly Category[];
  readonly summary: string;
}

export const EVIDENCE: Readonly<Record<EvidenceKind, EvidenceRule>> = {
  server_list: {
    band: 6,
    confidence: 'high',
    method: 'server_list',
    rulesOut: [],
    vpnAlso: [],
    summary: "a provider's own published server or range list",
  },
  exit_probe: {
    band: 5,
    confidence: 'high',
    method: 'exit_probe',
    rulesOut: [],
    vpnAlso: [],
    summary: 'addresses seen as exits when connecting through the service',
  },
  traffic: {
    band: 5,
    confidence: 'medium',
    method: 'traffic',
    rulesOut: [],
    vpnAlso: [],
    summary: 'exits inferred from observed traffic',
  },
  owner: {
    band: 4,
    confidence: 'high',
    method: null,
    rulesOut: ['vpn'],
    vpnAlso: [],
    summary: "the owner's own published address space (cloud, CDN, resolvers)",
  },
  list: { band: 3, confidence: 'medium', method: null, rulesOut: [], vpnAlso: [], summary: 'a third-party list of one category, method unknown' },
  asn: {
    band: 2,
    confidence: 'medium',
    method: 'asn',
    rulesOut: [],
    vpnAlso: [],
    summary: 'every prefix of an ASN that a VPN operator owns',
  },
  aggregate: {
    band: 1,
    confidence: 'low',
    method: 'asn',
    rulesOut: [],
    vpnAlso: ['hosting'],
    summary: 'a mixed aggregate of VPN and datacenter space',
  },
};

export function isEvidenceKind(s: string): s is EvidenceKind {
  return (EVIDENCE_KINDS as readonly string[]).includes(s);
}

/** Priorities run from -MAX to MAX inside a band; this many values per band. */
export const BAND_WIDTH = 1000;

/** The order of a feed's ranges inside a category: its band first, then its priority. */
export function effectivePriority(kind: EvidenceKind, priority: number): number {
  return EVIDENCE[kind].band * BAND_WIDTH + priority;
}
