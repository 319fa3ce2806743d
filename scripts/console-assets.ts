// The console's files as the admin port serves them (api/admin/console.ts): the compiled modules
// (dist/console-modules, from console/tsconfig.json) and the style sheet go under
// dist/console/assets/<hash>/, the hash of all of them together, and the page names that
// directory and preloads every module, so that a browser fetches them at once and keeps them
// for as long as the page names them. Run by `npm run build`.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MODULES = path.join(ROOT, 'dist/console-modules');
const OUT = path.join(ROOT, 'dist/console');

/** The files of the console: name → bytes (modules first, main.js among them). */
function files(): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const name of fs.readdirSync(MODULES).sort())
    if (name.endsWith('.js') && fs.existsSync(path.join(ROOT, 'console/src', name.replace(/\.js$/, '.ts'))))
      out.set(name, fs.readFileSync(path.join(MODULES, name)));
  out.set('console.css', fs.readFileSync(path.join(ROOT, 'console/console.css')));
  return out;
}

export function writeConsole(): string {
  const all = files();
  const h = crypto.createHash('sha256');
  for (const [name, bytes] of all) h.update(`${name}\0${bytes.length}\0`).update(bytes);
  const hash = h.digest('hex').slice(0, 16);
  const staging = `${OUT}.${process.pid}.tmp`;
  fs.rmSync(staging, { recursive: true, force: true });
  fs.mkdirSync(path.join(staging, 'assets', hash), { recursive: true });
  for (const [name, bytes] of all) fs.writeFileSync(path.join(staging, 'assets', hash, name), bytes);
  const preloads = [...all.keys()]
    .filter((n) => n.endsWith('.js') && n !== 'main.js')
    .map((n) => `<link rel="modulepreload" href="/console/assets/${hash}/${n}">`)
    .join('\n');
  const page = fs.readFileSync(path.join(ROOT, 'console/index.html'), 'utf8').replaceAll('HASH', hash).replace('PRELOADS', preloads);
  fs.writeFileSync(path.join(staging, 'index.html'), page);
  fs.rmSync(OUT, { recursive: true, force: true });
  fs.renameSync(staging, OUT);
  return hash;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) writeConsole();
