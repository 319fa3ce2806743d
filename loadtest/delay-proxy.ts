// A TCP proxy on loopback that holds every chunk for a while in each direction: a network
// between hosts, put between ipsift and a store it calls (Redis, PostgreSQL), by tests and by
// bench:cluster. Order is kept.
// It runs on a thread of its own, so a test thread blocked on a store call (the store's
// start) does not stall the proxy it is calling through.

import net from 'node:net';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

export interface DelayProxy {
  port: number;
  close(): Promise<void>;
}

export async function startDelayProxy(upstreamPort: number, delayMs: number): Promise<DelayProxy> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { upstreamPort, delayMs } });
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return { port, close: () => worker.terminate().then(() => undefined) };
}

function serve(upstreamPort: number, delayMs: number): void {
  // Chunks leave in the order they came, each no sooner than delayMs after it came: one queue
  // and one timer a direction (timers of their own could fire out of order).
  const relay = (from: net.Socket, to: net.Socket): void => {
    const queue: { chunk: Buffer; due: number }[] = [];
    // biome-ignore lint/correctness/noUnusedVariables: read by the ??= below
    let timer: NodeJS.Timeout | null = null;
    let ended = false;
    const flush = (): void => {
      timer = null;
      const now = performance.now();
      while (queue.length > 0 && queue[0].due <= now) if (!to.destroyed) to.write(queue.shift()!.chunk);
      if (queue.length > 0) timer = setTimeout(flush, Math.max(1, queue[0].due - now));
      else if (ended) to.destroy();
    };
    from.on('data', (chunk: Buffer) => {
      queue.push({ chunk, due: performance.now() + delayMs });
      timer ??= setTimeout(flush, delayMs);
    });
    from.once('close', () => {
      ended = true;
      timer ??= setTimeout(flush, 0);
    });
    from.on('error', () => {});
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(upstreamPort, '127.0.0.1');
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    relay(client, upstream);
    relay(upstream, client);
  });
  server.listen(0, '127.0.0.1', () => parentPort!.postMessage((server.address() as net.AddressInfo).port));
}

if (!isMainThread && (workerData as { upstreamPort?: number })?.upstreamPort !== undefined) {
  const { upstreamPort, delayMs } = workerData as { upstreamPort: number; delayMs: number };
  serve(upstreamPort, delayMs);
}
