// `ipsift` run in a worker thread of the test process instead of a process of its own: the
// same main() with its own environment and modules, its output and exit code captured, without
// a runtime's start (a third of a second of CPU each). Commands that must be a process (serve,
// signals, a working directory) are spawned by their tests.

import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { PROJECT_ROOT } from './helpers.js';
import { systemClock } from '../src/clock.js';

const THREAD = path.join(PROJECT_ROOT, 'dist/test/cli-thread.js');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

type Said = { stdout: string } | { stderr: string } | { code: number };

/** Runs `ipsift args…` with the environment `env`; a command still running after timeoutMs is stopped and fails. */
export function cliInThread(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 30_000): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(THREAD, { workerData: args, env, stdout: true, stderr: true });
    const run: CliRun = { code: -1, stdout: '', stderr: '' };
    // A bound on a hang (a command that never returns fails its test, not the run), not a wait.
    const timer = systemClock.after(timeoutMs, () => {
      void worker.terminate();
      reject(new Error(`ipsift ${args.join(' ')}: still running after ${timeoutMs} ms`));
    });
    const end = (): void => {
      timer.cancel();
      // All it wrote came before its code: what is left of the thread is not waited for.
      void worker.terminate();
      resolve(run);
    };
    worker.on('message', (m: Said) => {
      if ('stdout' in m) run.stdout += m.stdout;
      else if ('stderr' in m) run.stderr += m.stderr;
      else {
        run.code = m.code;
        end();
      }
    });
    worker.on('error', (e) => {
      run.stderr += `${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`;
      run.code = 1;
      end();
    });
    worker.on('exit', (code) => {
      if (run.code === -1) {
        run.code = code;
        end();
      }
    });
  });
}
