// The serving index file (index.bin): one little-endian buffer, read as-is into shared memory.
//
//   header      64 bytes: magic "IPSIFTX1", u32 version, u32 tiers, u32 v4 count,
//               u32 v6 count, u32 records, u32 blob bytes, zero padding
//   v4 bucket   u32[65537]  interval holding (h << 16), for h = top 16 bits of the address
//   v4 starts   u32[v4]     first address of each interval, ascending, starts[0] = 0
//   v4 records  u32[v4]
//   v6 bucket   u32[65537]  interval holding (h << 112)
//   v6 starts   u32[v6 * 4] four big-endian words per interval, ascending, first = ::
//   v6 records  u32[v6]
//   records     u32[records * (1 + tiers)]  per record: blob offset of its details text,
//               then for each tier the length of that text's prefix the tier shows
//   masks       u8[records], padded to 4: bit k set = the record is in category k
//   blob        bytes       details texts: `,"vpn":{…},"hosting":{…},…` per record
//
// An answer is {"ip":"<ip>" + flags text (per tier and mask, made at load) + the tier's
// prefix of the record's details text + }. Tier field sets are prefixes of the contract's
// field order, so two copies make any tier's answer.
//
// Every section starts on a 4-byte boundary, so each is a zero-copy Uint32Array view.

export const MAGIC = 'IPSIFTX1';
export const FORMAT_VERSION = 2;
export const HEADER_BYTES = 64;
export const BUCKETS = 65536;

export interface IndexCounts {
  tiers: number;
  v4: number;
  v6: number;
  records: number;
  blobBytes: number;
}

/** Byte offsets of each section, derived from the counts. */
export interface IndexLayout {
  v4Bucket: number;
  v4Starts: number;
  v4Records: number;
  v6Bucket: number;
  v6Starts: number;
  v6Records: number;
  records: number;
  masks: number;
  blob: number;
  total: number;
}

export function layoutOf(c: IndexCounts): IndexLayout {
  let at = HEADER_BYTES;
  const take = (bytes: number): number => {
    const here = at;
    at += bytes;
    return here;
  };
  const v4Bucket = take((BUCKETS + 1) * 4);
  const v4Starts = take(c.v4 * 4);
  const v4Records = take(c.v4 * 4);
  const v6Bucket = take((BUCKETS + 1) * 4);
  const v6Starts = take(c.v6 * 16);
  const v6Records = take(c.v6 * 4);
  const records = take(c.records * (1 + c.tiers) * 4);
  const masks = take(Math.ceil(c.records / 4) * 4);
  const blob = take(c.blobBytes);
  return { v4Bucket, v4Starts, v4Records, v6Bucket, v6Starts, v6Records, records, masks, blob, total: at };
}

export function writeHeader(buf: Buffer, c: IndexCounts): void {
  buf.fill(0, 0, HEADER_BYTES);
  buf.write(MAGIC, 0, 'latin1');
  buf.writeUInt32LE(FORMAT_VERSION, 8);
  buf.writeUInt32LE(c.tiers, 12);
  buf.writeUInt32LE(c.v4, 16);
  buf.writeUInt32LE(c.v6, 20);
  buf.writeUInt32LE(c.records, 24);
  buf.writeUInt32LE(c.blobBytes, 28);
}

/** Reads and checks the header against the buffer's length; throws with the reason. */
export function readHeader(buf: Uint8Array): IndexCounts {
  if (buf.byteLength < HEADER_BYTES) throw new Error('index file is shorter than its header');
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  if (b.toString('latin1', 0, 8) !== MAGIC) throw new Error('not an ipsift index (bad magic)');
  const version = b.readUInt32LE(8);
  if (version !== FORMAT_VERSION) throw new Error(`index format ${version} is not supported (expected ${FORMAT_VERSION})`);
  const c: IndexCounts = {
    tiers: b.readUInt32LE(12),
    v4: b.readUInt32LE(16),
    v6: b.readUInt32LE(20),
    records: b.readUInt32LE(24),
    blobBytes: b.readUInt32LE(28),
  };
  if (c.v4 < 1 || c.v6 < 1 || c.records < 1) throw new Error('index has no intervals');
  const total = layoutOf(c).total;
  if (total !== buf.byteLength) throw new Error(`index size ${buf.byteLength} does not match its header (${total})`);
  return c;
}
