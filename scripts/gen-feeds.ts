// Synthetic feeds in the canonical CSV: seeded, every category, IPv4 and IPv6, public
// address space only, with deliberate overlaps (nested and equal networks) so the build's
// overlap rules are exercised.
//
//   node dist/scripts/gen-feeds.js --ranges 1000000 --seed 7 --out /tmp/feeds.csv

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CATEGORIES, CONFIDENCE_VALUES, DETAIL_FIELDS, METHOD_VALUES, type Category } from '../src/model/categories.js';
import { formatIPv4, formatIPv6Words } from '../src/net/address.js';
import { isBogonV4, isBogonV6 } from '../src/net/bogons.js';

/** mulberry32: small, fast, good enough for test data; same seed → same feeds. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface GenOptions {
  ranges: number;
  seed: number;
  /** Share of IPv6 ranges (0..1). */
  v6Share?: number;
  /** Providers per category: fewer → more repeated details. */
  providers?: number;
}

const DAY_MS = 86_400_000;
const LAST_DAY = Date.UTC(2026, 10, 20);

/** Yields CSV lines (header first). */
export function* generateFeedCsv(o: GenOptions): Generator<string> {
  const rnd = prng(o.seed);
  const v6Share = o.v6Share ?? 0.3;
  const providers = o.providers ?? 40;
  const int = (n: number): number => Math.floor(rnd() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
  const date = (maxDaysAgo: number): string => new Date(LAST_DAY - int(maxDaysAgo) * DAY_MS).toISOString().slice(0, 10);
  const columns = ['network', 'category', 'provider', 'confidence', 'method', 'first_seen', 'last_seen', 'hits', 'hits_days_pct', 'providers_num'];
  yield columns.join(',');

  const w = new Uint32Array(4);
  const recent: string[] = []; // networks to nest in or repeat
  for (let i = 0; i < o.ranges; i++) {
    const category: Category = pick(CATEGORIES);
    let network: string;
    const roll = rnd();
    if (roll < 0.08 && recent.length > 0) {
      network = pick(recent); // the same network again, other detail: equal-network rule
    } else if (rnd() < v6Share) {
      do {
        w[0] = ((0x2000 + int(0x1fff)) << 16) | int(0x10000);
        w[1] = int(2 ** 32);
        w[2] = int(2 ** 32);
        w[3] = int(2 ** 32);
      } while (isBogonV6(w));
      const prefix = pick([32, 40, 48, 48, 56, 64, 64, 64, 96, 112, 120, 128, 128]);
      for (let k = 0; k < 4; k++) {
        const keep = Math.max(0, Math.min(32, prefix - 32 * k));
        w[k] = keep === 0 ? 0 : keep === 32 ? w[k] : (w[k] & ~((1 << (32 - keep)) - 1)) >>> 0;
      }
      network = `${formatIPv6Words(w)}/${prefix}`;
    } else {
      let a: number;
      do a = int(2 ** 32);
      while (isBogonV4(a));
      const shape = rnd();
      if (shape < 0.1) {
        const len = 1 + int(300);
        const end = Math.min(2 ** 32 - 1, a + len);
        network = isBogonV4(end) ? formatIPv4(a) : `${formatIPv4(a)}-${formatIPv4(end)}`;
      } else {
        const prefix = pick([16, 20, 22, 24, 24, 24, 26, 28, 29, 30, 32, 32, 32, 32]);
        const base = prefix === 32 ? a : (a & ~((1 << (32 - prefix)) - 1)) >>> 0;
        const bogonInside = isBogonV4(base) || isBogonV4(base + 2 ** (32 - prefix) - 1);
        network = bogonInside ? formatIPv4(a) : `${formatIPv4(base)}/${prefix}`;
      }
    }
    if (recent.length < 1024) recent.push(network);
    else recent[int(1024)] = network;

    const fields = DETAIL_FIELDS[category];
    const firstSeen = date(365);
    const values: Record<string, string> = {
      provider: `${category}-provider-${int(providers)}`,
      confidence: pick(CONFIDENCE_VALUES),
      method: pick(METHOD_VALUES),
      first_seen: firstSeen,
      last_seen: date(Math.max(1, Math.round((LAST_DAY - Date.parse(firstSeen)) / DAY_MS) + 1)),
      hits: String(int(50) * 10),
      hits_days_pct: String(int(11) * 10),
      providers_num: String(1 + int(4)),
    };
    const row = columns.map((c) => {
      if (c === 'network') return network;
      if (c === 'category') return category;
      // Leave some optional detail out so absent fields are exercised.
      return (fields as readonly string[]).includes(c) && rnd() > 0.03 ? values[c] : '';
    });
    yield row.join(',');
  }
}

export function writeFeedCsv(file: string, o: GenOptions): number {
  const fd = fs.openSync(file, 'w');
  let lines = 0;
  let chunk = '';
  for (const line of generateFeedCsv(o)) {
    chunk += line + '\n';
    lines++;
    if (chunk.length > 1 << 20) {
      fs.writeSync(fd, chunk);
      chunk = '';
    }
  }
  fs.writeSync(fd, chunk);
  fs.closeSync(fd);
  return lines - 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const { values } = parseArgs({
    options: {
      ranges: { type: 'string', default: '1000000' },
      seed: { type: 'string', default: '1' },
      'v6-share': { type: 'string', default: '0.3' },
      providers: { type: 'string', default: '40' },
      out: { type: 'string' },
    },
  });
  if (!values.out) {
    process.stderr.write('usage: gen-feeds --out FILE [--ranges N] [--seed S] [--v6-share 0.3] [--providers 40]\n');
    process.exit(2);
  }
  const t = performance.now();
  const n = writeFeedCsv(values.out, {
    ranges: Number(values.ranges),
    seed: Number(values.seed),
    v6Share: Number(values['v6-share']),
    providers: Number(values.providers),
  });
  process.stdout.write(`wrote ${n} ranges to ${values.out} in ${Math.round(performance.now() - t)} ms\n`);
}
