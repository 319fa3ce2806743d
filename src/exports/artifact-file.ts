// An artifact being written: every byte goes to the file and to its checksums, and the
// size is the count of bytes written, so the manifest never depends on a stat of the file.

import fs from 'node:fs';
import { Checksummer, type Checksums } from './checksums.js';

/** Writes all of chunk: writeSync may write less than asked (signals, nearly full disks). */
export function writeFully(fd: number, chunk: Uint8Array): void {
  for (let at = 0; at < chunk.length; ) at += fs.writeSync(fd, chunk, at, chunk.length - at);
}

export class ArtifactFile {
  private readonly fd: number;
  private readonly sums = new Checksummer();
  private bytes = 0;

  constructor(file: string) {
    this.fd = fs.openSync(file, 'w');
  }

  write(chunk: Uint8Array): void {
    writeFully(this.fd, chunk);
    this.sums.update(chunk);
    this.bytes += chunk.length;
  }

  close(): { bytes: number; checksums: Checksums } {
    fs.closeSync(this.fd);
    return { bytes: this.bytes, checksums: this.sums.digest() };
  }
}

/**
 * Files that hold the same bytes but for their ends (an MMDB and its editions: one tree and
 * data section, each its own metadata): the shared bytes are checksummed once, and each
 * file's checksums go on from a copy of that state with its own end.
 */
export class ArtifactTwins {
  private readonly fds: number[];
  private readonly sums = new Checksummer();
  private bytes = 0;

  constructor(files: readonly string[]) {
    this.fds = files.map((f) => fs.openSync(f, 'w'));
  }

  write(chunk: Uint8Array): void {
    for (const fd of this.fds) writeFully(fd, chunk);
    this.sums.update(chunk);
    this.bytes += chunk.length;
  }

  /** Writes each file's own end (ends[k] to files[k]) and closes them all. */
  close(ends: readonly Uint8Array[]): { bytes: number; checksums: Checksums }[] {
    return this.fds.map((fd, k) => {
      const sums = k === this.fds.length - 1 ? this.sums : this.sums.copy();
      writeFully(fd, ends[k]);
      sums.update(ends[k]);
      fs.closeSync(fd);
      return { bytes: this.bytes + ends[k].length, checksums: sums.digest() };
    });
  }

  /** Closes the files after a failure (what was written is left to the caller to remove). */
  abandon(): void {
    for (const fd of this.fds) fs.closeSync(fd);
  }
}
