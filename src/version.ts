// What this ipsift is and runs on: for `ipsift --version` and the metrics' build info.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package's version (package.json, read once). */
export const VERSION = (
  JSON.parse(fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '../../package.json'), 'utf8')) as { version: string }
).version;

/** The runtime: `Node 20.20.2` or `Bun 1.4.5`. */
export const RUNTIME = process.versions.bun ? `Bun ${process.versions.bun}` : `Node ${process.versions.node}`;
