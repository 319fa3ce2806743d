// The provider registry (DESIGN.md §3): one display name per provider, whatever a source calls
// it ("AWS", "Aws", "amazon-aws" → Amazon Web Services). The import writes every provider it
// knows under its display name, so answers, CSV, MMDB and the provider catalogues spell a
// company one way; a name it does not know is kept as written and reported (import notes and
// the build's manifest), never guessed. `owner` groups a company's products (Google and Google
// Cloud, Amazon Web Services and Amazon CloudFront).

export type ProviderKind = 'vpn' | 'cloud' | 'hosting' | 'cdn' | 'relay' | 'tor' | 'network';

export interface Provider {
  readonly name: string;
  readonly owner: string;
  readonly kind: ProviderKind;
  readonly aliases: readonly string[];
}

const p = (name: string, owner: string, kind: ProviderKind, ...aliases: string[]): Provider => ({ name, owner, kind, aliases });

export const PROVIDERS: readonly Provider[] = [
  // VPN services
  p('NordVPN', 'nord', 'vpn', 'nord', 'nordvpn api', 'tefincom'),
  p('ProtonVPN', 'proton', 'vpn', 'proton vpn', 'proton'),
  p('Mullvad', 'mullvad', 'vpn', 'mullvad vpn', 'mullvadvpn', 'mullvadips'),
  p('Private Internet Access', 'pia', 'vpn', 'pia', 'privateinternetaccess'),
  p('Surfshark', 'surfshark', 'vpn'),
  p('Windscribe', 'windscribe', 'vpn'),
  p('ExpressVPN', 'expressvpn', 'vpn', 'express vpn'),
  p('AirVPN', 'airvpn', 'vpn'),
  p('IVPN', 'ivpn', 'vpn'),
  p('OVPN', 'ovpn', 'vpn', 'ovpn.com'),
  p('RiseupVPN', 'riseup', 'vpn', 'riseup'),
  // Clouds and hosting
  p('Amazon Web Services', 'amazon', 'cloud', 'aws', 'amazon', 'amazon aws', 'amazon-aws', 'amazonaws', 'ec2'),
  p('Google Cloud', 'google', 'cloud', 'gcp', 'google-gcp', 'google cloud platform', 'googlecloud'),
  p('Google', 'google', 'network', 'goog'),
  p('Microsoft Azure', 'microsoft', 'cloud', 'azure', 'microsoft-azure'),
  p('Microsoft', 'microsoft', 'network'),
  p('Oracle Cloud', 'oracle', 'cloud', 'oracle', 'oci', 'oracle-oci', 'oracle cloud infrastructure'),
  p('DigitalOcean', 'digitalocean', 'cloud', 'digital ocean'),
  p('Linode', 'akamai', 'cloud', 'akamai cloud'),
  p('Vultr', 'vultr', 'cloud'),
  p('OVH', 'ovh', 'cloud', 'ovhcloud', 'ovh-cluster', 'ovh cluster'),
  p('Hetzner', 'hetzner', 'hosting'),
  p('IBM Cloud', 'ibm', 'cloud', 'softlayer', 'softlayer ibm', 'softlayer-ibm'),
  p('Alibaba Cloud', 'alibaba', 'cloud', 'alibaba', 'aliyun'),
  p('Tencent Cloud', 'tencent', 'cloud', 'tencent'),
  p('Huawei Cloud', 'huawei', 'cloud'),
  p('GitHub', 'microsoft', 'network'),
  p('Meta', 'meta', 'network', 'facebook'),
  p('Telegram', 'telegram', 'network'),
  p('OpenAI', 'openai', 'network'),
  p('Zscaler', 'zscaler', 'network'),
  p('Starlink', 'spacex', 'network'),
  // CDNs
  p('Amazon CloudFront', 'amazon', 'cdn', 'cloudfront'),
  p('Cloudflare', 'cloudflare', 'cdn'),
  p('Akamai', 'akamai', 'cdn'),
  p('Fastly', 'fastly', 'cdn'),
  p('bunny.net', 'bunny', 'cdn', 'bunny', 'bunny-net', 'bunnycdn', 'bunny cdn'),
  p('StackPath', 'stackpath', 'cdn'),
  // Relays and Tor
  p('Apple iCloud Private Relay', 'apple', 'relay', 'icloud private relay', 'icloud-private-relay', 'icloud relay', 'apple private relay'),
  p('Tor Project', 'tor', 'tor', 'tor', 'torproject'),
];

/** Case, spaces and punctuation do not matter: "Amazon-AWS" and "amazon aws" are one key. */
const keyOf = (text: string): string => text.toLowerCase().replace(/[^a-z0-9]+/g, '');

const BY_KEY = new Map<string, Provider>();
for (const provider of PROVIDERS) {
  for (const alias of [provider.name, ...provider.aliases]) {
    const key = keyOf(alias);
    const other = BY_KEY.get(key);
    if (other && other !== provider) throw new Error(`provider alias ${alias} names both ${other.name} and ${provider.name}`);
    BY_KEY.set(key, provider);
  }
}

/** The registry's provider a source's name stands for, or undefined when it has none. */
export function providerNamed(text: string): Provider | undefined {
  return BY_KEY.get(keyOf(text));
}

/** "N provider names …: a, b, c and N-3 more" for reports (empty when there are none). */
export function unknownProvidersLine(names: readonly string[], shown = 10): string {
  if (names.length === 0) return '';
  const more = names.length > shown ? ` and ${names.length - shown} more` : '';
  return `${names.length} provider name${names.length > 1 ? 's' : ''} not in the registry, kept as written: ${names
    .slice(0, shown)
    .map((n) => JSON.stringify(n))
    .join(', ')}${more}`;
}
