// A MaxMind DB 2.0 writer: an IPv6 search tree (IPv4 under ::/96, with ::ffff:0:0/96 and
// 2002::/16 pointing at the IPv4 root), a data section with each distinct record once,
// and the metadata map. Networks are added in any order and must not overlap. The data
// section is streamed to a temporary file as records arrive; the tree lives in pages of typed arrays
// (8 bytes a node); the file is written in one pass that also computes its checksums.

import fs from 'node:fs';
import { ArtifactTwins, writeFully } from './artifact-file.js';
import type { Checksums } from './checksums.js';
import { forEachV4Cidr, forEachV6Cidr, wordsOf } from './cidr.js';
import { MmdbEncoder, Uint, encodeStandalone, type MmdbValue } from './mmdb-data.js';

/** What precedes the metadata map; a reader takes the last one in the file's last 128 KiB. */
export const METADATA_MARKER = Buffer.from([0xab, 0xcd, 0xef, ...Buffer.from('MaxMind.com')]);
/** Child slot values: 0 empty, DATA bit set = data offset, else a node index. */
const DATA = 0x80000000;

export interface MmdbOptions {
  databaseType: string;
  description: string;
  buildEpoch: number;
  languages?: string[];
  /** Smallest record size to use (tests exercise every layout with small databases). */
  minRecordSize?: 24 | 28 | 32;
  /** The same tree and data written to these files too, each under its own database type and description. */
  editions?: readonly { file: string; databaseType: string; description: string }[];
}

export interface MmdbResult {
  bytes: number;
  nodeCount: number;
  recordSize: number;
  networks: number;
  checksums: Checksums;
  /** Each edition's file, in the order of MmdbOptions.editions. */
  editions: { bytes: number; checksums: Checksums }[];
}

/**
 * The tree's child slots in pages of PAGE_SLOTS: growing adds a page instead of copying the
 * whole array into one twice its size. A doubled array held up to four times the tree's 8
 * bytes a node at the moment it grew (old and new, the new half empty): 400 MB on a 21 M-node
 * MMDB, on each export thread at once; pages hold the tree and at most a page more.
 */
const PAGE_BITS = 17;
const PAGE_SLOTS = 1 << PAGE_BITS;
const IN_PAGE = PAGE_SLOTS - 1;

export class MmdbWriter {
  private readonly pages: Uint32Array[] = [new Uint32Array(PAGE_SLOTS)];
  private nodes = 1; // node 0 is the root
  private readonly encoder = new MmdbEncoder();
  private readonly dataFile: string;
  private readonly dataFd: number;
  private networks = 0;

  constructor(
    private readonly file: string,
    private readonly options: MmdbOptions,
  ) {
    this.dataFile = `${file}.data.tmp`;
    this.dataFd = fs.openSync(this.dataFile, 'w');
  }

  private newNode(): number {
    if (this.nodes * 2 >= this.pages.length * PAGE_SLOTS) this.pages.push(new Uint32Array(PAGE_SLOTS));
    return this.nodes++;
  }

  /** Child slot i (node * 2 + bit). */
  private kid(i: number): number {
    return this.pages[i >>> PAGE_BITS][i & IN_PAGE];
  }

  private setKid(i: number, value: number): void {
    this.pages[i >>> PAGE_BITS][i & IN_PAGE] = value;
  }

  /** The data-section offset of a record, encoding it on first sight (see MmdbEncoder.record). */
  recordOffset(value: MmdbValue, identity: string | number): number {
    const offset = this.encoder.record(value, identity);
    if (offset >= DATA) throw new Error('MMDB data section over 2 GiB');
    if (this.encoder.pendingBytes >= 1 << 16) this.spill();
    return offset;
  }

  /** Adds the inclusive range [start, end] of one family with its record (cold path). */
  addRange(family: 4 | 6, start: bigint, end: bigint, value: MmdbValue, identity: string): void {
    const offset = this.recordOffset(value, identity);
    if (family === 4) forEachV4Cidr(Number(start), Number(end), (base, prefix) => this.addV4(base, prefix, offset));
    else forEachV6Cidr(wordsOf(start, new Uint32Array(4)), wordsOf(end, new Uint32Array(4)), (w, prefix) => this.addV6(w[0], w[1], w[2], w[3], prefix, offset));
  }

