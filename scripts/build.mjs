#!/usr/bin/env node
// The build: the TypeScript of the service and of the console, then the console's assets.
// With --if-changed (npm start, npm test, the benches) it first compares the inputs' names,
// sizes and modification times with those the last build recorded in dist/, and builds only
// when they differ: a restart of a built, unchanged checkout no longer waits for the compiler.
// Plain JavaScript, because it must run before anything is compiled.

import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const STAMP = path.join(ROOT, 'dist', '.build-inputs');
/** What the build reads: the compiled folders, the console, and the files that configure both. */
const INPUT_DIRS = ['src', 'workers', 'test', 'loadtest', 'scripts', 'console'];
const INPUT_FILES = ['tsconfig.json', 'package.json', 'package-lock.json'];

function fingerprint() {
  const hash = crypto.createHash('sha256');
  const add = (rel) => {
    let st;
    try {
      st = fs.statSync(path.join(ROOT, rel));
    } catch {
      return hash.update(`${rel}\0-\n`);
    }
    if (st.isDirectory()) {
      for (const name of fs.readdirSync(path.join(ROOT, rel)).sort()) add(path.join(rel, name));
    } else hash.update(`${rel}\0${st.size}\0${st.mtimeMs}\n`);
  };
  for (const d of INPUT_DIRS) add(d);
  for (const f of INPUT_FILES) add(f);
  return hash.digest('hex');
}

/**
 * Compiled files whose source is gone (a test moved or renamed): tsc never removes them, and a
 * stale dist/test/x.test.js would still run with `npm test`.
 */
function removeOrphans() {
  for (const dir of ['src', 'workers', 'test', 'loadtest', 'scripts']) {
    const walk = (rel) => {
      let names;
      try {
        names = fs.readdirSync(path.join(ROOT, 'dist', rel), { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of names) {
        const r = path.join(rel, e.name);
        if (e.isDirectory()) walk(r);
        else if (/\.js(\.map)?$/.test(e.name) && !fs.existsSync(path.join(ROOT, r.replace(/\.js(\.map)?$/, '.ts')))) fs.rmSync(path.join(ROOT, 'dist', r));
      }
    };
    walk(dir);
  }
}

function step(command, args) {
  const r = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

const ifChanged = process.argv.includes('--if-changed');
const before = fingerprint();
let recorded = null;
try {
  recorded = fs.readFileSync(STAMP, 'utf8').trim();
} catch {
  // never built, or dist/ was removed
}
if (ifChanged && recorded === before) process.exit(0);

const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
step(process.execPath, [tsc, '-p', 'tsconfig.json']);
removeOrphans();
step(process.execPath, [tsc, '-p', 'console/tsconfig.json']);
step(process.execPath, [path.join(ROOT, 'dist', 'scripts', 'console-assets.js')]);
// What was read, not what is there now: an edit made while compiling builds again next time.
fs.writeFileSync(STAMP, before + '\n');
