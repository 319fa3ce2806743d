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
