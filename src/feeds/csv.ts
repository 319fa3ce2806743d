// RFC 4180 CSV reading: quoted fields, doubled quotes, line breaks inside quotes, CRLF.

import { IpsiftError } from '../errors.js';

export interface CsvRecord {
  /** 1-based line number where the record starts. */
  line: number;
  fields: string[];
}

export class CsvSyntaxError extends IpsiftError {
  constructor(
    readonly line: number,
    reason: string,
  ) {
    super('CSV_SYNTAX', reason);
  }
}

/** Yields the records of `text` in order; blank lines are skipped. */
export function* readCsv(text: string): Generator<CsvRecord> {
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0; // byte order mark
  let line = 1;
  const n = text.length;
  while (i < n) {
    const startLine = line;
    const fields: string[] = [];
    let atRecordEnd = false;
    while (!atRecordEnd) {
      let value: string;
      if (text.charCodeAt(i) === 34) {
        // Quoted field.
        let j = i + 1;
        let out = '';
        while (true) {
          const q = text.indexOf('"', j);
          if (q < 0) throw new CsvSyntaxError(startLine, 'unterminated quoted field');
          out += text.slice(j, q);
          for (let k = j; k < q; k++) if (text.charCodeAt(k) === 10) line++;
          if (text.charCodeAt(q + 1) === 34) {
            out += '"';
            j = q + 2;
            continue;
          }
          i = q + 1;
          break;
        }
        value = out;
        const c = text.charCodeAt(i);
        if (i < n && c !== 44 && c !== 10 && c !== 13) {
          throw new CsvSyntaxError(line, 'unexpected character after a closing quote');
        }
      } else {
        let j = i;
        while (j < n) {
          const c = text.charCodeAt(j);
          if (c === 44 || c === 10 || c === 13) break;
          if (c === 34) throw new CsvSyntaxError(line, 'quote inside an unquoted field');
          j++;
        }
        value = text.slice(i, j);
        i = j;
      }
      fields.push(value);
      const c = text.charCodeAt(i);
      if (c === 44) {
        i++;
      } else {
        if (c === 13) i++;
        if (text.charCodeAt(i) === 10) i++;
        line++;
        atRecordEnd = true;
      }
      if (i >= n && c === 44) {
        fields.push('');
        atRecordEnd = true;
      }
    }
    if (fields.length === 1 && fields[0] === '') continue;
    yield { line: startLine, fields };
  }
}