  /** IPv4 network base/prefix (IPv4 lives in ::/96: 96 zero bits, then its own). */
  addV4(base: number, prefix: number, offset: number): void {
    this.insert(0, 0, 0, base, 96 + prefix, (DATA + offset) >>> 0);
  }

  addV6(w0: number, w1: number, w2: number, w3: number, prefix: number, offset: number): void {
    this.insert(w0, w1, w2, w3, prefix, (DATA + offset) >>> 0);
  }

  /** Writes the encoded data gathered so far to the temporary file. */
  private spill(): void {
    const chunk = this.encoder.flush();
    if (chunk.length) writeFully(this.dataFd, chunk);
  }

  /**
   * The nodes on the path of the last network inserted (path[d]: the node at depth d, for d
   * below lastLength) and its address. Networks mostly arrive in address order, so the next
   * shares most of its path with the last: its walk starts where the two addresses part
   * instead of at the root (an IPv6 walk from the root is up to 128 steps, for millions of networks).
   */
  private readonly path = new Uint32Array(128);
  private lastLength = 0;
  private last0 = 0;
  private last1 = 0;
  private last2 = 0;
  private last3 = 0;

  /** Sets the slot of the network (the top `length` bits of w0..w3) to `slot`. */
  private insert(w0: number, w1: number, w2: number, w3: number, length: number, slot: number): void {
    // The depth where this address parts from the last one's, and so the deepest node of the
    // last path that is on this one too.
    const x0 = (w0 ^ this.last0) >>> 0;
    const x1 = (w1 ^ this.last1) >>> 0;
    const x2 = (w2 ^ this.last2) >>> 0;
    const x3 = (w3 ^ this.last3) >>> 0;
    const common = x0 ? Math.clz32(x0) : x1 ? 32 + Math.clz32(x1) : x2 ? 64 + Math.clz32(x2) : x3 ? 96 + Math.clz32(x3) : 128;
    const from = Math.max(0, Math.min(common, this.lastLength - 1, length - 1));
    let node = this.path[from];
    // Until this insert is done, no path is known (a throw below leaves none half-made).
    this.lastLength = 0;
    for (let depth = from; depth < length; depth++) {
      this.path[depth] = node;
      const word = depth < 32 ? w0 : depth < 64 ? w1 : depth < 96 ? w2 : w3;
      const bit = (word >>> (31 - (depth & 31))) & 1;
      const i = node * 2 + bit;
      const child = this.kid(i);
      if (depth === length - 1) {
        if (child !== 0) throw new Error('overlapping networks given to the MMDB writer');
        this.setKid(i, slot);
        break;
      }
      if (child === 0) {
        const n = this.newNode();
        this.setKid(i, n);
        node = n;
      } else if (child >= DATA) {
        throw new Error('overlapping networks given to the MMDB writer');
      } else node = child;
    }
    this.lastLength = length;
    this.last0 = w0;
    this.last1 = w1;
    this.last2 = w2;
    this.last3 = w3;
    this.networks++;
  }

  /** The node at the end of a path of `length` bits, created where missing. */
  private pathNode(address: bigint, length: number): number {
    let node = 0;
    for (let depth = 0; depth < length; depth++) {
      const bit = Number((address >> BigInt(127 - depth)) & 1n);
      let child = this.kid(node * 2 + bit);
      if (child === 0) {
        child = this.newNode();
        this.setKid(node * 2 + bit, child);
      } else if (child >= DATA) {
        throw new Error('an alias would hide data');
      }
      node = child;
    }
    return node;
  }

  /** Points the slot at the end of the path (address, length) to node `target`. */
  private alias(address: bigint, length: number, target: number): void {
    const parent = this.pathNode(address, length - 1);
    const bit = Number((address >> BigInt(128 - length)) & 1n);
    this.setKid(parent * 2 + bit, target);
  }

