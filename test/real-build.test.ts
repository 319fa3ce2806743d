// The real data (../shared/data/real) imported and built, then checked where the sources say
// what an address is: listed VPN servers, Tor exits, CDN and cloud ranges, relay egress.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { listToken } from '../src/feeds/formats.js';
import type { RangeIndex } from '../src/index/range-index.js';
import { NOT_ADDRESS, ParsedAddress, parseAddress } from '../src/net/address.js';
import { formatBigIPv4, formatBigIPv6, parseNetwork } from '../src/net/network.js';
import { NOT_IN_CATEGORY, readFeed } from '../src/feeds/feed-store.js';
import { qualityOf } from '../scripts/quality.js';
import { isBogonV4, isBogonV6 } from '../src/net/bogons.js';
import { REAL, importRealData, providerOf } from '../scripts/real-data.js';
import { providerNamed } from '../src/model/providers.js';
import { answerOf, buildIndex, tempDir } from './helpers.js';
import maxmind from 'maxmind';
import { runBuild } from '../src/build/build.js';
import { EXPORTS_DIR } from '../src/data-dir.js';
import { CATEGORIES } from '../src/model/categories.js';
import { TIER_MAX } from '../src/model/projection.js';

const present = fs.existsSync(REAL);

describe('a build of the real data', { skip: !present && `${REAL} is not present` }, () => {
  let index: RangeIndex;
  const p = new ParsedAddress();
  const answer = (ip: string): Record<string, unknown> => answerOf(index, ip);
  /** Addresses (first of each network) listed in a real file, read as a plain list (a Markdown table: its IPv4 cells). */
  const addresses = (rel: string): string[] =>
    rel.endsWith('.md')
      ? [...new Set(fs.readFileSync(path.join(REAL, rel), 'utf8').match(/(?<=\|\s*)\d{1,3}(\.\d{1,3}){3}(?=\s*\|)/g) ?? [])]
      : fs
          .readFileSync(path.join(REAL, rel), 'utf8')
          .split(/\r?\n/)
          .map(listToken)
          .filter((t) => t !== '' && parseNetwork(t).ok)
          .map((t) => t.split('/')[0].split('-')[0])
          .filter((ip) => parseAddress(ip, 0, ip.length, p) !== NOT_ADDRESS);

  let dataDir = '';
  let sources: Awaited<ReturnType<typeof importRealData>>['sources'] = [];
  let reports: Awaited<ReturnType<typeof importRealData>>['reports'] = [];

  before(async () => {
    dataDir = tempDir();
    ({ sources, reports } = await importRealData(dataDir));
    index = await buildIndex(dataDir);
  });

  test('no answer has a true flag with an empty detail: every record as GET and batch copy it, and the extended MMDB', async () => {
    const buf = new Uint8Array(1 << 16);
    let flags = 0;
    const empty: string[] = [];
    for (let r = 0; r < index.counts.records; r++) {
      const text = Buffer.from(buf.subarray(0, index.copyFragment(r, TIER_MAX, buf, 0))).toString('utf8');
      for (const c of CATEGORIES) {
        if (!text.includes(`"is_${c}":true`)) continue;
        flags++;
        if (text.includes(`"${c}":{}`) && empty.length < 5) empty.push(text);
      }
    }
    assert.deepEqual(empty, []);
    assert.ok(flags > 1000, `${flags} true flags over the distinct records`);
    // The extended MMDB carries the same details: a sample of every server list's addresses.
    const build = runBuild({ dataDir, threadedExports: false });
    const reader = await maxmind.open<Record<string, unknown>>(path.join(build.dir, EXPORTS_DIR, 'ipsift_extended_v1.mmdb'));
    let compared = 0;
    for (const s of sources.filter((x) => /\.txt$/.test(x.rel)).slice(0, 40)) {
      for (const ip of addresses(s.rel).slice(0, 50)) {
        const a = answer(ip);
        const m = reader.get(ip) ?? {};
        for (const c of CATEGORIES) {
          if (a[`is_${c}`] !== true) continue;
          compared++;
          assert.ok(Object.keys(a[c] as object).length > 0, `${ip} ${c}`);
          assert.deepEqual(m[c], a[c], `${ip} ${c}`);
        }
      }
    }
    assert.ok(compared > 1000, `${compared} compared`);
  });

  test('every file imports; the only rows refused are claims no provider can make, Vultr’s 2002::/16 among them', () => {
    assert.ok(
      reports.every((r) => r.ok),
      JSON.stringify(reports.filter((r) => !r.ok)),
    );
    const refused = reports.flatMap((r, k) => r.skippedExamples.map((e) => [sources[k].rel, e] as const));
    for (const [rel, reason] of refused) assert.match(reason, /: (a \/(8|16) or larger|in 2002::\/16|in 64:ff9b)/, rel);
    assert.ok(
      refused.some(([rel, reason]) => rel.includes('vultr') && reason.includes('2002::/16: a /16 or larger')),
      JSON.stringify(refused),
    );
    assert.equal(answer('2002:c000:204::1').is_hosting, false);
  });

  test('every address of every VPN provider’s server list, PIA’s table included, answers is_vpn with that provider', () => {
    const lists = sources.filter((s) => s.evidence === 'server_list' && /\.(txt|csv|md)$/.test(s.rel)).map((s) => s.rel);
    assert.ok(lists.length >= 20 && lists.some((rel) => rel.endsWith('Readme.md')), `${lists.length} lists`);
    let checked = 0;
    for (const file of lists) {
      const provider = providerOf(file);
      const ips = addresses(file);
      assert.ok(ips.length > 10, file);
      for (const ip of ips) {
        const a = answer(ip);
        assert.equal(a.is_vpn, true, `${file} ${ip}`);
        assert.equal((a.vpn as { provider?: string }).provider, provider, `${file} ${ip}`);
        checked++;
      }
    }
    assert.ok(checked > 40_000, `only ${checked}`);
  });

  test('the quality report holds: no public resolver is a VPN; held out, ≤ 2 % of owner space answers is_vpn; every server list answers its provider', () => {
    const q = qualityOf(index, dataDir, sources);
    assert.equal(q.resolvers.length, 10);
    assert.deepEqual(
      q.resolvers.filter((r) => r.is_vpn),
      [],
    );
    assert.equal(q.ownerSpace.sampled, 3000);
    assert.ok(
      q.ownerSpace.vpn / q.ownerSpace.sampled <= 0.02,
      `${q.ownerSpace.vpn} of ${q.ownerSpace.sampled} answer is_vpn: ${q.ownerSpace.examples.join('; ')}`,
    );
    assert.ok(q.providers.length >= 11, JSON.stringify(q.providers));
    for (const pr of q.providers) assert.equal(pr.answered, pr.listed, pr.provider);
  });

  test("every network of an owner's own file answers is_hosting or is_cdn with that owner's one display name", () => {
    let checked = 0;
    const owners = new Set<string>();
    for (const s of sources) {
      if (s.evidence !== 'owner' || !/^(cloud|cdn)\//.test(s.rel)) continue;
      for (const r of readFeed(path.join(dataDir, 'feeds', `${s.name}.feed`))) {
        if (r.detail === NOT_IN_CATEGORY) continue;
        const stated = (JSON.parse(r.detail) as { provider?: string }).provider;
        const owner = stated === undefined ? undefined : providerNamed(stated);
        assert.ok(owner && owner.name === stated, `${s.rel}: provider ${stated} is not a registry display name`);
        owners.add(owner.name);
        const ip = r.family === 4 ? formatBigIPv4(BigInt(r.start)) : formatBigIPv6(BigInt(r.start));
        const a = answer(ip);
        const given = (a[r.category] as { provider?: string })?.provider;
        assert.equal(a[`is_${r.category}`], true, `${s.rel} ${ip}`);
        assert.equal(given && providerNamed(given)?.owner, owner.owner, `${s.rel} ${ip}: ${given} for ${stated}`);
        checked++;
      }
    }
    for (const name of [
      'Amazon Web Services',
      'Google Cloud',
      'Google',
      'Microsoft Azure',
      'Oracle Cloud',
      'DigitalOcean',
      'Linode',
      'Cloudflare',
      'Akamai',
      'Fastly',
      'Zscaler',
    ]) {
      assert.ok(owners.has(name), `no owner file names ${name}: ${[...owners].join(', ')}`);
    }
    assert.ok(checked > 50_000, `only ${checked}`);
  });

  test('third-party per-provider lists answer their provider by its one name: bunny.net, StackPath, OVH', () => {
    for (const [rel, category, name] of [
      ['cdn/MISP__misp-warninglists/lists/bunny-net/list.json', 'cdn', 'bunny.net'],
      ['cdn/MISP__misp-warninglists/lists/stackpath/list.json', 'cdn', 'StackPath'],
      ['cloud/MISP__misp-warninglists/lists/ovh-cluster/list.json', 'hosting', 'OVH'],
    ]) {
      const { list } = JSON.parse(fs.readFileSync(path.join(REAL, rel), 'utf8')) as { list: string[] };
      assert.ok(list.length > 100, rel);
      for (const net of list) assert.equal((answer(net.split('/')[0])[category] as { provider?: string }).provider, name, `${rel} ${net}`);
    }
  });

  test('every Tor exit answers is_tor; Cloudflare ranges is_cdn', () => {
    const check = (file: string, field: string): void => {
      const ips = addresses(file);
      assert.ok(ips.length > 0, file);
      for (const ip of ips) assert.equal(answer(ip)[field], true, `${file} ${ip} ${field}`);
    };
    check('tor/javascripterzzeerrr__ipinfo-parser/torbulkexitlist', 'is_tor');
    check('tor/SecOps-Institute__Tor-IP-Addresses/tor-exit-nodes.lst', 'is_tor');
    check('cdn/lord-alfred__ipranges/cloudflare/ipv4.txt', 'is_cdn');
    check('cdn/lord-alfred__ipranges/cloudflare/ipv6.txt', 'is_cdn');
  });

  test('AWS, Google Cloud and Azure ranges, IPv4 and IPv6, answer is_hosting with their provider (CloudFront also is_cdn)', () => {
    const provider = (a: Record<string, unknown>, cat: string): unknown => (a[cat] as { provider?: string }).provider;
    const read = (rel: string): Record<string, unknown> => JSON.parse(fs.readFileSync(path.join(REAL, rel), 'utf8')) as Record<string, unknown>;
    const aws = read('cloud/femueller__cloud-ip-ranges/aws-ip-ranges.json') as {
      prefixes: { ip_prefix: string; service: string }[];
      ipv6_prefixes: { ipv6_prefix: string; service: string }[];
    };
    const awsNets = [...aws.prefixes.map((p) => [p.ip_prefix, p.service]), ...aws.ipv6_prefixes.map((p) => [p.ipv6_prefix, p.service])];
    for (const [net, service] of awsNets) {
      const a = answer(net.split('/')[0]);
      assert.equal(provider(a, 'hosting'), 'Amazon Web Services', `${net} ${JSON.stringify(a)}`);
      if (service.startsWith('CLOUDFRONT')) assert.equal(provider(a, 'cdn'), 'Amazon CloudFront', net);
    }
    const google = read('cloud/femueller__cloud-ip-ranges/google-cloud-ip-ranges.json') as { prefixes: { ipv4Prefix?: string; ipv6Prefix?: string }[] };
    const googleNets = google.prefixes.map((p) => (p.ipv4Prefix ?? p.ipv6Prefix)!);
    for (const net of googleNets) assert.equal(provider(answer(net.split('/')[0]), 'hosting'), 'Google Cloud', net);
    const azure = read('cloud/femueller__cloud-ip-ranges/microsoft-azure-ip-ranges.json') as { values: { properties: { addressPrefixes: string[] } }[] };
    const azureNets = azure.values.flatMap((v) => v.properties.addressPrefixes);
    for (const net of azureNets) assert.equal(provider(answer(net.split('/')[0]), 'hosting'), 'Microsoft Azure', net);
    for (const nets of [awsNets.map(([n]) => n), googleNets, azureNets]) {
      assert.ok(nets.some((n) => n.includes(':')) && nets.some((n) => n.includes('.')), 'both families checked');
    }
  });

  test('iCloud Private Relay egress, every copy, IPv4 and IPv6, answers is_relay and not is_vpn', () => {
    let checked = 0;
    for (const rel of [
      'relay/hroost__icloud-private-relay-iplist/ipv4/ipv4-ranges.txt',
      'relay/hroost__icloud-private-relay-iplist/ipv6/ipv6-ranges.txt',
      'relay/X4BNet__lists_vpn/input/vpn/ips/apple.txt',
    ]) {
      for (const ip of addresses(rel)) {
        const a = answer(ip);
        assert.deepEqual([a.is_relay, a.is_vpn], [true, false], `${rel} ${ip}`);
        checked++;
      }
    }
    const misp = JSON.parse(fs.readFileSync(path.join(REAL, 'relay/MISP__misp-warninglists/lists/icloud-private-relay/list.json'), 'utf8')) as {
      list: string[];
    };
    for (const net of misp.list) {
      const a = answer(net.split('/')[0]);
      assert.deepEqual([a.is_relay, a.is_vpn], [true, false], net);
      checked++;
    }
    assert.ok(checked > 25_000, `only ${checked}`);
  });

  test('every address of the bogon lists inside the special-purpose ranges is answered as a bogon', () => {
    let checked = 0;
    for (const list of ['rfc1918', 'rfc5735', 'rfc6598', 'multicast', 'ipv6-linklocal', 'rfc3849']) {
      const doc = JSON.parse(fs.readFileSync(path.join(REAL, `bogon/MISP__misp-warninglists/lists/${list}/list.json`), 'utf8')) as { list: string[] };
      for (const net of doc.list) {
        const ip = net.split('/')[0];
        const kind = parseAddress(ip, 0, ip.length, p);
        if (kind === NOT_ADDRESS || !(kind === 6 ? isBogonV6(p.w) : isBogonV4(p.v4))) continue;
        const a = answer(ip);
        assert.ok(
          Object.entries(a).every(([k, v]) => !k.startsWith('is_') || v === false),
          `${list} ${ip}: ${JSON.stringify(a)}`,
        );
        checked++;
      }
    }
    assert.ok(checked > 20, `only ${checked} bogon addresses checked`);
  });
});
