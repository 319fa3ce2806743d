// Checks an accounting LMDB file before this process maps it. LMDB trusts its pages: a
// damaged file makes the reader fault (SIGSEGV/SIGBUS) instead of failing, and an emptied one
// would silently start every counter from zero. So the meta pages are checked here, and every
// entry is read once in a child process, where a fault costs only the child.
//
// Run as a script (node check-store.js FILE), it is that child: exit 0 when every entry reads.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { open } from 'lmdb';
import { IpsiftError } from '../errors.js';

const META_MAGIC = 0xbeefc0de;
/** Where the magic sits in a meta page (after this LMDB build's page header). */
const MAGIC_AT = 24;
const PAGE = 4096;

export class CorruptStoreError extends IpsiftError {
  constructor(file: string, what: string, fix: string) {
    super('STORE_CORRUPT', `${file}: ${what}; ${fix}`);
  }
}

export const ACCOUNTING_FIX = 'stop every ipsift on this data directory, then restore the file from a backup or move it aside to start usage counting afresh';

/**
 * A process starting beside us on a new data directory may be creating the file right now:
 * for a moment it is empty, then its meta pages are written. So a file is found damaged only
 * if it stays so this long.
 */
const SETTLE_MS = 1000;

/** Why the file's size and meta pages are not an LMDB file's, or null when they are. */
function headerProblem(file: string): string | null {
  const size = fs.statSync(file).size;
  if (size < 2 * PAGE) return `${size} bytes, too short for an LMDB file (truncated?)`;
  const fd = fs.openSync(file, 'r');
  try {
    const meta = Buffer.alloc(8);
    for (const page of [0, 1]) {
      fs.readSync(fd, meta, 0, 8, page * PAGE + MAGIC_AT);
      if (meta.readUInt32LE(0) !== META_MAGIC) return `meta page ${page} is damaged (not an LMDB file, or overwritten)`;
    }
  } finally {
    fs.closeSync(fd);
  }
  return null;
}

/** Throws CorruptStoreError when `file` exists and is not a sound LMDB file. */
export function checkAccountingFile(file: string): void {
  if (!fs.existsSync(file)) return; // not there yet: LMDB creates it
  const fail = (what: string): never => {
    throw new CorruptStoreError(file, what, ACCOUNTING_FIX);
  };
  const deadline = Date.now() + SETTLE_MS;
  for (let problem = headerProblem(file); problem !== null; problem = headerProblem(file)) {
    if (Date.now() >= deadline) fail(problem);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
  }
  const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), file], { encoding: 'utf8', timeout: 60_000 });
  if (child.status !== 0)
    fail(`reading every entry failed (${child.signal ?? `exit ${child.status}`}${child.stderr ? `: ${child.stderr.trim().split('\n')[0]}` : ''})`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const db = open({ path: process.argv[2], readOnly: true, cache: false });
  let n = 0;
  for (const { value } of db.getRange({})) if (value !== undefined) n++;
  await db.close();
  process.stdout.write(`${n}\n`);
}
