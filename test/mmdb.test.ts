// The MMDB writer against three independent readers: the maxmind npm package, libmaxminddb's
// mmdblookup and Python's maxminddb, on seeded random databases; and a golden-bytes pin.

import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import maxmind from 'maxmind';
import { forEachUnaliased, forEachV4Cidr, forEachV6Cidr, wordsOf } from '../src/exports/cidr.js';
import { MmdbWriter } from '../src/exports/mmdb-writer.js';
import type { MmdbValue } from '../src/exports/mmdb-data.js';
import { formatAddress, type Family } from '../src/net/network.js';
import { prng } from '../scripts/gen-feeds.js';
import { tempDir } from './helpers.js';

interface Range {
  family: Family;
  start: bigint;
  end: bigint;
  value: MmdbValue;
}

const PROVIDERS = ['ExampleVPN', 'Mullvad', 'ProtonVPN', 'Über Proxy', 'a'.repeat(300)];

function randomValue(rnd: () => number, i: number): MmdbValue {
  const v: Record<string, MmdbValue> = { is_vpn: rnd() < 0.5, is_tor: rnd() < 0.2 };
  if (rnd() < 0.7) v.vpn = { provider: PROVIDERS[(rnd() * PROVIDERS.length) | 0], last_seen: `2026-11-${10 + ((rnd() * 20) | 0)}` };
  if (rnd() < 0.3) v.hits = (rnd() * 2 ** 32) >>> 0;
  if (rnd() < 0.2) v.pct = Math.round(rnd() * 10000) / 100;
  if (rnd() < 0.1) v.kinds = ['resproxy', 'dcproxy'].slice(0, 1 + ((rnd() * 2) | 0));
  if (rnd() < 0.05) v.many = Object.fromEntries(Array.from({ length: 40 }, (_, k) => [`k${k}`, k * i]));
  return v;
}

/** Disjoint random ranges: IPv4 across the space, IPv6 in 2000::/3 outside 2002::/16. */
function randomRanges(seed: number, count: number): Range[] {
  const rnd = prng(seed);
  const out: Range[] = [];
  for (const family of [4, 6] as const) {
    let at = family === 4 ? 1n << 24n : 0x2400n << 112n;
    const step = family === 4 ? 1n << 18n : 1n << 100n;
    for (let i = 0; i < count / 2; i++) {
      at += BigInt(Math.floor(rnd() * Number(step)));
      const size = family === 4 ? BigInt(1 + Math.floor(rnd() * 5000)) : BigInt(1 + Math.floor(rnd() * 5000)) << BigInt((rnd() * 60) | 0);
      out.push({ family, start: at, end: at + size - 1n, value: randomValue(rnd, i) });
      at += size;
    }
  }
  return out;
}

function writeDb(file: string, ranges: Range[], minRecordSize: 24 | 28 | 32 = 24): void {
  const w = new MmdbWriter(file, { databaseType: 'ipsift-test', description: 'ipsift writer test', buildEpoch: 1763683200, minRecordSize });
  for (const r of ranges) w.addRange(r.family, r.start, r.end, r.value, JSON.stringify(r.value));
  w.finish();
}

function probesOf(ranges: Range[], seed: number, total: number): { ip: string; expected: MmdbValue | null }[] {
  const rnd = prng(seed);
  const probes: { ip: string; expected: MmdbValue | null }[] = [];
  const find = (family: Family, v: bigint): MmdbValue | null => ranges.find((r) => r.family === family && v >= r.start && v <= r.end)?.value ?? null;
  for (const r of ranges)
    for (const v of [r.start - 1n, r.start, r.end, r.end + 1n]) probes.push({ ip: formatAddress(r.family, v), expected: find(r.family, v) });
  while (probes.length < total) {
    const r = ranges[(rnd() * ranges.length) | 0];
    const v = r.start + BigInt(Math.floor(rnd() * Number(r.end - r.start + 1n)));
    probes.push({ ip: formatAddress(r.family, v), expected: find(r.family, v) });
  }
  return probes;
}

