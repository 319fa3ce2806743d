// What every CLI command shares: argument parsing with --help and --json, and output.

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { IpsiftError } from '../errors.js';

export class UsageError extends IpsiftError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('USAGE', message, options);
  }
}

export type Values = Record<string, string | boolean | undefined>;

/**
 * `--opt -1` as `--opt=-1`: parseArgs reads a value starting with '-' as an option of its own
 * and refuses it as ambiguous, but a negative number after an option that takes a value can
 * only be that value (`--priority -1`).
 */
function negativeValues(args: string[], options: NonNullable<ParseArgsConfig['options']>): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const next = args[i + 1];
    if (a.startsWith('--') && !a.includes('=') && options[a.slice(2)]?.type === 'string' && next !== undefined && /^-\d+(\.\d+)?$/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

export function parse(args: string[], options: ParseArgsConfig['options'] = {}): { values: Values; positionals: string[] } {
  try {
    return parseArgs({
      args: negativeValues(args, options),
      options: { ...options, help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

const UNSAFE_IN_LINE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_IN_FIELD = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const escaped = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * A value from the control database as one field of a text line: what a customer named is
 * shown, never acted on by the operator's terminal (escape sequences, line breaks, tabs and
 * bidirectional overrides are written as \u escapes).
 */
export function printable(value: unknown): string {
  return String(value).replace(UNSAFE_IN_FIELD, escaped);
}

/**
 * Text output: every control character but the line breaks and tabs the command itself lays
 * out is escaped, whatever a field held (names from before they were checked at input).
 */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE_IN_LINE, escaped);
}

export function print(json: boolean | undefined, value: unknown, text: () => string): void {
  process.stdout.write(json ? JSON.stringify(value, null, 2) + '\n' : terminalSafe(text()) + '\n');
}
