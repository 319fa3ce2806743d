// The real-data import behind `npm run real-build`: every file under ../shared/data/real (bogon lists aside: the
// bogon tests check the bogon table against them) into a fresh data directory, builds, and
// prints a report: rows and rejects per source, ranges per category, the IPv4/IPv6 split,
// build time and index size. Categories follow the folders; formats are detected.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { importSources, type Source, type SourceReport } from '../src/feeds/sources.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const REAL = path.resolve(ROOT, '../shared/data/real');
const CATEGORY: Record<string, string> = { tor: 'tor', vpn: 'vpn', datacenter: 'hosting', cloud: 'hosting', cdn: 'cdn', relay: 'relay', proxy: 'dcproxy' };
/**
 * The providers' own published files (verbatim mirrors, says the data README): priority 1,
 * so inside a category they outrank the third-party compilations (priority 0), which hold
 * more specific, provider-less or relabelled networks inside the providers' ranges. Two own
 * files stay at 0: GitHub's meta lists the addresses GitHub's services use, Azure's among
 * them, not address space GitHub owns; Google's goog.json (every Google range, no service)
 * would otherwise tie with cloud.json's Google Cloud prefixes.
 */
const OWNER_FILES = /^(cloud|cdn)\/femueller__cloud-ip-ranges\/(?!github-)/;
/**
 * Apple's relay egress, in every copy: relay, and (priority 1) not vpn, since merged VPN lists
 * fold it in. A VPN provider's own server list (the file names the provider) is priority 1 too:
 * merged, provider-less VPN lists hold more specific networks inside its ranges.
 */
const RELAY = /^relay\//;
/** Files that carry no addresses, or a layout no importer reads yet. */
const NOT_ADDRESSES = [/\/ASN\.txt$/, /_asns\.json$/];

export function walk(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

/** A provider name from the file name where it is one (mullvad.txt → Mullvad). */
export function providerOf(file: string): string | undefined {
  const base = path.basename(file).replace(/\.(txt|lst|json|csv)$/, '');
  const known: Record<string, string> = {
    airvpn: 'AirVPN', ivpn: 'IVPN', mullvad: 'Mullvad', mullvadvpn: 'Mullvad', nordvpn: 'NordVPN', nordvpn_api: 'NordVPN', ovpn: 'OVPN', pia: 'Private Internet Access',
    protonvpn: 'ProtonVPN', protonvpn_ips: 'ProtonVPN', protonvpn_logicals: 'ProtonVPN', mullvadips: 'Mullvad', protonvpn_entry_ips: 'ProtonVPN', protonvpn_entry_ip_ranges: 'ProtonVPN', riseupvpn: 'RiseupVPN',
    surfshark: 'Surfshark', windscribe: 'Windscribe', expressvpn: 'ExpressVPN', apple: 'Apple iCloud Private Relay', Readme: 'Private Internet Access',
  };
  return known[base];
}

/** Imports every real data file into dataDir (see the header); returns the per-source reports. */
export async function importRealData(dataDir: string): Promise<{ sources: (Source & { rel: string })[]; reports: SourceReport[]; left: string[] }> {
  const files = walk(REAL).filter((f) => !f.startsWith(path.join(REAL, 'bogon')) && f !== path.join(REAL, 'README.md'));
  const left = files.filter((f) => NOT_ADDRESSES.some((re) => re.test(f)));
  const sources = files
    .filter((f) => !left.includes(f))
    .map((f, i) => {
      const rel = path.relative(REAL, f);
      const provider = providerOf(f);
      return {
        name: `s${String(i).padStart(3, '0')}`,
        path: f,
        format: 'auto',
        // Relay files are relay whatever their format; elsewhere a format's own category
        // (AWS CloudFront → cdn) comes first, the folder's only where it gives none.
        category: RELAY.test(rel) ? 'relay' : undefined,
        fallbackCategory: CATEGORY[rel.split(path.sep)[0]],
        details: provider ? { provider } : {},
        skipInvalid: true,
        priority: OWNER_FILES.test(rel) || RELAY.test(rel) || provider !== undefined ? 1 : 0,
        not: RELAY.test(rel) ? ['vpn'] : undefined,
        rel,
      };
    });
  const reports = await importSources(dataDir, sources);
  return { sources, reports, left: left.map((f) => path.relative(REAL, f)) };
}
