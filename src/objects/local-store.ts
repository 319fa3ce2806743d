// The local object store: files under DATA_DIR/store/objects, handed out as signed,
// time-limited links to ipsift's own /files/… route. A link is an HMAC-SHA256 over the key,
// the expiry and the download name, with a secret kept in DATA_DIR/store/link-secret (0600).

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ObjectStore } from './object-store.js';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { makeDirectory } from '../files.js';
import { storeLinkSecretFile, storeObjectsDir } from '../data-dir.js';

export const FILES_PREFIX = '/files/';

/** Keys are relative paths of [A-Za-z0-9._-] segments: nothing can climb out of the store. */
export function isSafeKey(key: string): boolean {
  return key.length > 0 && key.length <= 512 && key.split('/').every((seg) => /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(seg) && seg !== '..' && seg !== '.');
}

/**
 * The gzip form of a published MMDB, served to a client that asks for it (`Accept-Encoding`):
 * A 60 MB MMDB of the real build gzips to 23 MB. Compressed once, by the build's export
 * threads (exports/mmdb-gzip.ts) or else at publish, so a download costs no compression and
 * its Range requests stay exact (they count the gzip bytes).
 */
export const gzippedPath = (file: string): string => `${file}.gz`;

/**
 * zlib level 1: on the 1 M-range bench's 180 MiB MMDB it took 2.6 s for 71.9 MiB where the
 * default level 6 took 7.4 s for 67.2 MiB: 7 % more bytes on the wire for a third of the
 * CPU, which every daily build pays for every MMDB.
 */
const GZIP_LEVEL = 1;
/**
 * A 1 KiB window, not zlib's 32 KiB: an MMDB's repeats are near each other (a tree node's
 * neighbours, a record's fields), and level 1 with the full window spends its time on far
 * matches it mostly rejects. Measured with zlib.gzipSync on one core: the bench's 189 MB
 * extended MMDB 1.70 s → 1.43 s and 75.4 → 69.5 MB; the real build's 6.6 MB one 67 → 52 ms
 * and 3.10 → 2.54 MB. Any gzip reader reads a smaller window.
 */
const GZIP_WINDOW_BITS = 10;
/** How every gzip form is compressed (exports/mmdb-gzip.ts writes twins' forms with the same). */
export const GZIP_OPTIONS: zlib.ZlibOptions = { level: GZIP_LEVEL, windowBits: GZIP_WINDOW_BITS };

/** Where to write `target` before renaming it into place: threads of one process may write the same file at once, each under a name of its own. */
export function temporaryFor(target: string): string {
  return `${target}.${process.pid}.${crypto.randomBytes(6).toString('hex')}.tmp`;
}

export async function writeGzipped(file: string, target: string): Promise<void> {
  const tmp = temporaryFor(target);
  try {
    await pipeline(fs.createReadStream(file, { highWaterMark: 1 << 20 }), zlib.createGzip(GZIP_OPTIONS), fs.createWriteStream(tmp));
    fs.renameSync(tmp, target);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
}

/** A hard link of file at target (a copy where links cannot be made), replacing it whole. */
function linkInto(file: string, target: string): void {
  const tmp = temporaryFor(target);
  try {
    fs.linkSync(file, tmp); // builds are immutable: a hard link costs no copy
  } catch {
    fs.copyFileSync(file, tmp);
  }
  fs.renameSync(tmp, target);
}

export class LocalStore implements ObjectStore {
  readonly root: string;
  private readonly secret: Buffer;

  constructor(dataDir: string) {
    this.root = storeObjectsDir(dataDir);
    makeDirectory(this.root);
    const secretFile = storeLinkSecretFile(dataDir);
    try {
      this.secret = fs.readFileSync(secretFile);
    } catch {
      const fresh = crypto.randomBytes(32);
      try {
        fs.writeFileSync(secretFile, fresh, { mode: 0o600, flag: 'wx' });
      } catch {
        // another process wrote it first: use theirs
      }
      this.secret = fs.readFileSync(secretFile);
    }
  }

  async put(key: string, file: string): Promise<void> {
    if (!isSafeKey(key)) throw new Error(`bad object key ${key}`);
    const target = this.pathOf(key);
    makeDirectory(path.dirname(target));
    // Written before the file itself, so every served MMDB has its compressed form: the one
    // the build's export threads wrote beside it where there is one, else compressed now.
    if (key.endsWith('.mmdb')) {
      if (fs.existsSync(gzippedPath(file))) linkInto(gzippedPath(file), gzippedPath(target));
      else await writeGzipped(file, gzippedPath(target));
    }
    linkInto(file, target);
  }

  async fetch(key: string, file: string): Promise<boolean> {
    if (!isSafeKey(key)) throw new Error(`bad object key ${key}`);
    try {
      await fs.promises.copyFile(this.pathOf(key), file);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT' && !fs.existsSync(this.pathOf(key))) return false;
      throw e;
    }
  }

  async delete(key: string): Promise<void> {
    if (!isSafeKey(key)) throw new Error(`bad object key ${key}`);
    const target = this.pathOf(key);
    for (const file of [target, gzippedPath(target)]) fs.rmSync(file, { force: true });
    // Folders left empty go too (a build's <dataset>/<build>/), up to the store's root.
    for (let dir = path.dirname(target); dir !== this.root && dir.startsWith(this.root); dir = path.dirname(dir)) {
      try {
        fs.rmdirSync(dir);
      } catch {
        break; // not empty
      }
    }
  }

  /** Gzip forms being written on demand (objects published before ipsift wrote them), by key. */
  private readonly gzipping = new Map<string, Promise<string>>();

  /** The gzip form of a published MMDB, written now if an older ipsift published it without one. */
  gzipped(key: string): string | Promise<string> {
    const file = gzippedPath(this.pathOf(key));
    if (fs.existsSync(file)) return file;
    let p = this.gzipping.get(key);
    if (p === undefined) {
      p = writeGzipped(this.pathOf(key), file).then(() => file);
      p.finally(() => this.gzipping.delete(key)).catch(() => {});
      this.gzipping.set(key, p);
    }
    return p;
  }

  pathOf(key: string): string {
    return path.join(this.root, ...key.split('/'));
  }

  private signature(key: string, expiresAt: number, name: string): string {
    return crypto.createHmac('sha256', this.secret).update(`${key}\n${expiresAt}\n${name}`).digest('base64url');
  }

  signedUrl(key: string, expiresAt: number, downloadName: string, origin: string): string {
    const e = Math.floor(expiresAt / 1000);
    const q = new URLSearchParams({ expires: String(e), name: downloadName, sig: this.signature(key, e, downloadName) });
    return `${origin}${FILES_PREFIX}${key}?${q.toString()}`;
  }

  /**
   * The file a /files/ request may start reading, or null when the link is unknown,
   * tampered with or expired (one answer for all three, so nothing is revealed).
   */
  verify(key: string, query: URLSearchParams, nowMs: number): { file: string; name: string } | null {
    if (!isSafeKey(key)) return null;
    const expires = Number(query.get('expires'));
    const name = query.get('name') ?? '';
    const sig = query.get('sig') ?? '';
    if (!Number.isSafeInteger(expires) || expires * 1000 <= nowMs) return null;
    const want = Buffer.from(this.signature(key, expires, name));
    const got = Buffer.from(sig);
    if (got.length !== want.length || !crypto.timingSafeEqual(got, want)) return null;
    const file = this.pathOf(key);
    return fs.existsSync(file) ? { file, name } : null;
  }
}