/** Parses mmdblookup's annotated output ("value <type>", no commas) into a value. */
function parseMmdblookup(text: string): MmdbValue | null {
  if (/Could not find an entry/.test(text)) return null;
  const tokens = [...text.matchAll(/"((?:[^"\\]|\\.)*)"\s*(:|<utf8_string>)|(-?[\d.]+)\s*<(\w+)>|(true|false)\s*<boolean>|([{}[\]])/g)];
  let i = 0;
  const value = (): MmdbValue => {
    const t = tokens[i++];
    if (t[6] === '{') {
      const m: Record<string, MmdbValue> = {};
      while (tokens[i][6] !== '}') {
        const key = JSON.parse(`"${tokens[i++][1]}"`) as string;
        m[key] = value();
      }
      i++;
      return m;
    }
    if (t[6] === '[') {
      const a: MmdbValue[] = [];
      while (tokens[i][6] !== ']') a.push(value());
      i++;
      return a;
    }
    if (t[2] === '<utf8_string>') return JSON.parse(`"${t[1]}"`) as string;
    if (t[5]) return t[5] === 'true';
    return Number(t[3]);
  };
  return value();
}

/** Doubles print with 6 decimals in mmdblookup: compare numbers to that precision. */
function close(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && typeof b === 'number') return Math.abs(a - b) < 1e-6 * Math.max(1, Math.abs(b));
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, k) => close(x, b[k]));
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => close((a as never)[k], (b as never)[k]));
  }
  return a === b;
}

/** Python maxminddb's answer for each address, as JSON values. */
function pythonRead(file: string, ips: string[]): unknown[] {
  // MODE_MMAP_EXT: the package's C extension, which is libmaxminddb (the library mmdblookup
  // and most readers in other languages link), so every probe goes through libmaxminddb here.
  const script =
    'import sys, json, maxminddb\nr = maxminddb.open_database(sys.argv[1], maxminddb.MODE_MMAP_EXT)\nfor line in sys.stdin:\n    print(json.dumps(r.get(line.strip())))\n';
  const out = execFileSync('/usr/bin/python3', ['-c', script, file], { input: ips.join('\n') + '\n', maxBuffer: 1 << 28 });
  return out
    .toString()
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as unknown);
}

/** mmdblookup's answer for each address (one process each, as the tool works). */
function mmdblookupRead(file: string, ips: string[]): (MmdbValue | null)[] {
  const script = 'while read ip; do echo "@@"; mmdblookup --file "$1" --ip "$ip" 2>&1; done; true';
  const out = execFileSync('sh', ['-c', script, 'sh', file], { input: ips.join('\n') + '\n', maxBuffer: 1 << 28 });
  return out.toString().split('@@\n').slice(1).map(parseMmdblookup);
}

/** The obvious CIDR split in bigints: the reference the export path's splitters are held to. */
function* cidrsOf(start: bigint, end: bigint, bits: number): Generator<[bigint, number]> {
  let a = start;
  while (a <= end) {
    let size = 0;
    // Largest aligned block starting at a that stays within end.
    while (size < bits && (a & ((1n << BigInt(size + 1)) - 1n)) === 0n && a + (1n << BigInt(size + 1)) - 1n <= end) size++;
    yield [a, bits - size];
    a += 1n << BigInt(size);
  }
}

const hasMmdblookup = spawnSync('mmdblookup', ['--version']).status === 0;
const hasPython = spawnSync('/usr/bin/python3', ['-c', 'import maxminddb']).status === 0;

