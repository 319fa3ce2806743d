// `ipsift serve`: the service in this process until a signal drains it (service.ts).

import { loadConfig } from '../config.js';
import { jsonLogger } from '../log.js';
import { startService, type Service } from '../service.js';
import { UsageError, parse } from './common.js';
import { tuneV8 } from './v8-tuning.js';

/** serve's options, each the setting of the same name for this run (it wins over the environment). */
const SERVE_OPTIONS: Record<string, string> = { host: 'HOST', port: 'PORT', 'admin-host': 'ADMIN_HOST', 'admin-port': 'ADMIN_PORT', 'data-dir': 'DATA_DIR' };

export async function serve(args: string[]): Promise<void> {
  const { values, positionals } = parse(args, Object.fromEntries(Object.keys(SERVE_OPTIONS).map((o) => [o, { type: 'string' as const }])));
  if (positionals.length)
    throw new UsageError(
      `serve takes no arguments, only options (${Object.keys(SERVE_OPTIONS)
        .map((o) => `--${o}`)
        .join(', ')}): ${positionals[0]}`,
    );
  if (values.json) throw new UsageError('serve has no --json: it logs JSON lines already');
  // Into the environment itself: the daily run's children read their settings from it.
  for (const [option, name] of Object.entries(SERVE_OPTIONS)) if (typeof values[option] === 'string') process.env[name] = values[option] as string;
  const config = loadConfig(process.env);
  const log = jsonLogger(undefined, config.logLevel);
  // Before the request paths compile: they run under ipsift's V8 settings.
  tuneV8();
  // The signals are taken before the service starts: its threads answer as soon as they listen,
  // before this thread has logged that it listens, so a SIGTERM sent on the first answer found
  // no handler and killed the process undrained (seen under load). One that comes while the
  // service starts is acted on once it has.
  // First signal: drain and exit 0. A second one: exit at once.
  let service: Service | null = null;
  let stopping = false;
  const drain = (s: Service): void =>
    void s.drain(config.shutdownGraceMs).then((clean) => {
      log.info('stopped', { clean });
      process.exit(0);
    });
  const stop = (signal: string): void => {
    if (stopping) {
      log.warn('second signal: exiting at once', { signal });
      if (service === null) process.exit(1);
      void service.closeThreads().finally(() => process.exit(1));
      return;
    }
    stopping = true;
    log.info('stopping: draining requests in flight', { signal, grace_s: config.shutdownGraceMs / 1000 });
    if (service !== null) drain(service);
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  service = await startService(config, log);
  process.on('SIGHUP', () => void service?.holder.reload());
  if (stopping) drain(service);
}
