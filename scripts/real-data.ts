// The real-data import behind `npm run real-build`: every file under ../shared/data/real (bogon lists aside: the
// bogon tests check the bogon table against them) into a fresh data directory, builds, and
// prints a report: rows and rejects per source, ranges per category, the IPv4/IPv6 split,
// build time and index size. Categories follow the folders; formats are detected.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EvidenceKind } from '../src/feeds/evidence.js';
import { providerNamed } from '../src/model/providers.js';
import type { Source } from '../src/feeds/sources.js';
import { importSources, type SourceReport } from '../src/feeds/refresh.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const REAL = path.resolve(ROOT, '../shared/data/real');
const CATEGORY: Record<string, string> = { tor: 'tor', vpn: 'vpn', datacenter: 'hosting', cloud: 'hosting', cdn: 'cdn', relay: 'relay', proxy: 'dcproxy' };

/**
 * The evidence kind of each file (src/feeds/evidence.ts), from what the data README says it is:
 * - owner: the providers' own published files (verbatim mirrors) and Apple's relay egress
 *   list. GitHub's meta is not one: it lists the addresses GitHub's services use, Azure's
 *   among them, not space GitHub owns.
 * - server_list: a VPN provider's own server list (the file names the provider).
 * - asn: every prefix of the ASNs hosting ProtonVPN (tn3w's entry ranges, 4.3 M addresses).
 * - aggregate: merged "VPN providers and related ranges" (MISP's vpn lists, X4BNet's output,
 *   which folds in hosting ASNs such as M247's); the README warns they over-cover as VPN.
 * - list: every other third-party compilation.
 */
const EVIDENCE: [RegExp, EvidenceKind][] = [
  [/^(cloud|cdn)\/femueller__cloud-ip-ranges\/(?!github-)/, 'owner'],
  [/^cloud\/berthubert__googerteller\/goog\.json$/, 'owner'],
  [/^relay\/hroost__icloud-private-relay-iplist\//, 'owner'],
  [/^vpn\/tn3w__ProtonVPN-IPs\/protonvpn_entry_ip_ranges\.txt$/, 'asn'],
  [/^vpn\/(MISP__misp-warninglists|X4BNet__lists_vpn\/output)\//, 'aggregate'],
];

export function evidenceOf(rel: string, provider: string | undefined): EvidenceKind {
  const hit = EVIDENCE.find(([re]) => re.test(rel));
  if (hit) return hit[1];
  return rel.startsWith('vpn/') && provider !== undefined ? 'server_list' : 'list';
}

/**
 * Google's goog.json lists every Google range, cloud.json which of them are Google Cloud's:
 * both are the owner's word, and where they cover the same network the more specific
 * statement (Google Cloud) answers.
 */
const LESS_SPECIFIC_OWNER = /^cloud\/berthubert__googerteller\/goog\.json$/;

/** Relay files are relay whatever their format, and not vpn (merged VPN lists fold Apple's egress in). */
const RELAY = /^relay\//;
/** Files that carry no addresses, or a layout no importer reads yet. */
const NOT_ADDRESSES = [/\/ASN\.txt$/, /_asns\.json$/];

export function walk(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

/**
 * Files whose content names no provider where their path does: VPN server lists (nordvpn.txt),
 * MISP's per-provider lists (lists/amazon-aws/list.json), lord-alfred's per-provider folders
 * and the owners' plain lists and geofeeds. Formats that name their provider (aws, google,
 * cloud-json …) keep theirs: an option would override it.
 */
const PATH_NAMES_PROVIDER = [
  /^vpn\//,
  /MISP__misp-warninglists\/lists\/(?!vpn-)/,
  /lord-alfred__ipranges\//,
  /femueller__cloud-ip-ranges\/(digitalocean|linode|akamai|cloudflare)/,
];

/** The registry name of the provider a file's path names (mullvad.txt → Mullvad), if any. */
export function providerOf(file: string): string | undefined {
  const parts = file.split(path.sep);
  const base = path.basename(file).replace(/\.[a-z]+$/, '');
  // PIA's server watch is a Readme.md.
  if (base === 'Readme' && file.includes('PrivateInternetAccess')) return 'Private Internet Access';
  // A list named after its folder (MISP's lists/<name>/list.json, lord-alfred's <name>/ipv4_merged.txt).
  const folder = base === 'list' || /^ipv[46](_merged)?$/.test(base) ? parts.at(-2) : undefined;
  for (const candidate of folder ? [folder] : [base, base.split(/[-_]/)[0]]) {
    const known = providerNamed(candidate);
    if (known) return known.name;
  }
  return undefined;
}

/** A feed name that says where the file came from (ipsift explain shows it): 012-cloud-berthubert-goog.json. */
function feedName(i: number, rel: string): string {
  const parts = rel.split(path.sep);
  parts[1] = parts[1].split('__')[0];
  const slug = parts
    .join('-')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-');
  return `${String(i).padStart(3, '0')}-${slug}`.slice(0, 64);
}

/** Imports every real data file into dataDir (see the header); returns the per-source reports. */
export async function importRealData(
  dataDir: string,
): Promise<{ sources: (Source & { rel: string; evidence: EvidenceKind })[]; reports: SourceReport[]; left: string[] }> {
  const files = walk(REAL).filter((f) => !f.startsWith(path.join(REAL, 'bogon')) && f !== path.join(REAL, 'README.md'));
  const left = files.filter((f) => NOT_ADDRESSES.some((re) => re.test(f)));
  const sources = files
    .filter((f) => !left.includes(f))
    .map((f, i) => {
      const rel = path.relative(REAL, f);
      // Every relay file is Apple's egress, whichever copy.
      const provider = RELAY.test(rel) ? 'Apple iCloud Private Relay' : PATH_NAMES_PROVIDER.some((re) => re.test(rel)) ? providerOf(rel) : undefined;
      const evidence = evidenceOf(rel, provider);
      return {
        name: feedName(i, rel),
        path: f,
        format: 'auto',
        // Relay files are relay whatever their format; elsewhere a format's own category
        // (AWS CloudFront → cdn) comes first, the folder's only where it gives none.
        category: RELAY.test(rel) ? 'relay' : undefined,
        fallbackCategory: CATEGORY[rel.split(path.sep)[0]],
        details: provider ? { provider } : {},
        skipInvalid: true,
        evidence,
        priority: LESS_SPECIFIC_OWNER.test(rel) ? -1 : 0,
        not: RELAY.test(rel) ? ['vpn'] : undefined,
        rel,
      };
    });
  const reports = await importSources(dataDir, sources);
  return { sources, reports, left: left.map((f) => path.relative(REAL, f)) };
}
