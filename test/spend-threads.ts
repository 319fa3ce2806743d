// Threads that spend one counter through their own store handles and Meters, as server threads
// do (test/fixtures/spend-thread.ts), with what they have been granted so far in view: a test
// races them against HTTP clients or each other and stops once the limit is all granted.

import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { AccountingConfig } from '../src/config.js';
import { PROJECT_ROOT } from './helpers.js';

export interface SpendSettings {
  accounting?: AccountingConfig;
  dataDir: string;
  counter: string;
  limit: number;
  /** What a thread's lease may hold past a request (the Meter's `extra`). */
  extra: number;
  /**
   * The units one thread takes at most (none: until stopped). Having them, it closes its Meter,
   * giving back what its lease held, and waits to be stopped: the rest is the HTTP clients'
   * however slowly a loaded machine serves them.
   */
  most?: number;
}

type Said = { ready: true } | { granted: number } | { final: number };

export class SpendThreads {
  private readonly workers: Worker[];
  private readonly so = new Map<Worker, number>();
  /** What each has said it was granted in all, once it has closed. */
  private readonly finals = new Map<Worker, Promise<number>>();

  private constructor(count: number, settings: SpendSettings) {
    this.workers = Array.from({ length: count }, () => new Worker(path.join(PROJECT_ROOT, 'dist/test/fixtures/spend-thread.js'), { workerData: settings }));
    for (const w of this.workers) {
      this.so.set(w, 0);
      w.on('message', (m: Said) => {
        if ('granted' in m) this.so.set(w, m.granted);
      });
      this.finals.set(w, new Promise<number>((r) => w.on('message', (m: Said) => 'final' in m && r(m.final))));
    }
  }

  /** `count` threads, resolved once each has its store open (then they spend at once). */
  static async start(count: number, settings: SpendSettings): Promise<SpendThreads> {
    const t = new SpendThreads(count, settings);
    await Promise.all(t.workers.map((w) => new Promise<void>((r) => w.on('message', (m: Said) => 'ready' in m && r()))));
    return t;
  }

  /** The units granted to all of them so far. */
  granted(): number {
    let sum = 0;
    for (const g of this.so.values()) sum += g;
    return sum;
  }

  /** Stops them (those that took their most have stopped already); what each was granted in all. */
  stop(): Promise<number[]> {
    for (const w of this.workers) w.postMessage('stop');
    return Promise.all(this.workers.map((w) => this.finals.get(w)!));
  }

  async terminate(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}
