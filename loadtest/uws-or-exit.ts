// The bench servers' uWebSockets.js: the build this runtime loads, or exit saying why not.

import type * as UWS from 'uWebSockets.js';
import { loadNativeUws } from '../src/http/server/uws.js';

export function uwsOrExit(): typeof UWS {
  const loaded = loadNativeUws();
  if (!('uws' in loaded)) {
    process.stderr.write(`cannot serve: ${loaded.reason}\n`);
    process.exit(1);
  }
  return loaded.uws;
}
