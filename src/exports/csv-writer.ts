// CSV.gz written synchronously with bounded memory: rows gather in a buffer that is
// gzipped as one member whenever it fills; concatenated members are one valid gzip file
// (RFC 1952 §2.2) that gunzip, zcat, Python's gzip and Node's zlib read whole.

import zlib from 'node:zlib';
import { ArtifactFile } from './artifact-file.js';
import type { Checksums } from './checksums.js';
import type { Cell } from './databases.js';

const MEMBER_BYTES = 4 << 20;
/** zlib level 3: on a 1 M-range build, files 6–13 % larger than level 4, and the build under 30 s. */
const GZIP_LEVEL = 3;

/**
 * Whether a spreadsheet would read a text cell as a formula: it begins with =, +, -, @, a tab
 * or a carriage return (OWASP's CSV injection list), or with the full-width =, +, - or @ that
 * some spreadsheets fold to those.
 */
export function formulaLike(v: string): boolean {
  if (v.length === 0) return false;
  const c = v.charCodeAt(0);
  return c === 0x3d || c === 0x2b || c === 0x2d || c === 0x40 || c === 0x09 || c === 0x0d || c === 0xff1d || c === 0xff0b || c === 0xff0d || c === 0xff20;
}

/**
 * One CSV field: RFC 4180 quoting when needed; a text a spreadsheet would evaluate is
 * neutralised as OWASP describes, a ' before it and the cell quoted (`"'=HYPERLINK(…)"`), so
 * it opens as text. Numbers are written as numbers: only upstream text can carry a formula.
 */
export function csvField(v: Cell): string {
  if (typeof v !== 'string') return String(v);
  if (formulaLike(v)) return `"'${v.replace(/"/g, '""')}"`;
  return /[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}

function writeDecimal(b: Buffer, at: number, v: number): number {
  if (v >= 100) b[at++] = 48 + Math.floor(v / 100);
  if (v >= 10) b[at++] = 48 + (Math.floor(v / 10) % 10);
  b[at++] = 48 + (v % 10);
  return at;
}

export class CsvGzWriter {
  private readonly out: ArtifactFile;
  private readonly buf = Buffer.allocUnsafe(MEMBER_BYTES + (1 << 16));
  private at = 0;
  rows = 0;

  /** `header` null: the caller writes every line, the header too (a CSV rebuilt from a diff). */
  constructor(file: string, header: readonly string[] | null) {
    this.out = new ArtifactFile(file);
    if (header !== null) this.line(header.map(csvField).join(','), '\n');
    this.rows = 0;
  }

  row(cells: readonly Cell[]): void {
    this.line(cells.map(csvField).join(','), '\n');
  }

  /** One row as the CSV text head + tail, the tail ending in a newline. */
  line(head: string, tail: string): void {
    // A row is far shorter than the slack kept after MEMBER_BYTES.
    this.at += this.buf.write(head, this.at, 'utf8');
    this.at += this.buf.write(tail, this.at, 'utf8');
    this.rows++;
    if (this.at >= MEMBER_BYTES) this.flush();
  }

  /** A row whose network is the IPv4 CIDR base/prefix, written as digits straight into the buffer. */
  lineV4(base: number, prefix: number, tail: string): void {
    const b = this.buf;
    let at = this.at;
    for (let shift = 24; shift >= 0; shift -= 8) {
      at = writeDecimal(b, at, (base >>> shift) & 255);
      b[at++] = shift === 0 ? 47 : 46; // '/' after the last part, '.' between
    }
    at = writeDecimal(b, at, prefix);
    this.at = at + b.write(tail, at, 'utf8');
    this.rows++;
    if (this.at >= MEMBER_BYTES) this.flush();
  }

  private flush(): void {
    if (this.at === 0) return;
    const gz = zlib.gzipSync(this.buf.subarray(0, this.at), { level: GZIP_LEVEL });
    this.out.write(gz);
    this.at = 0;
  }

  finish(): { bytes: number; rows: number; checksums: Checksums } {
    this.flush();
    return { ...this.out.close(), rows: this.rows };
  }
}
