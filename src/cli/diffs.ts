// `ipsift diff apply <old.csv.gz> <diff> <out>`: a downloaded CSV brought to the next version
// with its diff, checked by SHA-256 before and after; `ipsift diff make` writes one (what
// publishing does for each version of a CSV database).

import crypto from 'node:crypto';
import fs from 'node:fs';
import zlib from 'node:zlib';
import { CsvDiffError, applyCsvDiff, readCsvText, readDiffHeader, writeCsvDiffFile, writeCsvGz } from '../exports/csv-diff.js';
import { UsageError, parse, print } from './common.js';
import { HELP } from './help.js';

export function diffCommand(sub: string | undefined, rest: string[]): void {
  const { values, positionals } = parse(rest);
  if (values.help || sub === undefined) return print(false, null, () => HELP.diff);
  const json = values.json === true;
  try {
    if (sub === 'apply') return apply(positionals, json);
    if (sub === 'make') return make(positionals, json);
  } catch (e) {
    if (e instanceof CsvDiffError) throw new UsageError(e.message);
    throw e;
  }
  throw new UsageError(`unknown diff command ${JSON.stringify(sub)}: apply or make`);
}

function readDiff(file: string): Buffer {
  const bytes = fs.readFileSync(file);
  return bytes[0] === 0x1f && bytes[1] === 0x8b ? zlib.gunzipSync(bytes) : bytes;
}

function apply(positionals: string[], json: boolean): void {
  if (positionals.length !== 3) throw new UsageError('diff apply takes the old CSV (.csv.gz or .csv), the diff and the file to write');
  const [older, diffFile, out] = positionals;
  const diff = readDiff(diffFile);
  const header = readDiffHeader(diff);
  const newer = applyCsvDiff(readCsvText(older), diff);
  // Gzipped as the exports gzip it: the same bytes as the published file, where the zlib is the same.
  const gz = out.endsWith('.gz') ? writeCsvGz(out, newer) : (fs.writeFileSync(out, newer), null);
  const result = {
    file: out,
    csv_sha256: header.to.sha256,
    lines: header.to.lines,
    ...(gz && { sha256: gz.sha256, bytes: gz.bytes, same_as_published: gz.sha256 === header.file }),
  };
  print(json, result, () =>
    [
      `${out}: ${header.to.lines} lines, the CSV's SHA-256 ${header.to.sha256} as the diff names it`,
      ...(gz
        ? [
            gz.sha256 === header.file
              ? `gzipped byte for byte as published (SHA-256 ${gz.sha256})`
              : `gzipped by another zlib than the publisher's: the file's SHA-256 is ${gz.sha256}, the published one's ${header.file}; the CSV inside is the same`,
          ]
        : []),
    ].join('\n'),
  );
}

function make(positionals: string[], json: boolean): void {
  if (positionals.length !== 3) throw new UsageError('diff make takes the old .csv.gz, the new .csv.gz and the diff to write');
  const [older, newer, out] = positionals;
  const file = fs.readFileSync(newer);
  const made = writeCsvDiffFile(older, newer, crypto.createHash('sha256').update(file).digest('hex'), out);
  print(
    json,
    { file: out, bytes: made.bytes, sha256: made.checksums.sha256, from: made.header.from, to: made.header.to },
    () =>
      `${out}: ${made.bytes} bytes, from the CSV ${made.header.from.sha256} (${made.header.from.lines} lines) to ${made.header.to.sha256} (${made.header.to.lines} lines)`,
  );
}
