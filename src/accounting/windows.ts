// Usage windows in UTC: the calendar month (plan allowance) and the day (keyless cap).
// Boundaries are cached and recomputed only when crossed, so a request pays one compare.

export interface Window {
  /** Counter suffix: YYYY-MM or YYYY-MM-DD. */
  readonly id: string;
  readonly startMs: number;
  readonly endMs: number;
}

function month(nowMs: number): Window {
  const d = new Date(nowMs);
  const startMs = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const endMs = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return { id: new Date(startMs).toISOString().slice(0, 7), startMs, endMs };
}

function day(nowMs: number): Window {
  const startMs = Math.floor(nowMs / 86_400_000) * 86_400_000;
  return { id: new Date(startMs).toISOString().slice(0, 10), startMs, endMs: startMs + 86_400_000 };
}

export class WindowClock {
  private m: Window = month(Date.now());
  private d: Window = day(Date.now());

  month(nowMs: number): Window {
    if (nowMs >= this.m.endMs || nowMs < this.m.startMs) this.m = month(nowMs);
    return this.m;
  }

  day(nowMs: number): Window {
    if (nowMs >= this.d.endMs || nowMs < this.d.startMs) this.d = day(nowMs);
    return this.d;
  }
}

export const orgCounter = (orgId: string, w: Window): string => `m:${w.id}:${orgId}`;
export const sourceCounter = (source: string, w: Window): string => `d:${w.id}:${source}`;
export const keyBucket = (keyId: string): string => `r:k:${keyId}`;
export const sourceBucket = (source: string): string => `r:a:${source}`;
/** An organisation's key-list pages (the public key list's rate). */
export const keyListBucket = (orgId: string): string => `r:l:${orgId}`;
