// What `serve` checks before doing any work: every file and directory it needs, each failure
// one line naming the variable and the fix (ConfigError), never a stack trace halfway through
// a demo import.

import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { ConfigError, type Config } from './config.js';
import { IpsiftError, reasonOf } from './errors.js';
import { makeDirectory } from './files.js';
import { buildsDir, controlDbFile, feedsDir } from './data-dir.js';

/** DATA_DIR exists (or can be made) as a writable directory; the plans and catalogue files read. */
export function checkStartup(config: Config): void {
  const dir = config.dataDir;
  if (fs.existsSync(dir) && !fs.statSync(dir).isDirectory()) throw new ConfigError(`DATA_DIR ${dir} is a file, not a directory: point DATA_DIR at a directory`);
  try {
    makeDirectory(dir);
    const probe = path.join(dir, `.write-test-${process.pid}`);
    fs.writeFileSync(probe, '');
    fs.rmSync(probe);
  } catch (e) {
    throw new ConfigError(`DATA_DIR ${dir} is not a writable directory (${reasonOf(e)}): create it, or give the user running ipsift write access`);
  }
  for (const [name, file] of [
    ['PLANS_FILE', config.plansFile],
    ['CATALOGUE_FILE', config.catalogueFile],
  ] as const) {
    try {
      fs.accessSync(file, fs.constants.R_OK);
    } catch {
      throw new ConfigError(`${name} ${file} cannot be read: set ${name} to an existing file`);
    }
  }
  for (const [name, host] of [
    ['HOST', config.host],
    ['ADMIN_HOST', config.adminHost],
  ] as const) {
    if (net.isIP(host) === 0 && !/^(localhost|[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*)$/.test(host)) {
      throw new ConfigError(`${name} must be an IP address or a host name, got ${JSON.stringify(host)}`);
    }
  }
}

/**
 * A data directory nothing has been put in yet: no feeds, no builds, no control database. Only
 * such a one gets the demo (and its printed keys): one that lost control.sqlite is not new.
 */
export function isFresh(dataDir: string): boolean {
  const nonEmpty = (d: string): boolean => fs.existsSync(d) && fs.readdirSync(d).length > 0;
  return !nonEmpty(feedsDir(dataDir)) && !nonEmpty(buildsDir(dataDir)) && !fs.existsSync(controlDbFile(dataDir));
}

/**
 * Refuses a port another process holds. uWS listens with SO_REUSEPORT, so a second ipsift
 * on the same port would otherwise share it silently; a plain bind (no SO_REUSEPORT) fails
 * against any holder, and is released before uWS binds.
 */
export async function checkPortFree(name: string, host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EADDRINUSE')
        reject(new IpsiftError('PORT_IN_USE', `${name} ${port} on ${host} is in use by another process: stop it, or set ${name} to a free port`));
      else reject(new ConfigError(`cannot listen on ${host}:${port} (${e.code ?? reasonOf(e)}): check HOST/ADMIN_HOST and ${name}`));
    });
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/**
 * A port free on host now, for threads that must all listen on one port when PORT is 0:
 * uSockets sets SO_REUSEPORT only on a port it is given, so the first thread cannot take an
 * ephemeral one and share it.
 */
export function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen({ host, port: 0, exclusive: true }, () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
