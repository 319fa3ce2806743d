// Reading the JSON documents of list formats: parse with the format's error, the shapes it
// checks for, and the line of a value (errors name a line even in JSON).

import { FormatError, type FormatRow } from './format-def.js';

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new FormatError(0, `not JSON: ${(e as Error).message}`);
  }
}

export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
export const looksJson = (text: string): boolean => /^\s*[{[]/.test(text);

/**
 * Line numbers of JSON string values, looked up in document order (errors name a line even
 * in JSON): each search starts where the previous one ended, so a file is read once.
 */
export class Lines {
  private at = 0;
  private line = 1;
  constructor(private readonly text: string) {}
  of(value: string): number {
    const found = this.text.indexOf(JSON.stringify(value), this.at);
    if (found < 0) return 0;
    for (let i = this.at; i < found; i++) if (this.text.charCodeAt(i) === 10) this.line++;
    this.at = found;
    return this.line;
  }
}

export const list_ = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Rows for the strings of `values`, each address once, with the details given (an empty string is an absent field: NordVPN's ipv6_station). */
export function addressRows(text: string, values: Iterable<unknown>, details: FormatRow['details']): FormatRow[] {
  const lines = new Lines(text);
  const seen = new Set<string>();
  const out: FormatRow[] = [];
  for (const v of values) {
    if (typeof v !== 'string' || v === '' || seen.has(v)) continue;
    seen.add(v);
    out.push({ line: lines.of(v), network: v, details });
  }
  return out;
}
