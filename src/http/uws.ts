// uWebSockets.js, checked: the package silently falls back to a slow pure-JS server when its
// native binary cannot load (wrong glibc, Node ABI, or Bun). We refuse to serve on it unless
// the operator explicitly allows it.

import uWS from 'uWebSockets.js';
import { IpsiftError } from '../errors.js';

export { uWS };

/**
 * A constant argument for uWS calls as an exact-size ArrayBuffer: uWS reads it as it is,
 * where a string argument costs a UTF-8 measure, a malloc and a copy on every call.
 */
export function nativeString(s: string): ArrayBuffer {
  return new Uint8Array(Buffer.from(s, 'latin1')).buffer;
}

/** True when the native addon is loaded (its functions are native code). */
export function uwsIsNative(): boolean {
  return Function.prototype.toString.call(uWS.App).includes('[native code]');
}

export class SlowHttpError extends IpsiftError {
  constructor() {
    super('SLOW_HTTP', 
      'uWebSockets.js could not load its native binary and fell back to its slow pure-JS server. ' +
        'ipsift will not serve on it: use Node 20 on glibc >= 2.36 (see README), ' +
        'or set IPSIFT_ALLOW_SLOW_HTTP=1 to run anyway at a fraction of the throughput.',
    );
  }
}
