// `npm run test:bun`: the whole suite on Bun (`npm run test:bun:smoke`: the subset CI runs). `bun test` runs node:test files, but all of a
// run's files share one process, so one file's environment (node-server.test sets
// HTTP_SERVER) and modules would reach the next; each file therefore gets its own `bun test`,
// one after another as `node --test --test-concurrency=1` runs them. Ends with the counts.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

if (process.versions.bun === undefined) {
  process.stderr.write('test:bun: run this script with bun (the package script does)\n');
  process.exit(2);
}

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../test');
// Named files only (`bun dist/scripts/bun-test.js cli threads`: the smoke subset CI runs), else all.
const only = new Set(process.argv.slice(2).map((n) => `${n}.test.js`));
const files = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.test.js') && (only.size === 0 || only.has(f)))
  .sort();
if (only.size > 0 && files.length !== only.size) {
  process.stderr.write(`test:bun: no test file for ${[...only].filter((f) => !files.includes(f)).join(', ')}\n`);
  process.exit(2);
}
const total = { pass: 0, fail: 0, skip: 0 };
const failedFiles: string[] = [];
/** The failed tests, each with the lines before it (its error), repeated at the end: CI shows a run's tail. */
const failedTests: string[] = [];
const started = Date.now();
for (const f of files) {
  const r = spawnSync(process.execPath, ['test', '--timeout', '120000', path.join(dir, f)], { encoding: 'utf8', maxBuffer: 256 * 2 ** 20 });
  const output = `${r.stdout}${r.stderr}`;
  process.stdout.write(output);
  const count = (word: string): number => Number(new RegExp(`^\\s*(\\d+) ${word}$`, 'm').exec(output)?.[1] ?? 0);
  total.pass += count('pass');
  total.fail += count('fail');
  total.skip += count('skip');
  const lines = output.split('\n');
  lines.forEach((line, i) => {
    if (line.startsWith('(fail)')) failedTests.push(`${f}: ${line}\n${lines.slice(Math.max(0, i - 12), i).join('\n')}`);
  });
  // A file that dies or times out without a failed test still fails the run.
  if (r.status !== 0) {
    failedFiles.push(f);
    if (count('fail') === 0) total.fail++;
  }
}
process.stdout.write(
  `\nbun ${process.versions.bun}: ${files.length} files in ${Math.round((Date.now() - started) / 1000)} s${failedFiles.length ? `; failed: ${failedFiles.join(', ')}` : ''}\n`,
);
if (failedTests.length) process.stdout.write(`${failedTests.join('\n')}\n`);
process.stdout.write(`${total.pass} passed, ${total.fail} failed, ${total.skip} skipped\n`);
process.exit(total.fail > 0 ? 1 : 0);
