// Which process holds something, in a way that survives a restart: the pid alone does not (a
// container's server is PID 1 again after a kill -9), so a holder is the pid with the moment
// its process started (Linux: /proc/<pid>/stat's start time, in clock ticks since boot) and the
// machine's boot id. A holder whose pid now names another process, or another boot, is gone.
// Where /proc is not there, the pid alone is all there is.

import fs from 'node:fs';

export interface ProcessIdentity {
  pid: number;
  /** The process's start time (Linux clock ticks since boot), or null where unknown. */
  start: string | null;
  /** The machine's boot id, or null where unknown. */
  boot: string | null;
}

function readOrNull(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** The start time of a running process (null: gone, or no /proc). */
export function processStart(pid: number): string | null {
  const stat = readOrNull(`/proc/${pid}/stat`);
  if (stat === null) return null;
  // The command name in parentheses may hold spaces; fields resume after its last ')'. Field 22
  // (starttime) is the 20th after it.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
}

const BOOT_ID = readOrNull('/proc/sys/kernel/random/boot_id')?.trim() ?? null;

/** This process's identity. */
export function ownIdentity(): ProcessIdentity {
  return { pid: process.pid, start: processStart(process.pid), boot: BOOT_ID };
}

/** Whether the process an identity names is still running (an identity without start or boot: by its pid alone). */
export function isRunning(who: Partial<ProcessIdentity>): boolean {
  if (typeof who.pid !== 'number' || !Number.isInteger(who.pid) || who.pid <= 0) return false;
  if (who.boot && BOOT_ID && who.boot !== BOOT_ID) return false;
  if (who.start) {
    const now = processStart(who.pid);
    if (now !== null || fs.existsSync('/proc/self/stat')) return now === who.start;
  }
  try {
    process.kill(who.pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** An identity as a file-name-safe tag (`<pid>-<start>`), and back. */
export const identityTag = (who: ProcessIdentity): string => `${who.pid}-${who.start ?? 'x'}`;
export function identityOfTag(tag: string): ProcessIdentity | null {
  const m = /^(\d+)-(\d+|x)$/.exec(tag);
  return m ? { pid: Number(m[1]), start: m[2] === 'x' ? null : m[2], boot: BOOT_ID } : null;
}
