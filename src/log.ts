// Structured JSON logs, one object per line on stderr. Secrets are never passed in here.

export type LogFields = Record<string, unknown>;

export interface Logger {
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

export function jsonLogger(write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const emit = (level: string, msg: string, fields?: LogFields): void => {
    write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }) + '\n');
  };
  return {
    info: (msg, fields) => emit('info', msg, fields),
    warn: (msg, fields) => emit('warn', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
  };
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };
