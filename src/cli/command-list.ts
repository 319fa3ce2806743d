// The command table's descriptive half: every `ipsift` command once, with its lines in `ipsift
// --help`, its subcommands and what it needs of a data directory. The overview help and shell
// completion are made from it; commands.ts adds how each runs, keyed by these names (the
// compiler holds the two halves to the same set). Kept apart so the help, which every command
// module imports, does not import the modules back.

/** What a command needs of DATA_DIR: nothing, the directory, or only the control database (which may live elsewhere). */
export type DataNeed = 'none' | 'data' | 'control';

export interface CommandInfo {
  readonly name: string;
  /** Its lines in `ipsift --help`: usage, then what it does. */
  readonly lines: readonly (readonly [string, string])[];
  /** Its subcommands, for completion. */
  readonly subs?: readonly string[];
  readonly data: DataNeed;
}

export const COMMAND_LIST = [
  { name: 'serve', lines: [['serve', 'run the HTTP service (default command)']], data: 'none' },
  {
    name: 'feed',
    lines: [
      ['feed import <file>', 'import a feed (canonical CSV or plain list)'],
      ['feed list', 'list imported feeds'],
      ['feed remove <name>', 'remove an imported feed'],
    ],
    subs: ['import', 'list', 'remove'],
    data: 'data',
  },
  { name: 'build', lines: [['build', 'build from all imported feeds, serve the build and publish it']], data: 'data' },
  {
    name: 'builds',
    lines: [
      ['builds', 'list builds and the one serving'],
      ['builds use <id>', 'make an existing build the serving one'],
      ['builds log', 'which build served from when to when'],
      ['builds compare [<a>] <b>', 'what changed between two builds, per category'],
    ],
    subs: ['use', 'log', 'compare'],
    data: 'data',
  },
  { name: 'explain', lines: [['explain <ip>', 'every feed that covers an address, and the rule that decided each category']], data: 'data' },
  {
    name: 'org',
    lines: [['org create|list|show|plan|limit|delete', 'organisations, plans and overage limits']],
    subs: ['create', 'list', 'show', 'plan', 'limit', 'delete'],
    data: 'control',
  },
  { name: 'key', lines: [['key create|list|show|revoke|rotate', 'API keys']], subs: ['create', 'list', 'show', 'revoke', 'rotate'], data: 'control' },
  { name: 'admin', lines: [['admin token create|list|revoke', 'operator tokens for the admin API']], subs: ['token'], data: 'control' },
  { name: 'audit', lines: [['audit', 'who changed which organisation, licence or key, when, from where']], data: 'control' },
  { name: 'usage', lines: [['usage <org-id>', 'requests in the current window against quota and overage limit']], data: 'control' },
  {
    name: 'license',
    lines: [['license grant|revoke|list', 'database licences per organisation and base']],
    subs: ['grant', 'revoke', 'list'],
    data: 'control',
  },
  { name: 'publish', lines: [['publish', "publish a build's database files and index to the object store again"]], data: 'data' },
  {
    name: 'sources',
    lines: [
      ['sources list|status|refresh|import', "the public registry, each source's freshness, fetch now"],
      ['sources disable|enable <name>', 'set a source aside, or take it back'],
    ],
    subs: ['list', 'status', 'refresh', 'import', 'disable', 'enable'],
    data: 'data',
  },
  {
    name: 'diff',
    lines: [['diff apply <old.csv.gz> <diff> <out>', 'bring a downloaded CSV to the next version with its diff']],
    subs: ['apply', 'make'],
    data: 'none',
  },
  { name: 'completion', lines: [['completion', 'a bash completion script made from these commands']], data: 'none' },
] as const satisfies readonly CommandInfo[];

export type CommandName = (typeof COMMAND_LIST)[number]['name'];

const LIST: readonly CommandInfo[] = COMMAND_LIST;

/** The overview's command lines: what each does in a column where its usage leaves room. */
export function commandLines(): string {
  const column = (usage: string): string => (usage.length < 22 ? usage.padEnd(22) : usage.length < 36 ? usage.padEnd(36) : `${usage}  `);
  return LIST.flatMap((c) => c.lines)
    .map(([usage, what]) => `  ${column(usage)}${what}`)
    .join('\n');
}

/** `ipsift completion`: commands, then each one's subcommands, from the table. */
export function bashCompletion(): string {
  const subs = LIST.filter((c) => c.subs).map((c) => `    ${c.name}) words="${c.subs!.join(' ')}" ;;`);
  return `# bash completion for ipsift (ipsift completion > /etc/bash_completion.d/ipsift)
_ipsift() {
  local words
  if [ "$COMP_CWORD" -eq 1 ]; then
    words="${LIST.map((c) => c.name).join(' ')} --help --version"
  elif [ "$COMP_CWORD" -eq 2 ]; then
    case "\${COMP_WORDS[1]}" in
${subs.join('\n')}
      *) words="--help --json" ;;
    esac
  else
    words="--help --json"
  fi
  COMPREPLY=($(compgen -W "$words" -- "\${COMP_WORDS[COMP_CWORD]}"))
}
complete -F _ipsift ipsift
`;
}
