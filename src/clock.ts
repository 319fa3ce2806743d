// The time a component reads and the timers it sets, given to it instead of taken from the
// process. The service runs on the system's clock; a test gives a clock it moves, so a link's
// lapse, a token's expiry, a poll or the daily run happen when the test says, not after a wait.

export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls fn once, ms from now; the timer does not keep the process alive. */
  after(ms: number, fn: () => void): Timer;
}

export const systemClock: Clock = {
  // Date.now read at each call, not taken once: a harness that replaces it (the instruction
  // budget's clock) is obeyed.
  now: () => Date.now(),
  after(ms, fn) {
    const t = setTimeout(fn, ms);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};

/** Calls fn every ms until cancelled: a chain of `after`, so a moved clock moves it too. */
export function every(clock: Clock, ms: number, fn: () => void): Timer {
  let next: Timer;
  let cancelled = false;
  const arm = (): void => {
    next = clock.after(ms, () => {
      if (cancelled) return;
      arm();
      fn();
    });
  };
  arm();
  return {
    cancel: () => {
      cancelled = true;
      next.cancel();
    },
  };
}
