// Chooses the HTTP server at start (HTTP_SERVER): uWebSockets.js where its native build loads
// (the fastest on Node), Bun.serve on Bun, node:http everywhere else. `auto` takes the first
// of these that the runtime has.

import { ConfigError, type ServerChoice } from '../../config.js';
import { bunRuntime, bunServer } from './bun.js';
import { nodeServer } from './node.js';
import type { HttpServer, ServerOptions } from './types.js';
import { loadNativeUws, uwsServer } from './uws.js';

/** uWS closes idle keep-alive connections after this long; it cannot be changed. */
export const UWS_KEEP_ALIVE_TIMEOUT_MS = 10_000;
/** Bun.serve's longest idle timeout. */
const BUN_MAX_KEEP_ALIVE_MS = 255_000;

export interface OpenedServer {
  server: HttpServer;
  /** Why `auto` did not take uWS (null when it did, or when the choice was not auto). */
  fallbackReason: string | null;
  /** The idle keep-alive timeout in effect. */
  keepAliveTimeoutMs: number;
}

/** `abi`: the runtime's native-module ABI (tests pass one no build has). */
export async function openServer(choice: ServerChoice, o: ServerOptions, abi = process.versions.modules): Promise<OpenedServer> {
  const node = (fallbackReason: string | null): OpenedServer => ({ server: nodeServer(o), fallbackReason, keepAliveTimeoutMs: o.keepAliveTimeoutMs });
  if (choice === 'node') return node(null);
  const bun = bunRuntime();
  if (choice === 'bun' || (choice === 'auto' && bun !== null)) {
    if (bun === null) throw new ConfigError('HTTP_SERVER=bun: this runtime is not Bun; set HTTP_SERVER=auto, uws or node');
    return { server: bunServer(bun, o), fallbackReason: null, keepAliveTimeoutMs: Math.min(o.keepAliveTimeoutMs, BUN_MAX_KEEP_ALIVE_MS) };
  }
  const uws = loadNativeUws(abi);
  if ('uws' in uws) return { server: uwsServer(uws.uws), fallbackReason: null, keepAliveTimeoutMs: UWS_KEEP_ALIVE_TIMEOUT_MS };
  if (choice === 'uws') throw new ConfigError(`HTTP_SERVER=uws: ${uws.reason}; set HTTP_SERVER=node (or auto)`);
  return node(uws.reason);
}
