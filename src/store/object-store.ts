// Where published database files live. Two implementations behind one interface: a local
// directory served by ipsift itself under /files/… (default), and S3.

export interface ObjectStore {
  /** Stores the local file under key (replacing any object there). */
  put(key: string, file: string): Promise<void>;
  /** A URL that lets a client start a GET of the object until `expiresAt` (ms since epoch). */
  signedUrl(key: string, expiresAt: number, downloadName: string, origin: string): Promise<string>;
}
