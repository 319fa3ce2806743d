// What the threads of one process owe the accounting store while it refuses writes (the
// meters' degraded mode, degraded-mode.ts), in memory every thread reads: a counter one thread spent in memory
// is seen by the others at once, so usage and overage limits read the same on every thread.
// Each thread still keeps (and writes back) its own debt; this table is for reading only.
//
// A slot also keeps the highest value of the counter any thread has seen the store answer
// (a latent store's refills): a thread counting in memory then judges the room left against
// the other threads' reservations too, so one process never answers past a limit.
//
// An open-addressed table in a SharedArrayBuffer: a slot is a 64-bit hash of the counter's
// name, the units owed and the counter last seen, changed with Atomics. Slots are cleared once
// nothing is owed anywhere and half of them are in use; a counter that finds no slot near its
// hash is visible to its own thread only.

const SLOTS = 1 << 15;
/**
 * Slots looked at for one counter: a lookup or claim gives up past this many (a table near
 * full, from a flood of keyless sources, must not make each spend walk the whole table).
 */
const MAX_PROBES = 64;
/** Header: [counters owed anywhere now, slots in use]. */
const HEADER_INTS = 2;

/** 32-bit FNV-1a of a string, with a seed. */
function fnv(text: string, seed: number): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** A nonzero signed 64-bit key for a counter name (as a BigInt64Array holds it). */
function keyOf(counter: string): bigint {
  const k = BigInt.asIntN(64, (BigInt(fnv(counter, 0x811c9dc5)) << 32n) | BigInt(fnv(counter, 0x050c5d1f)));
  return k === 0n ? 1n : k;
}

export class OwedTable {
  readonly shared: SharedArrayBuffer;
  private readonly header: Int32Array;
  private readonly keys: BigInt64Array;
  private readonly units: BigInt64Array;
  private readonly seen: BigInt64Array;

  /** A table of its own, or the view of one another thread made (`shared`). */
  constructor(shared?: SharedArrayBuffer) {
    this.shared = shared ?? new SharedArrayBuffer(8 * (1 + 3 * SLOTS));
    this.header = new Int32Array(this.shared, 0, HEADER_INTS);
    this.keys = new BigInt64Array(this.shared, 8, SLOTS);
    this.units = new BigInt64Array(this.shared, 8 + 8 * SLOTS, SLOTS);
    this.seen = new BigInt64Array(this.shared, 8 + 16 * SLOTS, SLOTS);
  }

  /**
   * Whether any thread owes anything now: the hot path's test, so a plain read (Atomics.load
   * is a builtin call of a hundred instructions). An aligned 32-bit read is never torn, and
   * one a moment stale is as good as a moment older; the counts themselves are read with
   * Atomics.
   */
  any(): boolean {
    return this.header[0] > 0;
  }

  /** Units owed on the counter by every thread. */
  get(counter: string): number {
    if (!this.any()) return 0;
    const i = this.slot(counter, false);
    return i < 0 ? 0 : Number(Atomics.load(this.units, i));
  }

  /** Counters some thread answered from memory and has not written yet (0: the store takes writes). */
  owedCounters(): number {
    return Atomics.load(this.header, 0);
  }

  /** Units owed on every counter in the table (a walk of the table: for a scrape, not a request). */
  owedUnits(): number {
    let sum = 0n;
    for (let i = 0; i < SLOTS; i++) if (this.keys[i] !== 0n) sum += Atomics.load(this.units, i);
    return Number(sum);
  }

  /** A thread starts owing on a counter (before its first add). */
  owing(): void {
    Atomics.add(this.header, 0, 1);
  }

  /** A thread has written all it owed on a counter. */
  settled(): void {
    Atomics.sub(this.header, 0, 1);
  }

  /** Adds (or, negative, removes) units owed on the counter; nothing where it finds no slot. */
  add(counter: string, units: number): void {
    const i = this.slot(counter, true);
    if (i >= 0) Atomics.add(this.units, i, BigInt(units));
  }

  /**
   * Raises the counter's value last seen from the store to `spent` (never lowers it). Kept as
   * spent + 1, so that 0 says no thread has seen it (a counter seen at 0 is known).
   */
  sawSpent(counter: string, spent: number): void {
    const i = this.slot(counter, true);
    if (i < 0) return;
    const v = BigInt(spent) + 1n;
    for (let was = Atomics.load(this.seen, i); was < v; ) {
      const now = Atomics.compareExchange(this.seen, i, was, v);
      if (now === was) return;
      was = now;
    }
  }

  /** The highest value of the counter any thread has seen the store answer (0: none). */
  seenSpent(counter: string): number {
    return this.knownSpent(counter) ?? 0;
  }

  /** seenSpent, or null when no thread has seen the store answer for the counter. */
  knownSpent(counter: string): number | null {
    const i = this.slot(counter, false);
    const v = i < 0 ? 0n : Atomics.load(this.seen, i);
    return v === 0n ? null : Number(v) - 1;
  }

  /**
   * Forgets every slot once nothing is owed anywhere and half of them are in use (a sweep's
   * work, after an outage, or as counters seen pile up).
   */
  clearIfSettled(): void {
    if (Atomics.load(this.header, 1) < SLOTS / 2 || this.any()) return;
    for (let i = 0; i < SLOTS; i++) {
      if (Atomics.load(this.keys, i) === 0n) continue;
      Atomics.store(this.units, i, 0n);
      Atomics.store(this.seen, i, 0n);
      Atomics.store(this.keys, i, 0n);
    }
    Atomics.store(this.header, 1, 0);
  }

  /** The counter's slot (claimed when `claim`), or -1: absent, or no room. */
  private slot(counter: string, claim: boolean): number {
    const key = keyOf(counter);
    let i = Number(BigInt.asUintN(64, key) & BigInt(SLOTS - 1));
    for (let probes = 0; probes < MAX_PROBES; probes++, i = (i + 1) & (SLOTS - 1)) {
      const k = Atomics.load(this.keys, i);
      if (k === key) return i;
      if (k !== 0n) continue;
      if (!claim) return -1;
      const was = Atomics.compareExchange(this.keys, i, 0n, key);
      if (was === 0n) {
        Atomics.add(this.header, 1, 1);
        return i;
      }
      if (was === key) return i;
    }
    return -1;
  }
}
