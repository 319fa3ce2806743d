// What every CLI command shares: argument parsing with --help and --json, and output.

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { IpsiftError } from './errors.js';

export class UsageError extends IpsiftError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('USAGE', message, options);
  }
}

export type Values = Record<string, string | boolean | undefined>;

export function parse(args: string[], options: ParseArgsConfig['options'] = {}): { values: Values; positionals: string[] } {
  try {
    return parseArgs({
      args,
      options: { ...options, help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

export function print(json: boolean | undefined, value: unknown, text: () => string): void {
  process.stdout.write(json ? JSON.stringify(value, null, 2) + '\n' : text() + '\n');
}

