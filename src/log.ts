// Structured JSON logs, one object per line on stderr. Secrets are never passed in here.

export type LogFields = Record<string, unknown>;

export interface Logger {
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

/** LOG_LEVEL's choices, least severe first: a level writes its own lines and the more severe. */
export const LOG_LEVELS = ['info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * What JSON.stringify leaves as it is but a terminal may act on (C1 controls, DEL) or read out
 * of order (line separators, bidirectional overrides): escaped, since an operator reads these
 * lines in a terminal and a client chooses some of their text (a request's path).
 */
const TERMINAL_UNSAFE = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const escaped = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

export function jsonLogger(write: (line: string) => void = (l) => process.stderr.write(l), level: LogLevel = 'info'): Logger {
  const emit = (lvl: string, msg: string, fields?: LogFields): void => {
    write(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...fields }).replace(TERMINAL_UNSAFE, escaped) + '\n');
  };
  const least = LOG_LEVELS.indexOf(level);
  const nothing = (): void => {};
  return {
    info: least <= 0 ? (msg, fields) => emit('info', msg, fields) : nothing,
    warn: least <= 1 ? (msg, fields) => emit('warn', msg, fields) : nothing,
    error: (msg, fields) => emit('error', msg, fields),
  };
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/** A warning or error as the console's log tail shows it. */
export interface LogLine {
  time: string;
  level: 'warn' | 'error';
  msg: string;
  fields: LogFields;
}

/**
 * The last warnings and errors of this process, kept in memory for the console (GET
 * /admin/v1/log), so an operator sees what went wrong without a shell on the machine. Every
 * thread's lines reach the main thread's logger, so wrapping it there catches them all.
 */
export class LogTail {
  private readonly ring: LogLine[] = [];
  constructor(
    readonly keep = 200,
    private readonly now: () => number = Date.now,
  ) {}

  /** The logger that writes as `log` does and keeps its warnings and errors here. */
  wrap(log: Logger): Logger {
    const keep = (level: LogLine['level'], msg: string, fields?: LogFields): void => {
      this.ring.push({ time: new Date(this.now()).toISOString(), level, msg, fields: fields ?? {} });
      if (this.ring.length > this.keep) this.ring.shift();
    };
    return {
      info: (msg, fields) => log.info(msg, fields),
      warn: (msg, fields) => {
        keep('warn', msg, fields);
        log.warn(msg, fields);
      },
      error: (msg, fields) => {
        keep('error', msg, fields);
        log.error(msg, fields);
      },
    };
  }

  /** Newest first; `errorsOnly`: without the warnings. */
  lines(errorsOnly = false): LogLine[] {
    const out = errorsOnly ? this.ring.filter((l) => l.level === 'error') : [...this.ring];
    return out.reverse();
  }
}

/**
 * Runtime warnings as log lines, not free text among the JSON (on every thread that may load a
 * module which warns). node:sqlite's "experimental" notice is dropped: ipsift chose that driver
 * on purpose (control/sqlite.ts).
 */
export function structuredWarnings(log: Logger): void {
  process.removeAllListeners('warning');
  process.on('warning', (w) => {
    if (w.name === 'ExperimentalWarning' && /SQLite/.test(w.message)) return;
    log.warn('runtime warning', { name: w.name, message: w.message });
  });
}

/** Query parameters that carry a secret in the URLs operators give (tokens, keys, signatures). */
const SECRET_PARAM =
  /^(.*[-_])?(token|key|apikey|api[-_]?key|secret|password|passwd|pass|pwd|auth|authorization|sig|signature|credential|session|access[-_]?token|x-amz-(signature|credential|security-token))$/i;

/**
 * A URL without its secrets, for messages, logs, pages and answers: userinfo (a user name may be
 * a token) and the values of query parameters named like secrets are masked. Used wherever a
 * configured URL is shown.
 */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    if (u.username && u.password === '') u.username = '***';
    for (const name of [...u.searchParams.keys()]) if (SECRET_PARAM.test(name)) u.searchParams.set(name, '***');
    return u.toString().replaceAll('%2A%2A%2A', '***');
  } catch {
    return '(an unparsable URL)';
  }
}
