// Strict textual address parsing (DESIGN.md §3) into integers, without allocation.
//
// IPv4: exactly four decimal parts 0..255, no leading zeros (what net.isIP accepts).
// IPv6: RFC 4291 text forms, `::` at most once, an embedded dotted IPv4 only as the last
// 32 bits; no zone identifiers. Anything else is not an address.

export const NOT_ADDRESS = 0;
export const IPV4 = 4;
export const IPV6 = 6;
/** IPv4-mapped IPv6 (::ffff:a.b.c.d): classified as the IPv4 address in `v4`. */
export const IPV4_MAPPED = 46;
export type AddressKind = typeof NOT_ADDRESS | typeof IPV4 | typeof IPV6 | typeof IPV4_MAPPED;

/** Longest text form of an IPv6 address: ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255 */
export const MAX_ADDRESS_LENGTH = 45;

/** Reusable parse result: one per thread, overwritten by every parse. */
export class ParsedAddress {
  kind: AddressKind = NOT_ADDRESS;
  /** The IPv4 value (unsigned) for IPV4 and IPV4_MAPPED. */
  v4 = 0;
  /** The IPv6 value as four big-endian 32-bit words, for IPV6 and IPV4_MAPPED. */
  readonly w = new Uint32Array(4);
  /** 16-bit groups of the last IPv6 parse (scratch for formatting). */
  readonly groups = new Uint16Array(8);
}

/** Hex digit values by character code; -1 for anything else. */
const HEX = new Int8Array(256).fill(-1);
for (let c = 48; c <= 57; c++) HEX[c] = c - 48;
for (let c = 97; c <= 102; c++) HEX[c] = c - 87;
for (let c = 65; c <= 70; c++) HEX[c] = c - 55;

/**
 * Parses s[start, end) as a dotted IPv4 address. Returns the unsigned value, or -1.
 * One pass with no look-ahead: this is the hot path of every IPv4 lookup.
 */
export function parseIPv4(s: string, start: number, end: number): number {
  let value = 0;
  let part = 0;
  let partStart = start;
  let dots = 0;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (dots === 3 || !isDecimalPart(s, partStart, i, part)) return -1;
      value = value * 256 + part;
      dots++;
      part = 0;
      partStart = i + 1;
    } else {
      const d = c - 48;
      if (d < 0 || d > 9) return -1;
      part = part * 10 + d;
    }
  }
  if (dots !== 3 || !isDecimalPart(s, partStart, end, part)) return -1;
  return value * 256 + part;
}

/** s[start, end) of decimal digits, worth `part`, is 0..255 with no leading zero. */
function isDecimalPart(s: string, start: number, end: number, part: number): boolean {
  const digits = end - start;
  return digits !== 0 && digits <= 3 && part <= 255 && (digits === 1 || s.charCodeAt(start) !== 48);
}

