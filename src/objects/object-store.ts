// Where published database files live. Two implementations behind one interface: a local
// directory served by ipsift itself under /files/… (default), and S3.

export interface ObjectStore {
  /** Stores the local file under key (replacing any object there). */
  put(key: string, file: string): Promise<void>;
  /** Writes the object to the local file (replacing it); false when there is no such object. */
  fetch(key: string, file: string): Promise<boolean>;
  /** Removes the object (and any form of it the store keeps beside it); none there is no error. */
  delete(key: string): Promise<void>;
  /**
   * A URL that lets a client start a GET of the object until `expiresAt` (ms since epoch).
   * Synchronous where signing needs no I/O (the local store): an answer written inside its
   * handler keeps the connection's pipelined requests, which this uWS build drops behind an
   * asynchronous one. `origin` ('' for a relative reference) prefixes links ipsift serves itself.
   */
  signedUrl(key: string, expiresAt: number, downloadName: string, origin: string): string | Promise<string>;
}
