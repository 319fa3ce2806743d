// The real data (../shared/data/real) imported and built, then checked where the sources say
// what an address is: listed VPN servers, Tor exits, CDN and cloud ranges, relay egress.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { runBuild } from '../src/build/build.js';
import { INDEX_FILE } from '../src/build/builds.js';
import { listToken } from '../src/feeds/formats.js';
import { loadIndexFile } from '../src/index/loader.js';
import type { RangeIndex } from '../src/index/range-index.js';
import { answerBytes, recordOf, writeAnswer } from '../src/lookup/answer.js';
import { TIER_MAX } from '../src/model/projection.js';
import { NOT_ADDRESS, ParsedAddress, parseAddress } from '../src/net/address.js';
import { parseNetwork } from '../src/net/network.js';
import { isBogonV4, isBogonV6 } from '../src/net/bogons.js';
import { REAL, importRealData } from '../scripts/real-data.js';
import { tempDir } from './helpers.js';

const present = fs.existsSync(REAL);

describe('a build of the real data', { skip: !present && `${REAL} is not present` }, () => {
  let index: RangeIndex;
  const p = new ParsedAddress();
  const answer = (ip: string): Record<string, unknown> => {
    parseAddress(ip, 0, ip.length, p);
    const r = recordOf(index, p);
    const out = Buffer.alloc(answerBytes(index, ip.length, r, TIER_MAX));
    return JSON.parse(out.toString('utf8', 0, writeAnswer(out, 0, ip, index, r, TIER_MAX))) as Record<string, unknown>;
  };
  /** Addresses (first of each network) listed in a real file, read as a plain list. */
  const addresses = (rel: string): string[] =>
    fs
      .readFileSync(path.join(REAL, rel), 'utf8')
      .split(/\r?\n/)
      .map(listToken)
      .filter((t) => t !== '' && parseNetwork(t).ok)
      .map((t) => t.split('/')[0].split('-')[0])
      .filter((ip) => parseAddress(ip, 0, ip.length, p) !== NOT_ADDRESS);

  before(async () => {
    const dataDir = tempDir();
    const { reports } = await importRealData(dataDir);
    assert.ok(reports.every((r) => r.ok && r.skipped === 0), JSON.stringify(reports.filter((r) => !r.ok || r.skipped)));
    const build = runBuild({ dataDir, exports: false });
    index = (await loadIndexFile(path.join(build.dir, INDEX_FILE))).index;
  });

  test('every address of a VPN provider’s server list answers is_vpn with that provider', () => {
    for (const [file, provider] of [
      ['vpn/Joe12387__open-source-vpn-ip-lists/mullvad.txt', 'Mullvad'],
      ['vpn/Joe12387__open-source-vpn-ip-lists/nordvpn.txt', 'NordVPN'],
      ['vpn/Joe12387__open-source-vpn-ip-lists/surfshark.txt', 'Surfshark'],
    ]) {
      const ips = addresses(file);
      assert.ok(ips.length > 100);
      for (const ip of ips) {
        const a = answer(ip);
        assert.equal(a.is_vpn, true, `${file} ${ip}`);
        assert.equal((a.vpn as { provider?: string }).provider, provider, `${file} ${ip}`);
      }
    }
  });

  test('every Tor exit answers is_tor; Cloudflare ranges is_cdn; AWS, Google and Azure ranges is_hosting; relay egress is_relay', () => {
    const check = (file: string, field: string): void => {
      const ips = addresses(file);
      assert.ok(ips.length > 0, file);
      for (const ip of ips) assert.equal(answer(ip)[field], true, `${file} ${ip} ${field}`);
    };
    check('tor/javascripterzzeerrr__ipinfo-parser/torbulkexitlist', 'is_tor');
    check('tor/SecOps-Institute__Tor-IP-Addresses/tor-exit-nodes.lst', 'is_tor');
    check('cdn/lord-alfred__ipranges/cloudflare/ipv4.txt', 'is_cdn');
    check('cdn/lord-alfred__ipranges/cloudflare/ipv6.txt', 'is_cdn');
    check('relay/hroost__icloud-private-relay-iplist/ipv4/ipv4-ranges.txt', 'is_relay');
    // Providers are not checked here: provider-less datacenter lists (X4BNet, lord-alfred)
    // hold more specific networks inside many cloud ranges, and the most specific wins.
    for (const [file, keyPattern] of [
      ['cloud/femueller__cloud-ip-ranges/aws-ip-ranges.json', /"ip_prefix": "([^"]+)"/g],
      ['cloud/femueller__cloud-ip-ranges/google-cloud-ip-ranges.json', /"ipv4Prefix": "([^"]+)"/g],
      ['cloud/femueller__cloud-ip-ranges/microsoft-azure-ip-ranges.json', /"(\d+\.\d+\.\d+\.\d+\/\d+)"/g],
    ] as const) {
      const text = fs.readFileSync(path.join(REAL, file), 'utf8');
      const nets = [...text.matchAll(keyPattern)].map((m) => m[1]);
      assert.ok(nets.length > 10, file);
      for (const n of nets) {
        const a = answer(n.split('/')[0]);
        // CloudFront prefixes are cdn, the rest hosting.
        assert.ok(a.is_hosting === true || a.is_cdn === true, `${file} ${n}`);
      }
    }
    // Not checked yet: "relay and not vpn". X4BNet's merged output/vpn/ipv4.txt folds Apple's
    // relay egress into its VPN list, so those prefixes are vpn too (issue #5, open).
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
        assert.ok(Object.entries(a).every(([k, v]) => !k.startsWith('is_') || v === false), `${list} ${ip}: ${JSON.stringify(a)}`);
        checked++;
      }
    }
    assert.ok(checked > 20, `only ${checked} bogon addresses checked`);
  });
});
