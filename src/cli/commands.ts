// The command table's working half: how each command of command-list.ts runs, its module
// imported only then, so `ipsift --version` loads none of the service. Dispatch (main.ts) asks
// here; a command listed without a runner, or the reverse, does not compile.

import { COMMAND_LIST, type CommandInfo, type CommandName, bashCompletion } from './command-list.js';

export interface Command extends CommandInfo {
  /** Runs it: 0 when done, -1 while it keeps running (serve). */
  run(sub: string | undefined, rest: string[]): Promise<number>;
}

type Runner = Command['run'];

/** Arguments as a command without subcommands takes them: the first word is its own. */
const all = (sub: string | undefined, rest: string[]): string[] => (sub === undefined ? rest : [sub, ...rest]);
const done = async (p: unknown): Promise<number> => (await p, 0);

/** The account commands, one module for all of them. */
const account =
  (name: CommandName): Runner =>
  async (sub, rest) =>
    done((await import('./accounts.js')).accountCommand(name, sub, rest));

const RUNNERS: Record<CommandName, Runner> = {
  serve: async (sub, rest) => (await (await import('./serve.js')).serve(all(sub, rest)), -1),
  feed: async (sub, rest) => done((await import('./feeds.js')).feedCommand(sub, rest)),
  build: async (sub, rest) => done((await import('./builds.js')).build(all(sub, rest))),
  builds: async (sub, rest) => done((await import('./builds.js')).builds(all(sub, rest))),
  explain: async (sub, rest) => done((await import('./explain.js')).explain(all(sub, rest))),
  org: account('org'),
  key: account('key'),
  admin: account('admin'),
  audit: account('audit'),
  usage: account('usage'),
  license: account('license'),
  publish: account('publish'),
  sources: async (sub, rest) => done((await import('./sources.js')).sourcesCommand(sub, rest)),
  diff: async (sub, rest) => done((await import('./diffs.js')).diffCommand(sub, rest)),
  completion: async () => (process.stdout.write(bashCompletion()), 0),
};

export function commandNamed(name: string): Command | undefined {
  const info = COMMAND_LIST.find((c) => c.name === name);
  return info && { ...info, run: RUNNERS[info.name] };
}
