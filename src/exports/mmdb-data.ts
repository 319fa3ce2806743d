// The data section of a MaxMind DB file (MaxMind DB format 2.0, "Output Data Section"):
// typed fields after a control byte. Identical records are written once (the search tree
// points at the same offset); inside records, a map object written before and a string
// written before (when the pointer is shorter) become pointers to the first copy.

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

/** A growable byte buffer. */
class Bytes {
  buf = Buffer.allocUnsafe(1 << 16);
  length = 0;
  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(grown, 0, 0, this.length);
    this.buf = grown;
  }
  byte(b: number): void {
    this.room(1);
    this.buf[this.length++] = b;
  }
  utf8(s: string, n: number): void {
    this.room(n);
    this.length += this.buf.write(s, this.length, 'utf8');
  }
  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  take(): Buffer {
    const out = Buffer.from(this.buf.subarray(0, this.length));
    this.length = 0;
    return out;
  }
}

/** Control byte(s) for a field of type `type` whose size (bytes, pairs or items) is `size`. */
function control(out: Bytes, type: number, size: number): void {
  const first = type <= 7 ? type << 5 : 0;
  const ext = type > 7;
  if (size < 29) {
    out.byte(first | size);
    if (ext) out.byte(type - 7);
  } else if (size < 29 + 256) {
    out.byte(first | 29);
    if (ext) out.byte(type - 7);
    out.byte(size - 29);
  } else if (size < 285 + 65536) {
    const v = size - 285;
    out.byte(first | 30);
    if (ext) out.byte(type - 7);
    out.byte(v >>> 8);
    out.byte(v & 255);
  } else {
    const v = size - 65821;
    if (v >= 1 << 24) throw new Error(`MMDB field too large (${size})`);
    out.byte(first | 31);
    if (ext) out.byte(type - 7);
    out.byte(v >>> 16);
    out.byte((v >>> 8) & 255);
    out.byte(v & 255);
  }
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

/** Bytes a pointer to p takes. */
function pointerLength(p: number): number {
  return p < 2048 ? 2 : p < 526336 ? 3 : p < 526336 + 134217728 ? 4 : 5;
}

/** Minimal big-endian bytes of an unsigned integer (none for zero). */
function uintLength(v: number | bigint): number {
  let n = 0;
  if (typeof v === 'bigint') {
    for (let x = v; x > 0n; x >>= 8n) n++;
  } else {
    for (let x = v; x >= 1; x = Math.floor(x / 256)) n++;
  }
  return n;
}

/** 256^k for the bytes of a number (at most 7: 2^53), so no call to pow a byte. */
const BYTE_SCALE = Float64Array.from({ length: 8 }, (_, k) => 256 ** k);

function writeUint(out: Bytes, v: number | bigint, n: number): void {
  for (let k = n - 1; k >= 0; k--) {
    out.byte(typeof v === 'bigint' ? Number((v >> BigInt(8 * k)) & 255n) : Math.floor(v / BYTE_SCALE[k]) % 256);
  }
}

/** Encodes values into a growing byte stream; `at` is the next free data-section offset. */
export class MmdbEncoder {
  /** Bytes not yet taken by flush(). */
  private readonly pending = new Bytes();
  /** Data-section offset of pending[0]. */
  private base = 0;
  private readonly strings = new Map<string, number>();
  private readonly records = new Map<string | number, number>();
  /** Maps already written, by object identity: a repeat becomes a pointer. */
  private readonly objects = new Map<object, number>();

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
  record(value: MmdbValue, identity: string | number): number {
    let offset = this.records.get(identity);
    if (offset === undefined) {
      offset = this.at;
      // A record is written once (by identity, above), so its own map is not remembered for
      // pointers: remembering it kept every record's view alive until the file was done.
      this.value(value, false);
      this.records.set(identity, offset);
    }
    return offset;
  }

  /** Writes one value at the current offset; `remember`: a map of it may be pointed at later. */
  value(v: MmdbValue, remember = true): void {
    const out = this.pending;
    if (typeof v === 'string') return this.string(v);
    if (typeof v === 'boolean') return control(out, T_BOOLEAN, v ? 1 : 0);
    if (v instanceof Uint) {
      const n = uintLength(v.value);
      control(out, v.bits === 16 ? T_UINT16 : v.bits === 32 ? T_UINT32 : T_UINT64, n);
      writeUint(out, v.value, n);
      return;
    }
    if (typeof v === 'number') {
      if (Number.isSafeInteger(v) && v >= 0) {
        const n = uintLength(v);
        control(out, v <= 0xffffffff ? T_UINT32 : T_UINT64, n);
        writeUint(out, v, n);
      } else {
        control(out, T_DOUBLE, 8);
        const b = Buffer.alloc(8);
        b.writeDoubleBE(v);
        out.bytes(b);
      }
      return;
    }
    if (Array.isArray(v)) {
      control(out, T_ARRAY, v.length);
      for (const item of v) this.value(item);
      return;
    }
    if (this.dedupeStrings) {
      const prior = this.objects.get(v);
      if (prior !== undefined) return this.pointer(prior);
      if (remember) this.objects.set(v, this.at);
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
    const n = Buffer.byteLength(s, 'utf8');
    if (prior !== undefined && pointerLength(prior) < n + 1) return this.pointer(prior);
    if (this.dedupeStrings && n >= 2 && prior === undefined) this.strings.set(s, this.at);
    control(out, T_STRING, n);
    out.utf8(s, n);
  }

  private pointer(p: number): void {
    const out = this.pending;
    for (const b of pointerBytes(p)) out.byte(b);
  }

  /** Takes the bytes written since the last flush. */
  flush(): Buffer {
    this.base += this.pending.length;
    return this.pending.take();
  }
}

/** A whole value encoded on its own (the metadata map), without pointers. */
export function encodeStandalone(v: MmdbValue): Buffer {
  const e = new MmdbEncoder(false);
  e.value(v);
  return e.flush();
}
