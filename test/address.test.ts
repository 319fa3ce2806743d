import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, test } from 'node:test';
import ipaddr from 'ipaddr.js';
import { IPV4, IPV4_MAPPED, IPV6, NOT_ADDRESS, ParsedAddress, formatIPv6Groups, normalisedText, parseAddress, writeIPv6Groups } from '../src/net/address.js';
import { prng } from '../scripts/gen-feeds.js';

function normalise(s: string): string | null {
  const p = new ParsedAddress();
  return parseAddress(s, 0, s.length, p) === NOT_ADDRESS ? null : normalisedText(s, 0, s.length, p);
}

describe('address parsing', () => {
  const valid: [string, string][] = [
    ['1.2.3.4', '1.2.3.4'],
    ['0.0.0.0', '0.0.0.0'],
    ['255.255.255.255', '255.255.255.255'],
    ['8.8.8.8', '8.8.8.8'],
    ['::', '::'],
    ['::1', '::1'],
    ['1::', '1::'],
    ['2001:DB8::1', '2001:db8::1'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'], // first of equal runs
    ['2001:0:0:1:0:0:0:1', '2001:0:0:1::1'], // longest run wins
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'], // a single zero group stays
    ['fe80::1:2', 'fe80::1:2'],
    ['::ffff:1.2.3.4', '::ffff:1.2.3.4'],
    ['::FFFF:0102:0304', '::ffff:1.2.3.4'],
    ['0:0:0:0:0:ffff:1.2.3.4', '::ffff:1.2.3.4'],
    ['64:ff9b::192.0.2.33', '64:ff9b::c000:221'],
    ['::1.2.3.4', '::102:304'],
    ['1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8'],
    ['1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:102:304'],
    ['ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
  ];
  for (const [input, expected] of valid) {
    test(`${input} is an address written ${expected}`, () => assert.equal(normalise(input), expected));
  }

  const invalid = [
    '',
    '1',
    '1.2.3',
    '1.2.3.4.5',
    '01.2.3.4',
    '1.2.3.04',
    '1.2.3.256',
    '1.2.3.-1',
    '1.2.3.4 ',
    ' 1.2.3.4',
    '1..2.3',
    '0x1.2.3.4',
    '1.2.3.4/32',
    '1e1.2.3.4',
    ':',
    ':::',
    '1:2',
    '1::2::3',
    ':1::2',
    '1::2:',
    '12345::',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7::8', // :: must stand for at least one group
    '::1.2.3',
    '::1.2.3.04',
    '1.2.3.4::',
    '::1.2.3.4:5',
    'fe80::1%eth0',
    'fe80::1%25eth0',
    'g::1',
    '[::1]',
    'localhost',
    '1:2:3:4:5:6:7:1.2.3.4',
    'ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.2555',
  ];
  for (const input of invalid) {
    test(`${JSON.stringify(input)} is not an address`, () => assert.equal(normalise(input), null));
  }

  test('IPv4-mapped IPv6 is classified as its IPv4 address', () => {
    const p = new ParsedAddress();
    assert.equal(parseAddress('::ffff:10.1.2.3', 0, 15, p), IPV4_MAPPED);
    assert.equal(p.v4, (10 << 24) | (1 << 16) | (2 << 8) | 3);
    assert.equal(parseAddress('10.1.2.3', 0, 8, p), IPV4);
    assert.equal(parseAddress('::fffe:10.1.2.3', 0, 15, p), IPV6);
  });

  test('parsing reads only the given slice of a string', () => {
    const p = new ParsedAddress();
    assert.equal(parseAddress('/1.2.3.4', 1, 8, p), IPV4);
    assert.equal(parseAddress('x::1y', 1, 4, p), IPV6);
  });

  test('agrees with net.isIP on 20 000 random near-addresses (zones aside)', () => {
    const rnd = prng(99);
    const alphabet = '0123456789abcdefABCDEF:.%';
    const p = new ParsedAddress();
    for (let i = 0; i < 20000; i++) {
      let s: string;
      if (i % 2 === 0) {
        // Mutate a valid address by one character.
        const base = i % 4 === 0 ? `${(rnd() * 256) | 0}.${(rnd() * 256) | 0}.${(rnd() * 256) | 0}.${(rnd() * 256) | 0}` : '2001:db8:a:b::c:1';
        const at = (rnd() * base.length) | 0;
        s = base.slice(0, at) + alphabet[(rnd() * alphabet.length) | 0] + base.slice(at + (rnd() < 0.5 ? 1 : 0));
      } else {
        s = Array.from({ length: 2 + ((rnd() * 14) | 0) }, () => alphabet[(rnd() * alphabet.length) | 0]).join('');
      }
      const ours = parseAddress(s, 0, s.length, p) !== NOT_ADDRESS;
      const node = net.isIP(s) !== 0 && !s.includes('%');
      assert.equal(ours, node, `disagreement on ${JSON.stringify(s)}`);
    }
  });

  test('RFC 5952 text equals ipaddr.js for 20 000 random IPv6 addresses', () => {
    const rnd = prng(5952);
    for (let i = 0; i < 20000; i++) {
      // Zero-heavy groups so that runs of every length occur.
      const g = Array.from({ length: 8 }, () => (rnd() < 0.5 ? 0 : (rnd() * 65536) | 0));
      if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) continue;
      const text = formatIPv6Groups(g);
      assert.equal(text, ipaddr.IPv6.parse(text).toRFC5952String());
      assert.equal(normalise(text), text);
      const full = g.map((x) => x.toString(16).padStart(4, '0').toUpperCase()).join(':');
      assert.equal(normalise(full), text);
    }
  });

  test('writeIPv6Groups writes the bytes of formatIPv6Groups, at any offset, mapped forms too', () => {
    const rnd = prng(77);
    const out = Buffer.alloc(64);
    const g = new Uint16Array(16);
    for (let i = 0; i < 20000; i++) {
      for (let k = 0; k < 16; k++) g[k] = rnd() < 0.5 ? 0 : rnd() < 0.1 ? 0xffff : (rnd() * 65536) | 0;
      if (i % 10 === 0) g.set([0, 0, 0, 0, 0, 0xffff], 8);
      const end = writeIPv6Groups(out, 3, g, 8);
      const text = formatIPv6Groups(g, 8);
      assert.equal(out.toString('latin1', 3, end), text);
      assert.ok(end - 3 <= 45);
    }
  });
});
