// The data directory's build lock (DATA_DIR/daily-build.lock): one build at a time on a data
// directory among those that take it (the daily run, source refreshes, `ipsift sources refresh`). Made
// exclusively, holding its process's identity (pid, start time, boot id: process-identity.ts);
// a lock whose process is gone, whose pid now names another process (a container's PID 1 after
// a restart), or older than LOCK_STALE_MS, is taken over. Threads of one process share it.

import fs from 'node:fs';
import { dailyBuildLockFile } from '../data-dir.js';
import { Unavailable } from '../errors.js';
import { isRunning, ownIdentity, type ProcessIdentity } from '../process-identity.js';

const LOCK_STALE_MS = 6 * 3_600_000;
/** Takes the data directory's build lock; false when a live process holds it. */
export function takeBuildLock(dataDir: string, nowMs = Date.now()): boolean {
  const file = dailyBuildLockFile(dataDir);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, JSON.stringify({ ...ownIdentity(), at: new Date(nowMs).toISOString() }), { flag: 'wx', mode: 0o600 });
      return true;
    } catch (e) {
      // Only an existing lock is someone's: a full disk is not a build running (ENOSPC, EROFS).
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new Unavailable(
          'DATA_DIR_UNWRITABLE',
          `the build lock cannot be written (${(e as Error).message}): free space in DATA_DIR, or make it writable`,
          {
            cause: e,
          },
        );
      let holder: Partial<ProcessIdentity> & { at?: string } = {};
      try {
        holder = JSON.parse(fs.readFileSync(file, 'utf8')) as typeof holder;
      } catch {
        // unreadable: treated as stale
      }
      if (isRunning(holder) && nowMs - Date.parse(holder.at ?? '') < LOCK_STALE_MS) return false;
      fs.rmSync(file, { force: true });
    }
  }
  return false;
}

/** Whether a running process (this one included) holds the data directory's build lock. */
export function buildLockHeld(dataDir: string, nowMs = Date.now()): boolean {
  try {
    const holder = JSON.parse(fs.readFileSync(dailyBuildLockFile(dataDir), 'utf8')) as Partial<ProcessIdentity> & { at?: string };
    return isRunning(holder) && nowMs - Date.parse(holder.at ?? '') < LOCK_STALE_MS;
  } catch {
    return false;
  }
}

/** Gives the lock back, if this process holds it. */
export function releaseBuildLock(dataDir: string): void {
  const file = dailyBuildLockFile(dataDir);
  try {
    const holder = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<ProcessIdentity>;
    const own = ownIdentity();
    if (holder.pid === own.pid && (holder.start ?? null) === own.start) fs.rmSync(file, { force: true });
  } catch {
    // not ours, or gone
  }
}
