// One `ipsift` command in a worker thread (test/cli-in-thread.ts starts it): the CLI's main()
// with the thread's own environment. What it writes and its exit code are posted back in
// order, so the caller has all of it with the code and need not wait for the thread to wind
// down (a database connection closing, a timer).

import { parentPort, workerData } from 'node:worker_threads';
import { main } from '../src/cli/main.js';

const post =
  (stream: 'stdout' | 'stderr') =>
  (chunk: string | Uint8Array): boolean => {
    parentPort!.postMessage({ [stream]: typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8') });
    return true;
  };
process.stdout.write = post('stdout') as typeof process.stdout.write;
process.stderr.write = post('stderr') as typeof process.stderr.write;
try {
  parentPort!.postMessage({ code: await main(workerData as string[]) });
} catch (e) {
  // What an uncaught error does to a process: its stack on stderr, exit code 1.
  parentPort!.postMessage({ stderr: `${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n` });
  parentPort!.postMessage({ code: 1 });
}