describe('MMDB writer', () => {
  const dir = tempDir();
  const file = path.join(dir, 'random.mmdb');
  const ranges = randomRanges(2026, 3000);
  writeDb(file, ranges);
  const probes = probesOf(ranges, 9, 10_000);

  test('the reference CIDR split covers a range exactly with maximal aligned blocks', () => {
    assert.deepEqual([...cidrsOf(0n, 2n ** 32n - 1n, 32)], [[0n, 0]]);
    assert.deepEqual(
      [...cidrsOf(1n, 6n, 32)],
      [
        [1n, 32],
        [2n, 31],
        [4n, 31],
        [6n, 32],
      ],
    );
    const rnd = prng(3);
    for (let k = 0; k < 300; k++) {
      const a = BigInt(Math.floor(rnd() * 2 ** 32));
      const b = a + BigInt(Math.floor(rnd() * 100000));
      let next = a;
      for (const [base, len] of cidrsOf(a, b, 32)) {
        assert.equal(base, next);
        assert.equal(base % (1n << BigInt(32 - len)), 0n);
        next = base + (1n << BigInt(32 - len));
      }
      assert.equal(next, b + 1n);
    }
  });

  test('the export path splits ranges into the same CIDRs without bigints', () => {
    const rnd = prng(12);
    const big = (w: Uint32Array): bigint => (BigInt(w[0]) << 96n) | (BigInt(w[1]) << 64n) | (BigInt(w[2]) << 32n) | BigInt(w[3]);
    for (let k = 0; k < 3000; k++) {
      const a = (BigInt(Math.floor(rnd() * 2 ** 32)) << 96n) | (BigInt(Math.floor(rnd() * 2 ** 32)) << BigInt((rnd() * 64) | 0));
      const b = a + (BigInt(Math.floor(rnd() * 2 ** 40)) << BigInt((rnd() * 60) | 0));
      if (b >= 1n << 128n) continue;
      const got: [bigint, number][] = [];
      forEachV6Cidr(wordsOf(a, new Uint32Array(4)), wordsOf(b, new Uint32Array(4)), (w, p) => got.push([big(w), p]));
      assert.deepEqual(got, [...cidrsOf(a, b, 128)]);
      const a4 = Math.floor(rnd() * 2 ** 32);
      const b4 = Math.min(2 ** 32 - 1, a4 + Math.floor(rnd() * 2 ** 20));
      const got4: [bigint, number][] = [];
      forEachV4Cidr(a4, b4, (x, p) => got4.push([BigInt(x), p]));
      assert.deepEqual(got4, [...cidrsOf(BigInt(a4), BigInt(b4), 32)]);
    }
    const whole: number[] = [];
    forEachV6Cidr(new Uint32Array(4), new Uint32Array([0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff]), (_, p) => whole.push(p));
    assert.deepEqual(whole, [0]);
  });

  test('IPv6 blocks are clipped around the networks the tree maps to IPv4', () => {
    const got: string[] = [];
    const collect = (w: Uint32Array, p: number): void =>
      void got.push(`${formatAddress(6, (BigInt(w[0]) << 96n) | (BigInt(w[1]) << 64n) | (BigInt(w[2]) << 32n) | BigInt(w[3]))}/${p}`);
    forEachUnaliased(wordsOf(0x2000n << 112n, new Uint32Array(4)), 14, collect); // 2000::/14 holds 2002::/16
    assert.deepEqual(got, ['2000::/15', '2003::/16']);
    got.length = 0;
    forEachUnaliased(wordsOf(0x2002_0a00n << 96n, new Uint32Array(4)), 32, collect); // inside 2002::/16
    assert.deepEqual(got, []);
    got.length = 0;
    forEachUnaliased(wordsOf(0x2a01_04f8n << 96n, new Uint32Array(4)), 32, collect);
    assert.deepEqual(got, ['2a01:4f8::/32']);
    got.length = 0;
    forEachUnaliased(new Uint32Array(4), 94, collect); // ::/94 holds ::/96
    assert.deepEqual(got, ['::1:0:0/96', '::2:0:0/95']);
  });

  test('the maxmind npm reader returns exactly the source record on ≥ 10 000 probes', async () => {
    const reader = await maxmind.open<Record<string, never>>(file);
    assert.ok(probes.length >= 10_000);
    for (const p of probes) assert.deepEqual(reader.get(p.ip), p.expected, p.ip);
    // IPv4 through the ::ffff:0:0/96 and 2002::/16 aliases
    const v4 = ranges.find((r) => r.family === 4)!;
    const a = Number(v4.start);
    assert.deepEqual(reader.get(`::ffff:${formatAddress(4, v4.start)}`), v4.value);
    assert.deepEqual(reader.get(`2002:${(a >>> 16).toString(16)}:${(a & 0xffff).toString(16)}::1`), v4.value);
    assert.equal(reader.metadata.ipVersion, 6);
    assert.equal(reader.metadata.databaseType, 'ipsift-test');
  });

  test('Python maxminddb (python3-maxminddb, libmaxminddb underneath) returns exactly the source record', {
    skip: !hasPython && 'python3-maxminddb is not installed (.ci/run installs it)',
  }, () => {
    const got = pythonRead(
      file,
      probes.map((p) => p.ip),
    );
    assert.equal(got.length, probes.length);
    for (const [k, v] of got.entries()) assert.ok(close(v, probes[k].expected), `${probes[k].ip}: ${JSON.stringify(v)}`);
  });

  test('libmaxminddb (mmdblookup) returns exactly the source record', { skip: !hasMmdblookup && 'mmdb-bin is not installed (.ci/run installs it)' }, () => {
    // A process per address, as the tool works: every 20th probe (range edges and inside).
    // Every probe went through libmaxminddb in the Python test above.
    const some = probes.filter((_, k) => k % 20 === 0);
    const got = mmdblookupRead(
      file,
      some.map((p) => p.ip),
    );
    assert.equal(got.length, some.length);
    for (const [k, v] of got.entries()) assert.ok(close(v, some[k].expected), `${some[k].ip}: ${JSON.stringify(v)}`);
  });

  for (const size of [28, 32] as const) {
    test(`${size}-bit records read back in all three readers`, async () => {
      const f = path.join(dir, `random-${size}.mmdb`);
      writeDb(f, ranges, size);
      const reader = await maxmind.open<Record<string, never>>(f);
      assert.equal(reader.metadata.recordSize, size);
      for (const p of probes) assert.deepEqual(reader.get(p.ip), p.expected, p.ip);
      const some = probes.filter((_, k) => k % 100 === 0);
      if (hasPython)
        for (const [k, v] of pythonRead(
          f,
          probes.map((p) => p.ip),
        ).entries())
          assert.ok(close(v, probes[k].expected), probes[k].ip);
      if (hasMmdblookup)
        for (const [k, v] of mmdblookupRead(
          f,
          some.map((p) => p.ip),
        ).entries())
          assert.ok(close(v, some[k].expected), some[k].ip);
    });
  }

  test('metadata carries the required keys with their exact types; identical records are stored once', {
    skip: !hasMmdblookup && 'mmdb-bin is not installed',
  }, () => {
    const meta = execFileSync('mmdblookup', ['--file', file, '--ip', formatAddress(4, ranges[0].start), '--verbose'], { encoding: 'utf8' });
    assert.match(meta, /Binary format: 2\.0/);
    assert.match(meta, /IP version: +IPv6/);
    assert.match(meta, /Record size: +(24|28|32)/);
    assert.match(meta, /Type: +ipsift-test/);
    // One copy per distinct record: a database of 2 000 ranges sharing one record stays small.
    const same = path.join(dir, 'same.mmdb');
    const value = { is_vpn: true, vpn: { provider: 'ExampleVPN' } };
    writeDb(
      same,
      Array.from({ length: 2000 }, (_, k) => ({ family: 4 as const, start: BigInt(k * 512 + (1 << 24)), end: BigInt(k * 512 + (1 << 24) + 255), value })),
    );
    const data = fs.readFileSync(same);
    assert.equal(data.indexOf(Buffer.from('ExampleVPN')), data.lastIndexOf(Buffer.from('ExampleVPN')));
  });

  test('golden bytes: a small database is byte-for-byte what it was', async () => {
    const golden = path.join(dir, 'golden.mmdb');
    writeDb(golden, [
      { family: 4, start: 0x51070300n, end: 0x510703ffn, value: { is_vpn: true, vpn: { provider: 'ExampleVPN', last_seen: '2026-11-01' } } },
      { family: 4, start: 0x51070400n, end: 0x51070520n, value: { is_vpn: false, is_tor: true } },
      { family: 6, start: 0x2a0104f8c012n << 80n, end: ((0x2a0104f8c012n + 1n) << 80n) - 1n, value: { is_vpn: true, vpn: { provider: 'ExampleVPN' } } },
    ]);
    const bytes = fs.readFileSync(golden);
    assert.deepEqual((await maxmind.open<Record<string, never>>(golden)).get('81.7.4.1'), { is_vpn: false, is_tor: true });
    assert.equal(crypto.createHash('sha256').update(bytes).digest('hex'), GOLDEN_SHA256, `golden database changed (size ${bytes.length})`);
  });
});

const GOLDEN_SHA256 = 'c45304cab11d6ce64d3589ddb96fba1ac606194e6048a8159b64e7b0756b3c73';
