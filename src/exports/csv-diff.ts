// A CSV export's diff from one version to the next: the lines kept, dropped and inserted, in
// order, so that applying it to the old CSV gives the new one byte for byte. Rows are in
// address order (provider ids in theirs), so one merge walk by each row's first field finds
// the changes in linear time; the walk is correct whatever the order (a row out of order is
// dropped and inserted again, never lost). The header names both CSVs by SHA-256: a diff
// refuses the wrong old file and proves its result.
//
//   ipsift csv diff 1
//   from <sha256 of the old CSV> <lines>
//   to <sha256 of the new CSV> <lines>
//   file <sha256 of the new .csv.gz as published>
//   =<n>  keep the next n old lines
//   -<n>  drop the next n old lines
//   +<n>  insert the n lines that follow
//
// A line is the bytes up to and with its newline (the last may have none).

import crypto from 'node:crypto';
import fs from 'node:fs';
import zlib from 'node:zlib';
import { parseNetwork } from '../net/network.js';
import { IpsiftError } from '../errors.js';
import { ArtifactFile } from './artifact-file.js';
import { CsvGzWriter } from './csv-writer.js';

const MAGIC = 'ipsift csv diff 1';
const NEWLINE = 0x0a;

export class CsvDiffError extends IpsiftError {
  constructor(message: string) {
    super('CSV_DIFF', message);
  }
}

export interface CsvDiffHeader {
  from: { sha256: string; lines: number };
  to: { sha256: string; lines: number };
  /** SHA-256 of the new .csv.gz as it was published. */
  file: string;
}

/** Each line's [start, end) in bytes, the newline inside. */
function lineBounds(text: Uint8Array): Uint32Array {
  const bounds: number[] = [];
  let start = 0;
  while (start < text.length) {
    const nl = text.indexOf(NEWLINE, start);
    const end = nl < 0 ? text.length : nl + 1;
    bounds.push(start, end);
    start = end;
  }
  return Uint32Array.from(bounds);
}

const sha256 = (b: Uint8Array): string => crypto.createHash('sha256').update(b).digest('hex');

/** The decompressed text of a .csv.gz (every member), or the file itself when it is not gzip. */
export function readCsvText(file: string): Buffer {
  const bytes = fs.readFileSync(file);
  return bytes[0] === 0x1f && bytes[1] === 0x8b ? zlib.gunzipSync(bytes) : bytes;
}

/** A row's first field as an order: networks by family and first address, then other text. */
function rowKey(line: Uint8Array): { rank: number; start: bigint; text: string } {
  const comma = line.indexOf(0x2c);
  const text = Buffer.from(line.buffer, line.byteOffset, comma < 0 ? line.length : comma).toString('utf8');
  const parsed = parseNetwork(text);
  return parsed.ok ? { rank: parsed.network.family, start: parsed.network.start, text } : { rank: 7, start: 0n, text };
}

function compareRows(a: Uint8Array, b: Uint8Array): number {
  const ka = rowKey(a);
  const kb = rowKey(b);
  if (ka.rank !== kb.rank) return ka.rank - kb.rank;
  if (ka.start !== kb.start) return ka.start < kb.start ? -1 : 1;
  return ka.text < kb.text ? -1 : ka.text > kb.text ? 1 : 0;
}

/** The diff (uncompressed) that takes `older` to `newer`; `file`: the newer .csv.gz's SHA-256. */
export function diffCsv(older: Buffer, newer: Buffer, file: string): Buffer {
  const a = lineBounds(older);
  const b = lineBounds(newer);
  const na = a.length / 2;
  const nb = b.length / 2;
  const out: (string | Uint8Array)[] = [`${MAGIC}\nfrom ${sha256(older)} ${na}\nto ${sha256(newer)} ${nb}\nfile ${file}\n`];
  let op = '';
  let run = 0;
  let inserted: Uint8Array[] = [];
  const emit = (next: string): void => {
    if (next === op) {
      run++;
      return;
    }
    if (run > 0) {
      out.push(`${op}${run}\n`);
      if (op === '+') out.push(...inserted);
    }
    op = next;
    run = 1;
    inserted = [];
  };
  const lineA = (i: number): Buffer => older.subarray(a[2 * i], a[2 * i + 1]);
  const lineB = (j: number): Buffer => newer.subarray(b[2 * j], b[2 * j + 1]);
  let i = 0;
  let j = 0;
  while (i < na || j < nb) {
    if (i < na && j < nb && lineA(i).equals(lineB(j))) {
      emit('=');
      i++;
      j++;
      continue;
    }
    const order = i >= na ? 1 : j >= nb ? -1 : compareRows(lineA(i), lineB(j));
    if (order <= 0) {
      emit('-');
      i++;
    }
    if (order >= 0 && j < nb) {
      emit('+');
      inserted.push(lineB(j));
      j++;
    }
  }
  emit('');
  return Buffer.concat(out.map((x) => (typeof x === 'string' ? Buffer.from(x) : x)));
}

