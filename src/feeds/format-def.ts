// What a list format is (formats.ts, formats-first-party.ts): a name, what it reads, how to
// recognise it, and how it turns a file into rows of (line, network, category, details).

import type { DetailField } from '../model/categories.js';
import { IpsiftError } from '../errors.js';

export interface FormatRow {
  line: number;
  network: string;
  category?: string;
  details?: Partial<Record<DetailField, string>>;
}

export interface FormatInput {
  file: string;
  text: string;
}

/** A problem with the file as a whole (not one line). */
export class FormatError extends IpsiftError {
  constructor(
    readonly line: number,
    reason: string,
  ) {
    super('FORMAT', reason);
  }
}

export interface FeedFormatDef {
  name: string;
  summary: string;
  /** Category used when neither the file nor --category gives one (undefined: required). */
  defaultCategory?: string;
  /** Whether the content is unmistakably this format (for --format auto). */
  detect(text: string): boolean;
  rows(input: FormatInput): FormatRow[];
}