  finish(): MmdbResult {
    // IPv4 root: the node after 96 zero bits, then the mapped and 6to4 aliases to it.
    const v4Root = this.pathNode(0n, 96);
    this.alias(0xffffn << 32n, 96, v4Root);
    this.alias(0x2002n << 112n, 16, v4Root);
    this.spill();
    fs.closeSync(this.dataFd);
    const dataSize = fs.statSync(this.dataFile).size;
    const nodeCount = this.nodes;
    const maxValue = nodeCount + 16 + dataSize;
    const fit = maxValue < 2 ** 24 ? 24 : maxValue < 2 ** 28 ? 28 : 32;
    const recordSize = Math.max(fit, this.options.minRecordSize ?? 24);
    if (maxValue >= 2 ** 32) throw new Error('MMDB too large for 32-bit records');

    const o = this.options;
    const editions = o.editions ?? [];
    // One pass over tree and data, every file written from it: only the metadata differs.
    const outs = new ArtifactTwins([this.file, ...editions.map((e) => e.file)]);
    const write = (b: Buffer): void => outs.write(b);
    let written: { bytes: number; checksums: Checksums }[] | null = null;
    try {
      const nodeBytes = recordSize / 4;
      const chunkNodes = 65536;
      const chunk = Buffer.alloc(chunkNodes * nodeBytes);
      const recordValue = (slot: number): number => (slot === 0 ? nodeCount : slot >= DATA ? nodeCount + 16 + (slot - DATA) : slot);
      for (let first = 0; first < nodeCount; first += chunkNodes) {
        const n = Math.min(chunkNodes, nodeCount - first);
        for (let k = 0; k < n; k++) {
          const node = first + k;
          const l = recordValue(this.kid(node * 2));
          const r = recordValue(this.kid(node * 2 + 1));
          const o = k * nodeBytes;
          // Byte stores, not Buffer#writeUIntBE: this loop runs for every node (tens of millions).
          if (recordSize === 24) {
            chunk[o] = (l >>> 16) & 255;
            chunk[o + 1] = (l >>> 8) & 255;
            chunk[o + 2] = l & 255;
            chunk[o + 3] = (r >>> 16) & 255;
            chunk[o + 4] = (r >>> 8) & 255;
            chunk[o + 5] = r & 255;
          } else if (recordSize === 28) {
            chunk[o] = (l >>> 16) & 255;
            chunk[o + 1] = (l >>> 8) & 255;
            chunk[o + 2] = l & 255;
            chunk[o + 3] = (((l >>> 24) & 0x0f) << 4) | ((r >>> 24) & 0x0f);
            chunk[o + 4] = (r >>> 16) & 255;
            chunk[o + 5] = (r >>> 8) & 255;
            chunk[o + 6] = r & 255;
          } else {
            chunk[o] = l >>> 24;
            chunk[o + 1] = (l >>> 16) & 255;
            chunk[o + 2] = (l >>> 8) & 255;
            chunk[o + 3] = l & 255;
            chunk[o + 4] = r >>> 24;
            chunk[o + 5] = (r >>> 16) & 255;
            chunk[o + 6] = (r >>> 8) & 255;
            chunk[o + 7] = r & 255;
          }
        }
        write(chunk.subarray(0, n * nodeBytes));
      }
      write(Buffer.alloc(16));
      const dataFd = fs.openSync(this.dataFile, 'r');
      try {
        const buf = Buffer.allocUnsafe(1 << 20);
        for (let n: number; (n = fs.readSync(dataFd, buf, 0, buf.length, null)) > 0; ) write(buf.subarray(0, n));
      } finally {
        fs.closeSync(dataFd);
      }
      write(METADATA_MARKER);
      const types = [{ databaseType: o.databaseType, description: o.description }, ...editions];
      const metadata = types.map((t) =>
        encodeStandalone({
          binary_format_major_version: new Uint(16, 2),
          binary_format_minor_version: new Uint(16, 0),
          build_epoch: new Uint(64, BigInt(o.buildEpoch)),
          database_type: t.databaseType,
          description: { en: t.description },
          ip_version: new Uint(16, 6),
          languages: o.languages ?? ['en'],
          node_count: new Uint(32, nodeCount),
          record_size: new Uint(16, recordSize),
        }),
      );
      written = outs.close(metadata);
    } finally {
      if (written === null) outs.abandon();
      fs.rmSync(this.dataFile, { force: true });
    }
    return { ...written[0], nodeCount, recordSize, networks: this.networks, editions: written.slice(1) };
  }
}
