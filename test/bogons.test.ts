import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { IPV6, NOT_ADDRESS, ParsedAddress, parseAddress } from '../src/net/address.js';
import { BOGON_RANGES_V4, BOGON_RANGES_V6, isBogonV4, isBogonV6 } from '../src/net/bogons.js';
import { formatAddress, parseNetwork } from '../src/net/network.js';
import { prng } from '../scripts/gen-feeds.js';
import { SHARED_REAL } from './helpers.js';

function isBogon(s: string): boolean {
  const p = new ParsedAddress();
  const kind = parseAddress(s, 0, s.length, p);
  assert.notEqual(kind, NOT_ADDRESS, s);
  return kind === IPV6 ? isBogonV6(p.w) : isBogonV4(p.v4);
}

/** First and last address of each network text (CIDR). */
function edges(cidr: string): string[] {
  const r = parseNetwork(cidr);
  assert.ok(r.ok, cidr);
  return [formatAddress(r.network.family, r.network.start), formatAddress(r.network.family, r.network.end)];
}

describe('bogons', () => {
  test('the fast path agrees with the range list, at every range edge and at random', () => {
    const inRanges = (ranges: readonly { start: bigint; end: bigint }[], a: bigint): boolean => ranges.some((r) => a >= r.start && a <= r.end);
    const w = new Uint32Array(4);
    const v6 = (a: bigint): boolean => {
      for (let k = 0; k < 4; k++) w[k] = Number((a >> BigInt(96 - 32 * k)) & 0xffffffffn);
      return isBogonV6(w);
    };
    const probes4: bigint[] = [];
    const probes6: bigint[] = [];
    for (const r of BOGON_RANGES_V4) probes4.push(r.start - 1n, r.start, r.end, r.end + 1n);
    for (const r of BOGON_RANGES_V6) probes6.push(r.start - 1n, r.start, r.end, r.end + 1n);
    const rnd = prng(5);
    for (let i = 0; i < 20000; i++) {
      probes4.push(BigInt(Math.floor(rnd() * 2 ** 32)));
      probes6.push((BigInt(Math.floor(rnd() * 2 ** 32)) << 96n) | BigInt(Math.floor(rnd() * 2 ** 32)));
    }
    for (const a of probes4) if (a >= 0n && a < 2n ** 32n) assert.equal(isBogonV4(Number(a)), inRanges(BOGON_RANGES_V4, a), `IPv4 ${a}`);
    for (const a of probes6) if (a >= 0n && a < 2n ** 128n) assert.equal(v6(a), inRanges(BOGON_RANGES_V6, a), `IPv6 ${a.toString(16)}`);
  });

  const table: [string, boolean][] = [
    ['0.0.0.0', true],
    ['0.255.255.255', true],
    ['1.0.0.0', false],
    ['9.255.255.255', false],
    ['10.0.0.0', true],
    ['10.255.255.255', true],
    ['11.0.0.0', false],
    ['100.63.255.255', false],
    ['100.64.0.0', true],
    ['100.127.255.255', true],
    ['100.128.0.0', false],
    ['127.0.0.1', true],
    ['169.254.10.10', true],
    ['172.15.255.255', false],
    ['172.16.0.0', true],
    ['172.31.255.255', true],
    ['172.32.0.0', false],
    ['192.0.0.1', true],
    ['192.0.0.9', false], // PCP anycast: globally reachable
    ['192.0.0.10', false], // TURN anycast
    ['192.0.2.55', true],
    ['192.88.99.1', true],
    ['192.168.1.1', true],
    ['192.169.0.0', false],
    ['198.18.0.0', true],
    ['198.19.255.255', true],
    ['198.20.0.0', false],
    ['198.51.100.7', true],
    ['203.0.113.200', true],
    ['203.0.114.0', false],
    ['224.0.0.1', true],
    ['239.255.255.255', true],
    ['240.0.0.1', true],
    ['255.255.255.255', true],
    ['8.8.8.8', false],
    ['::', true],
    ['::1', true],
    ['::2', true],
    ['64:ff9b::1', false], // NAT64 well-known prefix is global
    ['64:ff9b:1::1', true],
    ['100::1', true],
    ['2001::1', true], // Teredo, inside 2001::/23
    ['2001:2::1', true], // benchmarking
    ['2001:3::1', false], // AMT
    ['2001:4:112::1', false], // AS112-v6
    ['2001:20::1', false], // ORCHIDv2
    ['2001:1::1', false],
    ['2001:1::4', true],
    ['2001:200::1', false], // first global allocation after 2001::/23
    ['2001:db8::1', true],
    ['2001:db9::1', false],
    ['2002::1', false], // 6to4 is looked up
    ['2a00:1450::1', false],
    ['3fff::1', true],
    ['3fff:1000::', false],
    ['4000::1', true],
    ['5f00::1', true],
    ['fc00::1', true],
    ['fdff:ffff::1', true],
    ['fe80::1', true],
    ['fec0::1', true],
    ['ff02::1', true],
  ];
  for (const [address, bogon] of table) {
    test(`${address} is ${bogon ? '' : 'not '}a bogon`, () => assert.equal(isBogon(address), bogon));
  }

  test('every range of the MISP special-use lists is bogon at both ends', () => {
    const lists = ['rfc1918', 'rfc5735', 'rfc6598', 'rfc3849', 'multicast', 'ipv6-linklocal'];
    let checked = 0;
    for (const name of lists) {
      const file = path.join(SHARED_REAL, 'bogon/MISP__misp-warninglists/lists', name, 'list.json');
      const { list } = JSON.parse(fs.readFileSync(file, 'utf8')) as { list: string[] };
      for (const cidr of list) {
        for (const a of edges(cidr)) {
          if (a === '192.0.0.9' || a === '192.0.0.10') continue;
          assert.ok(isBogon(a), `${a} (from ${name} ${cidr}) should be a bogon`);
          checked++;
        }
      }
    }
    assert.ok(checked > 60);
  });

  test('every IPv6 block IANA keeps "Reserved by IETF" is bogon, but for the global NAT64 prefix', () => {
    const xml = fs.readFileSync(path.join(SHARED_REAL, 'bogon/netaddr__netaddr/netaddr/ip/ipv6-address-space.xml'), 'utf8');
    const records = [...xml.matchAll(/<record[^>]*>([\s\S]*?)<\/record>/g)].map((m) => m[1]);
    let reserved = 0;
    for (const r of records) {
      const prefix = /<prefix>([^<]+)<\/prefix>/.exec(r)?.[1];
      const description = /<description>([^<]+)<\/description>/.exec(r)?.[1] ?? '';
      if (!prefix || !/Reserved by IETF/.test(description)) continue;
      reserved++;
      for (const a of edges(prefix)) assert.ok(isBogon(a), `${a} of ${prefix}`);
    }
    assert.ok(reserved >= 10);
    // Global unicast space between the special blocks is looked up.
    for (const a of ['2400:cb00::1', '2600::1', '2c0f:ffff::1', '3ffe:ffff::1']) assert.equal(isBogon(a), false, a);
  });
});
