// The data directory's build lock (DATA_DIR/daily-build.lock): one build at a time on a data
// directory among those that take it (the daily run, source refreshes, `ipsift sources refresh`). Made
// exclusively, holding the pid; a lock whose process is gone, or older than LOCK_STALE_MS, is
// taken over. Threads of one process share it: the pid is the process's.

import fs from 'node:fs';
import { dailyBuildLockFile } from '../data-dir.js';

const LOCK_STALE_MS = 6 * 3_600_000;
/** Takes the data directory's build lock; false when a live process holds it. */
export function takeBuildLock(dataDir: string, nowMs = Date.now()): boolean {
  const file = dailyBuildLockFile(dataDir);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, JSON.stringify({ pid: process.pid, at: new Date(nowMs).toISOString() }), { flag: 'wx', mode: 0o600 });
      return true;
    } catch {
      let holder: { pid?: number; at?: string } = {};
      try {
        holder = JSON.parse(fs.readFileSync(file, 'utf8')) as typeof holder;
      } catch {
        // unreadable: treated as stale
      }
      let alive = false;
      try {
        if (typeof holder.pid === 'number') process.kill(holder.pid, 0);
        alive = typeof holder.pid === 'number';
      } catch (e) {
        alive = (e as NodeJS.ErrnoException).code === 'EPERM';
      }
      if (alive && nowMs - Date.parse(holder.at ?? '') < LOCK_STALE_MS) return false;
      fs.rmSync(file, { force: true });
    }
  }
  return false;
}

/** Gives the lock back, if this process holds it. */
export function releaseBuildLock(dataDir: string): void {
  const file = dailyBuildLockFile(dataDir);
  try {
    if ((JSON.parse(fs.readFileSync(file, 'utf8')) as { pid?: number }).pid === process.pid) fs.rmSync(file, { force: true });
  } catch {
    // not ours, or gone
  }
}
