// `ipsift`'s dispatch: the command table (commands.ts) names each command, whether it needs a
// data directory, and the module that runs it, imported only when that command runs: `ipsift
// --version` loads none of the service. Every command takes --help; listings take --json.
// src/cli.ts runs it.

import fs from 'node:fs';
import path from 'node:path';
import { IpsiftError } from '../errors.js';
import { jsonLogger, structuredWarnings } from '../log.js';
import { RUNTIME, VERSION } from '../version.js';
import { type Command, commandNamed } from './commands.js';
import { UsageError, print, terminalSafe } from './common.js';

/** `ipsift --version`: the package's version and the runtime it runs on. */
export function versionLine(): string {
  return `ipsift ${VERSION} (${RUNTIME}, ${process.platform}-${process.arch})`;
}

/**
 * Refuses a command on a data directory that is not there, saying where it looked: opening a
 * store would otherwise make an empty one, in which a later `serve` finds no feeds and makes
 * no demo. Only `serve` makes a data directory. `sources list` reads the shipped registry alone.
 */
async function requireDataDir(command: Command, sub: string | undefined): Promise<void> {
  if (command.data === 'none' || (command.name === 'sources' && sub === 'list')) return;
  const { ConfigError, loadConfig } = await import('../config.js');
  const config = loadConfig(process.env);
  if (command.data === 'control' && config.controlDb !== null && config.accounting.kind === 'redis') return;
  if (fs.existsSync(config.dataDir)) return;
  const origin = process.env.DATA_DIR ? 'DATA_DIR' : 'the default DATA_DIR, ./data';
  throw new ConfigError(
    `no data directory at ${config.dataDir} (${origin}): 'ipsift serve' makes one on its first start; to use another, set DATA_DIR (DATA_DIR=/path/to/data ipsift ${command.name}${sub ? ` ${sub}` : ''} …)`,
  );
}

/** Whether the line asks for help anywhere before a `--` (help.ts then says whose). */
const asksHelp = (argv: readonly string[]): boolean => {
  const at = argv.findIndex((a) => a === '--help' || a === '-h');
  return at >= 0 && !argv.slice(0, at).includes('--');
};

export async function main(argv: string[]): Promise<number> {
  const [cmd = 'serve', sub, ...rest] = argv;
  structuredWarnings(jsonLogger());
  try {
    if (cmd === '--version' || cmd === '-V' || cmd === 'version') {
      process.stdout.write(`${versionLine()}\n`);
      return 0;
    }
    if (asksHelp(argv) || cmd === 'help') {
      const { HELP, helpFor } = await import('./help.js');
      // null: a line whose command prints its own help (feed import --help … reaches it).
      const help = cmd === 'help' ? HELP[''] : helpFor(argv);
      if (help !== null) return (print(false, null, () => help), 0);
    }
    const command = commandNamed(cmd);
    if (command === undefined) throw new UsageError(`unknown command ${cmd}`);
    await requireDataDir(command, sub);
    return await command.run(sub, rest);
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`ipsift: ${terminalSafe(e.message)}\n(see ipsift --help)\n`);
      return 2;
    }
    // The configuration, like the arguments, is the caller's to fix: exit 2, one line.
    if (e instanceof IpsiftError && e.code === 'CONFIG') {
      process.stderr.write(`ipsift: ${terminalSafe(e.message)}\n`);
      return 2;
    }
    if (e instanceof IpsiftError) {
      process.stderr.write(`ipsift: ${terminalSafe(e.message)}\n`);
      return 1;
    }
    // The file system refusing DATA_DIR (a path that cannot be made, no write access) is the
    // configuration's fault: one line naming it, as serve's own check says it.
    const fsError = e as NodeJS.ErrnoException;
    let dataDir: string;
    try {
      dataDir = (await import('../config.js')).loadConfig(process.env).dataDir;
    } catch {
      dataDir = path.resolve(process.env.DATA_DIR || './data');
    }
    if (typeof fsError?.code === 'string' && typeof fsError.path === 'string' && (path.resolve(fsError.path) + path.sep).startsWith(dataDir + path.sep)) {
      process.stderr.write(
        `ipsift: DATA_DIR ${dataDir} is not usable (${fsError.code}: ${fsError.syscall ?? 'access'} ${fsError.path}): point DATA_DIR at a writable directory\n`,
      );
      return 2;
    }
    throw e;
  }
}
