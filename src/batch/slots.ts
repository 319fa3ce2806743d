// Shared memory a batch's outcome is written into (BatchTask.out), reused between batches.

/** Room for the outcome of a typical full batch of max-tier answers (larger ones get a fresh buffer). */
export const OUTPUT_SLOT_BYTES = 1 << 20;

export class OutputSlots {
  private readonly free: SharedArrayBuffer[] = [];
  private count = 0;

  constructor(private readonly max: number) {}

  /** A slot, or null when every one is in use (the outcome then comes back as its own buffer). */
  take(): SharedArrayBuffer | null {
    const free = this.free.pop();
    if (free) return free;
    if (this.count >= this.max) return null;
    this.count++;
    return new SharedArrayBuffer(OUTPUT_SLOT_BYTES);
  }

  /** Gives a slot back once the answer written from it has been sent. */
  release(slot: SharedArrayBuffer | null): void {
    if (slot) this.free.push(slot);
  }
}