/** The header of a diff (uncompressed), and where its operations begin. */
export function readDiffHeader(diff: Buffer): CsvDiffHeader & { body: number } {
  const lines: string[] = [];
  let at = 0;
  for (let k = 0; k < 4; k++) {
    const nl = diff.indexOf(NEWLINE, at);
    if (nl < 0) throw new CsvDiffError('not an ipsift CSV diff: its header is cut short');
    lines.push(diff.toString('latin1', at, nl));
    at = nl + 1;
  }
  const from = /^from ([0-9a-f]{64}) (\d+)$/.exec(lines[1]);
  const to = /^to ([0-9a-f]{64}) (\d+)$/.exec(lines[2]);
  const file = /^file ([0-9a-f]{64})$/.exec(lines[3]);
  if (lines[0] !== MAGIC || !from || !to || !file) throw new CsvDiffError(`not an ipsift CSV diff (it must begin "${MAGIC}")`);
  return { from: { sha256: from[1], lines: Number(from[2]) }, to: { sha256: to[1], lines: Number(to[2]) }, file: file[1], body: at };
}

/**
 * The new CSV: `diff` (uncompressed) applied to `older`. Refuses an old CSV that is not the
 * one the diff was made from, and a result whose SHA-256 is not the one it names.
 */
export function applyCsvDiff(older: Buffer, diff: Buffer): Buffer {
  const h = readDiffHeader(diff);
  const oldSum = sha256(older);
  if (oldSum !== h.from.sha256)
    throw new CsvDiffError(
      `this diff applies to the CSV whose SHA-256 is ${h.from.sha256}; this one's is ${oldSum}: download the version it was made from, or the whole file`,
    );
  const a = lineBounds(older);
  const parts: Buffer[] = [];
  let i = 0;
  let at = h.body;
  const cut = (): never => {
    throw new CsvDiffError('the diff is damaged: an operation runs past the end of a file');
  };
  while (at < diff.length) {
    const nl = diff.indexOf(NEWLINE, at);
    const m = /^([=+-])(\d+)$/.exec(diff.toString('latin1', at, nl < 0 ? diff.length : nl));
    if (!m) throw new CsvDiffError(`the diff is damaged at byte ${at}: an operation must be =<n>, -<n> or +<n>`);
    at = nl + 1;
    const n = Number(m[2]);
    if (m[1] === '+') {
      for (let k = 0; k < n; k++) {
        if (at >= diff.length) cut();
        const end = diff.indexOf(NEWLINE, at);
        const stop = end < 0 ? diff.length : end + 1;
        parts.push(diff.subarray(at, stop));
        at = stop;
      }
      continue;
    }
    if (i + n > a.length / 2) cut();
    if (m[1] === '=') parts.push(older.subarray(a[2 * i], a[2 * (i + n - 1) + 1]));
    i += n;
  }
  if (i !== a.length / 2) throw new CsvDiffError('the diff is damaged: it ends before the old file does');
  const newer = Buffer.concat(parts);
  const sum = sha256(newer);
  if (sum !== h.to.sha256) throw new CsvDiffError(`the result's SHA-256 is ${sum}, not the ${h.to.sha256} the diff names: the diff is damaged`);
  return newer;
}

/** Writes a CSV as the exports do (the same gzip members), so that its bytes match the published file's. */
export function writeCsvGz(file: string, text: Buffer): { sha256: string; bytes: number } {
  const w = new CsvGzWriter(file, null);
  const bounds = lineBounds(text);
  for (let k = 0; k < bounds.length; k += 2) w.line(text.toString('utf8', bounds[k], bounds[k + 1]), '');
  const done = w.finish();
  return { sha256: done.checksums.sha256, bytes: done.bytes };
}

/** Writes the gzipped diff from one published .csv.gz to the next; returns its size, checksums and header. */
export function writeCsvDiffFile(olderGz: string, newerGz: string, newerSha256: string, out: string) {
  const diff = diffCsv(readCsvText(olderGz), readCsvText(newerGz), newerSha256);
  const gz = zlib.gzipSync(diff, { level: 6 });
  const w = new ArtifactFile(out);
  w.write(gz);
  const { bytes, checksums } = w.close();
  const h = readDiffHeader(diff);
  return { bytes, checksums, header: { from: h.from, to: h.to, file: h.file } };
}
