// The data section of a MaxMind DB file (MaxMind DB format 2.0, "Output Data Section"):
// typed fields after a control byte. Identical records are written once (the search tree
// points at the same offset), and a string written before is replaced by a pointer to it
// whenever the pointer is shorter.

/** An unsigned integer of a stated MMDB type (the metadata map needs exact types). */
export class Uint {
  constructor(
    readonly bits: 16 | 32 | 64,
    readonly value: number | bigint,
  ) {}
}

export type MmdbValue = string | number | boolean | Uint | MmdbValue[] | { [key: string]: MmdbValue };

const T_POINTER = 1;
const T_STRING = 2;
const T_DOUBLE = 3;
const T_UINT16 = 5;
const T_UINT32 = 6;
const T_MAP = 7;
const T_UINT64 = 9;
const T_ARRAY = 11;
const T_BOOLEAN = 14;

/** Control byte(s) for a field of type `type` whose size (bytes, pairs or items) is `size`. */
function control(out: number[], type: number, size: number): void {
  const first = type <= 7 ? type << 5 : 0;
  let sizeBits: number;
  const extra: number[] = [];
  if (size < 29) sizeBits = size;
  else if (size < 29 + 256) {
    sizeBits = 29;
    extra.push(size - 29);
  } else if (size < 285 + 65536) {
    sizeBits = 30;
    const v = size - 285;
    extra.push(v >>> 8, v & 255);
  } else {
    sizeBits = 31;
    const v = size - 65821;
    if (v >= 1 << 24) throw new Error(`MMDB field too large (${size})`);
    extra.push(v >>> 16, (v >>> 8) & 255, v & 255);
  }
  out.push(first | sizeBits);
  if (type > 7) out.push(type - 7);
  for (const b of extra) out.push(b);
}

/** A pointer field to data-section offset p. */
export function pointerBytes(p: number): number[] {
  if (p < 2048) return [(T_POINTER << 5) | ((p >>> 8) & 7), p & 255];
  if (p < 526336) {
    const q = p - 2048;
    return [(T_POINTER << 5) | (1 << 3) | ((q >>> 16) & 7), (q >>> 8) & 255, q & 255];
  }
  if (p < 526336 + 134217728) {
    const q = p - 526336;
    return [(T_POINTER << 5) | (2 << 3) | ((q >>> 24) & 7), (q >>> 16) & 255, (q >>> 8) & 255, q & 255];
  }
  return [(T_POINTER << 5) | (3 << 3), (p >>> 24) & 255, (p >>> 16) & 255, (p >>> 8) & 255, p & 255];
}

function uintBytes(v: number | bigint): number[] {
  const bytes: number[] = [];
  let x = BigInt(v);
  while (x > 0n) {
    bytes.unshift(Number(x & 255n));
    x >>= 8n;
  }
  return bytes;
}

/** Encodes values into a growing byte stream; `at` is the next free data-section offset. */
export class MmdbEncoder {
  /** Bytes not yet taken by flush(). */
  private pending: number[] = [];
  /** Data-section offset of pending[0]. */
  private base = 0;
  private readonly strings = new Map<string, number>();
  private readonly records = new Map<string, number>();

  constructor(private readonly dedupeStrings = true) {}

  /** Bytes encoded since the last flush. */
  get pendingBytes(): number {
    return this.pending.length;
  }

  get at(): number {
    return this.base + this.pending.length;
  }

  /**
   * The offset of a record, written on first sight. `identity` names the value (e.g. its
   * canonical JSON); equal identities share one copy.
   */
  record(value: MmdbValue, identity: string): number {
    let offset = this.records.get(identity);
    if (offset === undefined) {
      offset = this.at;
      this.value(value);
      this.records.set(identity, offset);
    }
    return offset;
  }

  /** Writes one value at the current offset. */
  value(v: MmdbValue): void {
    const out = this.pending;
    if (typeof v === 'string') return this.string(v);
    if (typeof v === 'boolean') return control(out, T_BOOLEAN, v ? 1 : 0);
    if (v instanceof Uint) {
      const bytes = uintBytes(v.value);
      control(out, v.bits === 16 ? T_UINT16 : v.bits === 32 ? T_UINT32 : T_UINT64, bytes.length);
      for (const b of bytes) out.push(b);
      return;
    }
    if (typeof v === 'number') {
      if (Number.isInteger(v) && v >= 0 && v <= 0xffffffff) {
        const bytes = uintBytes(v);
        control(out, T_UINT32, bytes.length);
        for (const b of bytes) out.push(b);
      } else if (Number.isInteger(v) && v > 0xffffffff && Number.isSafeInteger(v)) {
        const bytes = uintBytes(v);
        control(out, T_UINT64, bytes.length);
        for (const b of bytes) out.push(b);
      } else {
        control(out, T_DOUBLE, 8);
        const b = Buffer.alloc(8);
        b.writeDoubleBE(v);
        for (const x of b) out.push(x);
      }
      return;
    }
    if (Array.isArray(v)) {
      control(out, T_ARRAY, v.length);
      for (const item of v) this.value(item);
      return;
    }
    const keys = Object.keys(v);
    control(out, T_MAP, keys.length);
    for (const k of keys) {
      this.string(k);
      this.value(v[k]);
    }
  }

  private string(s: string): void {
    const out = this.pending;
    const prior = this.dedupeStrings ? this.strings.get(s) : undefined;
    const bytes = Buffer.from(s, 'utf8');
    if (prior !== undefined) {
      const ptr = pointerBytes(prior);
      if (ptr.length < bytes.length + 1) {
        for (const b of ptr) out.push(b);
        return;
      }
    }
    if (this.dedupeStrings && bytes.length >= 2 && prior === undefined) this.strings.set(s, this.at);
    control(out, T_STRING, bytes.length);
    for (const b of bytes) out.push(b);
  }

  /** Takes the bytes written since the last flush. */
  flush(): Buffer {
    const b = Buffer.from(this.pending);
    this.base += this.pending.length;
    this.pending = [];
    return b;
  }
}

/** A whole value encoded on its own (the metadata map), without pointers. */
export function encodeStandalone(v: MmdbValue): Buffer {
  const e = new MmdbEncoder(false);
  e.value(v);
  return e.flush();
}
