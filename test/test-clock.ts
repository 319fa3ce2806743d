// A clock a test moves (src/clock.ts): the system's time plus what the test has advanced it
// by, with timers that fire when either reaches them. Given to the service (ServiceOptions),
// it makes a link lapse, a token expire, a poll run or the daily build fall due at once, where
// a test would otherwise wait out the time.

import { systemClock, type Clock, type Timer } from '../src/clock.js';

interface Pending {
  due: number;
  fn: () => void;
  real: Timer | null;
}

export class TestClock implements Clock {
  private shift = 0;
  private readonly pending = new Set<Pending>();

  /** manual: timers fire only when the test advances the clock to them, never on their own. */
  constructor(private readonly manual = false) {}

  now = (): number => systemClock.now() + this.shift;

  after(ms: number, fn: () => void): Timer {
    // The system's timer as well, unless manual: what the test does not move still happens.
    const p: Pending = { due: this.now() + ms, fn, real: this.manual ? null : systemClock.after(ms, () => this.fire(p)) };
    this.pending.add(p);
    return { cancel: () => this.drop(p) };
  }

  /** Moves the time on by ms, and runs every timer that comes due meanwhile, earliest first. */
  advance(ms: number): void {
    this.shift += ms;
    const now = this.now();
    for (const p of [...this.pending].sort((a, b) => a.due - b.due)) if (p.due <= now) this.fire(p);
  }

  /** How far away each timer set is (ms), nearest first. */
  timers(): number[] {
    const now = this.now();
    return [...this.pending].map((p) => p.due - now).sort((a, b) => a - b);
  }

  private fire(p: Pending): void {
    if (!this.pending.has(p)) return;
    this.drop(p);
    p.fn();
  }

  private drop(p: Pending): void {
    p.real?.cancel();
    this.pending.delete(p);
  }
}

/**
 * Why a test that moves the server's clock is skipped, or false: a clock given to the service
 * reaches the front end on the main thread only, and test/threads.test.ts runs the suites
 * again on two front-end threads (which keep the system's clock).
 */
export function clockSkip(): string | false {
  return (process.env.FRONTEND_THREADS ?? '1') === '1' ? false : "a test's clock reaches the main thread's front end only";
}

/** A clock stopped at `ms`, whose timers never fire: for a component read at one instant. */
export function stoppedAt(ms: number): Clock {
  return { now: () => ms, after: () => ({ cancel() {} }) };
}
