// uWebSockets.js behind the boundary: its apps are HttpApps as they are (types.ts has its
// shape), so the hot path calls uWS directly. Its native binary is loaded by hand: the
// package's own entry falls back, with a console warning, to a pure-JS server that is slow
// and broken (it hangs lookups and crashes on /readyz), where ipsift uses node:http instead.

import { createRequire } from 'node:module';
import path from 'node:path';
import type * as UWS from 'uWebSockets.js';
import type { HttpApp, HttpServer, Listener } from './types.js';

type Native = typeof UWS;

/**
 * The uWebSockets.js builds ipsift carries, newest first. The upstream project publishes no npm
 * package; both are third-party repackagings of its release binaries:
 * - @btc-vision/uwebsockets.js 20.57: Node 20, 22, 24 and 25 (ABIs 115, 127, 137, 141); its
 *   binaries need glibc 2.38 or later (Debian 13, Ubuntu 24.04).
 * - @trufflesuite/uws-js-unofficial 20.30 (as uWebSockets.js): Node 20 (ABI 115) on older glibc.
 */
export const UWS_BUILDS = [
  { version: '20.57.0', package: '@btc-vision/uwebsockets.js', entry: '@btc-vision/uwebsockets.js', binaries: '.' },
  { version: '20.30.0', package: '@trufflesuite/uws-js-unofficial', entry: 'uWebSockets.js/package.json', binaries: 'binaries' },
] as const;

export type UwsVersion = (typeof UWS_BUILDS)[number]['version'];

/**
 * The native addon of the newest build with a binary that loads for this runtime's ABI
 * (NODE_MODULE_VERSION), or why none does.
 */
export function loadNativeUws(abi = process.versions.modules): { uws: Native; version: UwsVersion } | { reason: string } {
  const require = createRequire(import.meta.url);
  const why: string[] = [];
  for (const build of UWS_BUILDS) {
    try {
      const dir = path.dirname(require.resolve(build.entry));
      const file = path.join(dir, build.binaries, `uws_${process.platform}_${process.arch}_${abi}.node`);
      return { uws: require(file) as Native, version: build.version };
    } catch (e) {
      const first = (e instanceof Error ? e.message : String(e)).split('\n')[0];
      why.push(`${build.version}: ${first}`);
    }
  }
  return { reason: `no working uWebSockets.js binary for this runtime (ABI ${abi}): ${why.join('; ')}` };
}

export function uwsServer(uws: Native): HttpServer {
  return {
    kind: 'uws',
    // uWS's TemplatedApp has every method HttpApp names, with wider argument types.
    app: () => uws.App() as unknown as HttpApp,
    // uSockets listens with SO_REUSEPORT on Linux: apps on several threads share a port as is.
    cannotSharePort: null,
    listen: (app, host, port) =>
      new Promise<Listener>((resolve, reject) => {
        (app as unknown as UWS.TemplatedApp).listen(host, port, (socket) => {
          if (!socket) return reject(new Error(`cannot listen on ${host}:${port}`));
          let open = true;
          const stop = (): void => {
            if (open) uws.us_listen_socket_close(socket);
            open = false;
          };
          // On the main thread open connections close with the process (uWS holds no event-loop
          // reference for them); a worker thread must close them itself, or its exit aborts the
          // process ("uv_loop_close() while having open handles").
          const close = (): void => {
            stop();
            (app as unknown as { close?(): void }).close?.();
          };
          // uWS does not tell when what it buffered has been sent.
          resolve({ port: uws.us_socket_local_port(socket), stop, close, unsent: () => 0 });
        });
      }),
  };
}
