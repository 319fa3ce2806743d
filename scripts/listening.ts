// A started `ipsift serve` process, followed until it logs that it listens: its ports, and
// what it has written so far (the JSON log on stderr; stdout, where the demo's key line goes).

import type { ChildProcess } from 'node:child_process';

export interface Listening {
  port: number;
  adminPort: number;
  log(): string;
  stdout(): string;
}

export function untilListening(child: ChildProcess): Promise<Listening> {
  let log = '';
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c));
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (c: Buffer) => {
      log += c;
      const m = /"msg":"listening","url":"http:\/\/[^:]+:(\d+)","admin":"http:\/\/[^:]+:(\d+)"/.exec(log);
      if (m) resolve({ port: Number(m[1]), adminPort: Number(m[2]), log: () => log, stdout: () => out });
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${log.slice(-2000)}`)));
  });
}
