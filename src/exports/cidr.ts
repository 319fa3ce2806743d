// Ranges to CIDR blocks without bigints (the export hot loop): IPv4 as numbers, IPv6 as
// four big-endian 32-bit words.

/** Trailing zero bits of a 32-bit word (32 for zero). */
function ctz32(x: number): number {
  return x === 0 ? 32 : 31 - Math.clz32((x | 0) & -(x | 0));
}

/** 2^n for n in 0..32: `2 ** n` with n a variable is a call to pow, a twentieth of an export's CPU. */
const POW2 = Float64Array.from({ length: 33 }, (_, n) => 2 ** n);

/** Calls out(base, prefix) for each CIDR block of the IPv4 range [a, b], in order. */
export function forEachV4Cidr(a: number, b: number, out: (base: number, prefix: number) => void): void {
  while (a <= b) {
    let size = a === 0 ? 32 : ctz32(a);
    while (a + POW2[size] - 1 > b) size--;
    out(a, 32 - size);
    a += POW2[size];
  }
}

/** -1, 0 or 1 as the 128-bit words x compare with y. */
function compare(x: Uint32Array, y: Uint32Array): number {
  for (let k = 0; k < 4; k++) if (x[k] !== y[k]) return x[k] < y[k] ? -1 : 1;
  return 0;
}

const last = new Uint32Array(4);

/** last = a with its low `size` bits set (a is aligned to 2^size). */
function fillLow(a: Uint32Array, size: number): void {
  for (let k = 3; k >= 0; k--) {
    const low = 32 * (3 - k); // bits below word k
    const bits = Math.max(0, Math.min(32, size - low));
    last[k] = bits === 32 ? 0xffffffff : (a[k] | (POW2[bits] - 1)) >>> 0;
  }
}

/**
 * Calls out(a, prefix) for each CIDR block of the IPv6 range [start, end] (words), in order.
 * `a` is a scratch array holding the block's base during the call.
 */
export function forEachV6Cidr(start: Uint32Array, end: Uint32Array, out: (a: Uint32Array, prefix: number) => void): void {
  const a = Uint32Array.from(start);
  while (compare(a, end) <= 0) {
    let size = a[3] !== 0 ? ctz32(a[3]) : a[2] !== 0 ? 32 + ctz32(a[2]) : a[1] !== 0 ? 64 + ctz32(a[1]) : a[0] !== 0 ? 96 + ctz32(a[0]) : 128;
    for (;;) {
      fillLow(a, size);
      if (compare(last, end) <= 0) break;
      size--;
    }
    out(a, 128 - size);
    // a = last + 1, stopping at the top of the space.
    let k = 3;
    while (k >= 0 && last[k] === 0xffffffff) a[k--] = 0;
    if (k < 0) return;
    a[k] = last[k] + 1;
    for (let j = k - 1; j >= 0; j--) a[j] = last[j];
  }
}

export function wordsOf(v: bigint, into: Uint32Array): Uint32Array {
  into[0] = Number(v >> 96n);
  into[1] = Number((v >> 64n) & 0xffffffffn);
  into[2] = Number((v >> 32n) & 0xffffffffn);
  into[3] = Number(v & 0xffffffffn);
  return into;
}

/** IPv6 networks a MaxMind DB tree maps onto its IPv4 space: ::/96, ::ffff:0:0/96, 2002::/16. */
const ALIASED: readonly { w: readonly number[]; prefix: number }[] = [
  { w: [0, 0, 0, 0], prefix: 96 },
  { w: [0, 0, 0xffff, 0], prefix: 96 },
  { w: [0x20020000, 0, 0, 0], prefix: 16 },
];

/** Whether the first `bits` bits of a and b agree. */
function samePrefix(a: ArrayLike<number>, b: ArrayLike<number>, bits: number): boolean {
  for (let k = 0; k < 4 && bits > 0; k++, bits -= 32) {
    const mask = bits >= 32 ? 0xffffffff : (0xffffffff << (32 - bits)) >>> 0;
    if (((a[k] ^ b[k]) & mask) >>> 0 !== 0) return false;
  }
  return true;
}

/**
 * Calls out(w, prefix) for the parts of the IPv6 block w/prefix outside the aliased networks
 * (an MMDB tree answers those with IPv4 data, so IPv6 data cannot live there).
 */
export function forEachUnaliased(w: Uint32Array, prefix: number, out: (w: Uint32Array, prefix: number) => void): void {
  for (const a of ALIASED) {
    if (!samePrefix(w, a.w, Math.min(prefix, a.prefix))) continue;
    if (prefix >= a.prefix) return; // inside the aliased network: dropped
    // The block contains the aliased network: split it in two and look again.
    const low = Uint32Array.from(w);
    const high = Uint32Array.from(w);
    const k = prefix >>> 5;
    high[k] = (high[k] | (1 << (31 - (prefix & 31)))) >>> 0;
    forEachUnaliased(low, prefix + 1, out);
    forEachUnaliased(high, prefix + 1, out);
    return;
  }
  out(w, prefix);
}