/** Parses s[start, end) as IPv6 text into g. Returns false when it is not one. */
function parseIPv6Groups(s: string, start: number, end: number, g: Uint16Array): boolean {
  let n = 0;
  let gap = -1; // index in g where `::` stands
  let i = start;
  if (s.charCodeAt(i) === 58) {
    if (s.charCodeAt(i + 1) !== 58) return false;
    gap = 0;
    i += 2;
    if (i === end) {
      g.fill(0);
      return true;
    }
  }
  while (true) {
    const first = i;
    let value = 0;
    let c = 0;
    while (i < end) {
      c = s.charCodeAt(i);
      const h = c < 256 ? HEX[c] : -1;
      if (h < 0) break;
      value = (value << 4) | h;
      i++;
    }
    const digits = i - first;
    if (i < end && c === 46) {
      // Embedded IPv4: the last 32 bits.
      if (n > 6) return false;
      const v4 = parseIPv4(s, first, end);
      if (v4 < 0) return false;
      g[n++] = v4 >>> 16;
      g[n++] = v4 & 0xffff;
      break;
    }
    if (digits === 0 || digits > 4 || n === 8) return false;
    g[n++] = value;
    if (i === end) break;
    if (c !== 58) return false;
    i++;
    if (i < end && s.charCodeAt(i) === 58) {
      if (gap >= 0) return false;
      gap = n;
      i++;
      if (i === end) break;
    } else if (i === end) {
      return false; // a single trailing colon
    }
  }
  if (gap < 0) return n === 8;
  if (n > 7) return false; // `::` stands for at least one group
  const tail = n - gap;
  for (let k = 0; k < tail; k++) g[7 - k] = g[n - 1 - k];
  for (let k = gap; k < 8 - tail; k++) g[k] = 0;
  return true;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/**
 * Parses s[start, end) as an IPv4 or IPv6 address into `out` and returns its kind.
 * Allocates nothing.
 */
export function parseAddress(s: string, start: number, end: number, out: ParsedAddress): AddressKind {
  out.kind = NOT_ADDRESS;
  const len = end - start;
  if (len < 2 || len > MAX_ADDRESS_LENGTH) return NOT_ADDRESS;
  // IPv4 text opens with 1-3 digits and a '.'; IPv6 text never does (an embedded IPv4
  // follows at least one ':').
  if (len <= 15 && isDigit(s.charCodeAt(start))) {
    const c1 = s.charCodeAt(start + 1);
    if (c1 === 46 || (isDigit(c1) && (s.charCodeAt(start + 2) === 46 || (isDigit(s.charCodeAt(start + 2)) && s.charCodeAt(start + 3) === 46)))) {
      const v4 = parseIPv4(s, start, end);
      if (v4 < 0) return NOT_ADDRESS;
      out.v4 = v4;
      return (out.kind = IPV4);
    }
  }
  const g = out.groups;
  if (!parseIPv6Groups(s, start, end, g)) return NOT_ADDRESS;
  const w = out.w;
  w[0] = ((g[0] << 16) | g[1]) >>> 0;
  w[1] = ((g[2] << 16) | g[3]) >>> 0;
  w[2] = ((g[4] << 16) | g[5]) >>> 0;
  w[3] = ((g[6] << 16) | g[7]) >>> 0;
  if (w[0] === 0 && w[1] === 0 && w[2] === 0xffff) {
    out.v4 = w[3];
    return (out.kind = IPV4_MAPPED);
  }
  return (out.kind = IPV6);
}

export function formatIPv4(v: number): string {
  return `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
}

/** Whether groups g[at..at+7] are an IPv4-mapped address (::ffff:a.b.c.d). */
function isMappedGroups(g: ArrayLike<number>, at: number): boolean {
  return g[at] === 0 && g[at + 1] === 0 && g[at + 2] === 0 && g[at + 3] === 0 && g[at + 4] === 0 && g[at + 5] === 0xffff;
}

/**
 * The run of zero groups RFC 5952 writes as `::` (the longest, the first on ties, at least
 * two long), packed as start * 16 + length; -1 when there is none.
 */
function zeroRun(g: ArrayLike<number>, at: number): number {
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (g[at + i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[at + j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  return bestStart < 0 ? -1 : bestStart * 16 + bestLen;
}

/** RFC 5952 text of the eight groups g[at..at+7]: lower case, longest zero run (first on ties, ≥ 2) as `::`. */
export function formatIPv6Groups(g: ArrayLike<number>, at = 0): string {
  if (isMappedGroups(g, at)) return '::ffff:' + formatIPv4(((g[at + 6] << 16) | g[at + 7]) >>> 0);
  const run = zeroRun(g, at);
  const runStart = run < 0 ? -1 : run >> 4;
  let text = '';
  for (let i = 0; i < 8; i++) {
    if (i === runStart) {
      text += i === 0 ? '::' : ':';
      i += (run & 15) - 1;
      continue;
    }
    text += g[at + i].toString(16);
    if (i < 7) text += ':';
  }
  return text;
}

const HEX_DIGITS = Buffer.from('0123456789abcdef');

/**
 * Writes what formatIPv6Groups(g, at) returns, as ASCII into out at pos, without making a
 * string; returns the end. At most MAX_ADDRESS_LENGTH bytes.
 */
export function writeIPv6Groups(out: Uint8Array, pos: number, g: ArrayLike<number>, at: number): number {
  if (isMappedGroups(g, at)) {
    const text = formatIPv6Groups(g, at);
    for (let i = 0; i < text.length; i++) out[pos++] = text.charCodeAt(i);
    return pos;
  }
  const run = zeroRun(g, at);
  const runStart = run < 0 ? -1 : run >> 4;
  for (let i = 0; i < 8; i++) {
    if (i === runStart) {
      out[pos++] = 58;
      if (i === 0) out[pos++] = 58;
      i += (run & 15) - 1;
      continue;
    }
    const v = g[at + i];
    if (v >= 0x1000) out[pos++] = HEX_DIGITS[v >>> 12];
    if (v >= 0x100) out[pos++] = HEX_DIGITS[(v >>> 8) & 15];
    if (v >= 0x10) out[pos++] = HEX_DIGITS[(v >>> 4) & 15];
    out[pos++] = HEX_DIGITS[v & 15];
    if (i < 7) out[pos++] = 58;
  }
  return pos;
}

export function formatIPv6Words(w: ArrayLike<number>): string {
  const g = [w[0] >>> 16, w[0] & 0xffff, w[1] >>> 16, w[1] & 0xffff, w[2] >>> 16, w[2] & 0xffff, w[3] >>> 16, w[3] & 0xffff];
  return formatIPv6Groups(g);
}

/** Writes s (ASCII) into out at pos; for address-sized text a loop beats a native write call. */
export function writeAscii(out: Uint8Array, pos: number, s: string): number {
  for (let i = 0; i < s.length; i++) out[pos++] = s.charCodeAt(i);
  return pos;
}

/**
 * Writes normalisedText of a parsed address of `kind` (its IPv4 value v4, or its groups at
 * groups[at..at+7]) into out at pos without making a string; returns the end. IPv4 is written
 * from its value, which a strict parse makes the same text: a loop over the input string reads
 * its representation at every character (three times the instructions).
 */
export function writeNormalisedParts(out: Uint8Array, pos: number, kind: AddressKind, v4: number, groups: Uint16Array, at: number): number {
  return kind === IPV4 ? writeIPv4(out, pos, v4) : writeIPv6Groups(out, pos, groups, at);
}

/** writeNormalisedParts for the parse in p. */
export function writeNormalised(out: Uint8Array, pos: number, p: ParsedAddress): number {
  return writeNormalisedParts(out, pos, p.kind, p.v4, p.groups, 0);
}

/** Writes the dotted-decimal text of an IPv4 value (no leading zeros) into out at pos; returns the end. */
export function writeIPv4(out: Uint8Array, pos: number, v4: number): number {
  pos = writeOctet(out, pos, v4 >>> 24);
  out[pos++] = 46;
  pos = writeOctet(out, pos, (v4 >>> 16) & 255);
  out[pos++] = 46;
  pos = writeOctet(out, pos, (v4 >>> 8) & 255);
  out[pos++] = 46;
  return writeOctet(out, pos, v4 & 255);
}

function writeOctet(out: Uint8Array, pos: number, o: number): number {
  if (o >= 100) {
    out[pos++] = 48 + ((o / 100) | 0);
    o %= 100;
    out[pos++] = 48 + ((o / 10) | 0);
  } else if (o >= 10) out[pos++] = 48 + ((o / 10) | 0);
  out[pos++] = 48 + (o % 10);
  return pos;
}

/**
 * The normalised `ip` of an answer: IPv4 text is already canonical once strictly parsed;
 * IPv6 (including mapped) is re-rendered per RFC 5952.
 */
export function normalisedText(s: string, start: number, end: number, p: ParsedAddress): string {
  if (p.kind === IPV4) return start === 0 && end === s.length ? s : s.slice(start, end);
  return formatIPv6Groups(p.groups);
}

/** The address as a bigint within its family (IPv4-mapped counts as IPv4). */
export function addressBigInt(p: ParsedAddress): bigint {
  if (p.kind === IPV4 || p.kind === IPV4_MAPPED) return BigInt(p.v4);
  const w = p.w;
  return (BigInt(w[0]) << 96n) | (BigInt(w[1]) << 64n) | (BigInt(w[2]) << 32n) | BigInt(w[3]);
}
