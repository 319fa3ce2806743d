// md5, sha1, sha256 and sha512 of an artifact, computed while it is written.

import crypto from 'node:crypto';

export interface Checksums {
  md5: string;
  sha1: string;
  sha256: string;
  sha512: string;
}

const ALGORITHMS = ['md5', 'sha1', 'sha256', 'sha512'] as const;

export class Checksummer {
  private readonly hashes: (readonly [(typeof ALGORITHMS)[number], crypto.Hash])[];

  constructor(from?: Checksummer) {
    this.hashes = from ? from.hashes.map(([a, h]) => [a, h.copy()] as const) : ALGORITHMS.map((a) => [a, crypto.createHash(a)] as const);
  }

  /** A checksummer that has seen what this one has, to go on with other bytes. */
  copy(): Checksummer {
    return new Checksummer(this);
  }

  update(chunk: Uint8Array): void {
    for (const [, h] of this.hashes) h.update(chunk);
  }

  digest(): Checksums {
    return Object.fromEntries(this.hashes.map(([a, h]) => [a, h.digest('hex')])) as unknown as Checksums;
  }
}
