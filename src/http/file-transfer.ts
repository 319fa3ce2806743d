// Answering with a file: ETag and If-None-Match, one Range, HEAD, and streaming with
// backpressure through a bounded set of read buffers. The database downloads (api/public/databases.ts)
// and geoipupdate's tar answers (api/public/geoipupdate.ts) both send files through here.

import fs from 'node:fs';
import type { HttpResponse } from './server/types.js';
import { RC, type RcError } from '../wire/errors.js';
import { sendError, sendRc, type Pending } from './reply.js';
import type { Metrics } from './metrics.js';
import type { RouteTable } from './routes.js';

const FILE_CHUNK = 256 * 1024;

/** Parses a single-range `Range: bytes=…` header against size: the range, 'unsatisfiable', or null for none. */
export function parseRange(header: string, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  let start: number;
  let end: number;
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0) return 'unsatisfiable';
    start = Math.max(0, size - n);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (m[2] !== '' && Number(m[2]) < start) return null;
  }
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}

/**
 * The read buffers of all file transfers: at most MAX_FILE_BUFFERS exist, so however many
 * transfers run, their chunks in memory are bounded (8 MiB); a transfer waits its turn for a
 * buffer (FIFO) and holds it only while one chunk is read and handed to uWS.
 */
const MAX_FILE_BUFFERS = 32;
class FileBuffers {
  private readonly free: Buffer[] = [];
  private readonly waiting: ((b: Buffer) => void)[] = [];
  private made = 0;
  /** Buffers held by transfers now (a gauge for tests). */
  held = 0;
  /** Transfers streaming now (graceful shutdown waits for them). */
  transfers = 0;

  take(use: (b: Buffer) => void): void {
    const b = this.free.pop() ?? (this.made < MAX_FILE_BUFFERS ? (this.made++, Buffer.allocUnsafeSlow(FILE_CHUNK)) : null);
    if (b === null) return void this.waiting.push(use);
    this.held++;
    use(b);
  }

  give(b: Buffer): void {
    this.held--;
    const next = this.waiting.shift();
    if (next) {
      this.held++;
      next(b);
    } else this.free.push(b);
  }
}
export const fileTransfers = new FileBuffers();

/** A file to answer with: where it is, the name a client saves it as, headers beyond the usual. */
export interface FileAnswer {
  file: string;
  name: string;
  headers: readonly (readonly [string, string])[];
  /** Bytes sent before and after the file's (a tar header and trailer around a gzip member). */
  around?: { before: Buffer; after: Buffer };
}

/**
 * Reads `n` bytes at `pos` of before + file + after into `buf`; the callback gets how many
 * were read (fewer, or an error: the file changed under the transfer).
 */
function readAround(
  fd: number,
  fileSize: number,
  around: { before: Buffer; after: Buffer },
  buf: Buffer,
  n: number,
  pos: number,
  done: (err: Error | null, got: number) => void,
): void {
  const { before, after } = around;
  let filled = 0;
  if (pos < before.length) filled = before.copy(buf, 0, pos, Math.min(before.length, pos + n));
  const finish = (): void => {
    const at = pos + filled - before.length - fileSize;
    if (filled < n && at >= 0) filled += after.copy(buf, filled, at, Math.min(after.length, at + n - filled));
    done(null, filled);
  };
  const inFile = pos + filled - before.length;
  const want = Math.min(n - filled, fileSize - inFile);
  if (want <= 0) return finish();
  fs.read(fd, buf, filled, want, inFile, (err, got) => {
    if (err || got !== want) return done(err ?? new Error('short read'), filled + got);
    filled += got;
    finish();
  });
}

/**
 * Answers with a file: ETag (of its size, time and inode) and If-None-Match, one Range,
 * HEAD. Streams with backpressure
 * (tryEnd, onWritable) and reads off the event loop; a transfer holds one of the shared read
 * buffers only while a chunk is read and handed to the server, so a stalled reader costs an
 * open file and its socket's kernel buffers, and all transfers together hold at most
 * MAX_FILE_BUFFERS chunks. `range` and `ifNoneMatch` are the request's headers.
 */
export function sendFile(res: HttpResponse, range: string, ifNoneMatch: string, head: boolean, answer: FileAnswer, metrics: Metrics, routes: RouteTable): void {
  const { file, name } = answer;
  const refuse = (e: RcError, extra?: [string, string]): void => sendError(res, e, metrics, { head, headers: extra ? [extra] : undefined });
  let fd: number;
  let size: number;
  let etag: string;
  try {
    fd = fs.openSync(file, 'r');
    const st = fs.fstatSync(fd);
    const extra = answer.around ? answer.around.before.length + answer.around.after.length : 0;
    size = st.size + extra;
    etag = `"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}-${st.ino.toString(16)}${extra ? `-${extra.toString(16)}` : ''}"`;
  } catch {
    return refuse(RC.FORBIDDEN);
  }
  const common = (r: HttpResponse): void => {
    r.writeHeader('ETag', etag).writeHeader('Accept-Ranges', 'bytes');
    r.writeHeader('Content-Type', name.endsWith('.gz') ? 'application/gzip' : 'application/octet-stream');
    r.writeHeader('Content-Disposition', `attachment; filename="${name.replace(/[^A-Za-z0-9._-]/g, '_')}"`);
    for (const [n, v] of answer.headers) r.writeHeader(n, v);
  };
  if (ifNoneMatch !== '' && ifNoneMatch.split(',').some((t) => t.trim() === etag || t.trim() === '*')) {
    fs.closeSync(fd);
    metrics.count(304);
    res.writeStatus('304 Not Modified');
    common(res);
    return void res.endWithoutBody();
  }
  const r = range === '' ? null : parseRange(range, size);
  if (r === 'unsatisfiable') {
    fs.closeSync(fd);
    return sendRc(res, RC.RANGE_NOT_SATISFIABLE, `the Range asks for bytes past the end of the file, which holds ${size}: ask from 0 to ${size - 1}`, metrics, {
      head,
      headers: [['Content-Range', `bytes */${size}`]],
    });
  }
  const start = r ? r.start : 0;
  const end = r ? r.end : size - 1;
  const total = end - start + 1;
  const status = r ? '206 Partial Content' : '200 OK';
  metrics.count(r ? 206 : 200);
  if (head || total === 0) {
    fs.closeSync(fd);
    res.writeStatus(status);
    common(res);
    if (r) res.writeHeader('Content-Range', `bytes ${start}-${end}/${size}`);
    // endWithoutBody(length) fails in this uWS build; the header written by hand works.
    if (head) res.writeHeader('Content-Length', String(total));
    return void (head ? res.endWithoutBody() : res.end());
  }
  if (res.endWithFile !== undefined && !answer.around) {
    // The server sends the file itself (Bun.serve: from the kernel, with its Content-Length).
    fs.closeSync(fd);
    res.writeStatus(status);
    common(res);
    if (r) res.writeHeader('Content-Range', `bytes ${start}-${end}/${size}`);
    return void res.endWithFile(file, start, total);
  }

  const p: Pending = { aborted: false };
  let closed = false;
  let reading = false;
  fileTransfers.transfers++;
  // A client gone while its transfer waits for a writable socket: nothing else would close it.
  res.onAborted(() => {
    p.aborted = true;
    close();
  });
  // Never while a read is in flight: the descriptor's number could be reused under it.
  const close = (): void => {
    if (closed) return;
    if (!reading) fs.close(fd, () => {});
    closed = true;
    fileTransfers.transfers--;
  };
  /** Body bytes uWS has taken so far. */
  let sent = 0;
  let first = true;
  const pump = routes.later(res, RC.INTERNAL, (): void => {
    if (p.aborted) return close();
    if (reading || closed) return;
    reading = true;
    fileTransfers.take(
      routes.later(res, RC.INTERNAL, (buffer: Buffer) => {
        if (p.aborted || closed) {
          reading = false;
          fileTransfers.give(buffer);
          return close();
        }
        const n = Math.min(FILE_CHUNK, total - sent);
        const read = (cb: (err: Error | null, got: number) => void): void =>
          answer.around
            ? readAround(fd, size - answer.around.before.length - answer.around.after.length, answer.around, buffer, n, start + sent, cb)
            : fs.read(fd, buffer, 0, n, start + sent, cb);
        read(
          routes.later(res, RC.INTERNAL, (err: Error | null, got: number) => {
            reading = false;
            if (closed) {
              fileTransfers.give(buffer);
              return void fs.close(fd, () => {});
            }
            if (p.aborted || err || got !== n) {
              fileTransfers.give(buffer);
              close();
              if (!p.aborted) res.close(); // the file changed or failed under us: end the transfer visibly
              return;
            }
            const before = sent;
            let result: [boolean, boolean] = [false, false];
            res.cork(() => {
              if (first) {
                res.writeStatus(status);
                common(res);
                if (r) res.writeHeader('Content-Range', `bytes ${start}-${end}/${size}`);
                first = false;
              }
              result = res.tryEnd(buffer.subarray(0, n), total);
            });
            const [written, done] = result;
            sent = done ? total : written ? before + n : res.getWriteOffset();
            fileTransfers.give(buffer); // uWS copied or sent what it took; the rest is read again later
            if (done) return close();
            if (written) return void setImmediate(pump);
            res.onWritable(() => {
              pump();
              return true;
            });
          }),
        );
      }),
    );
  });
  pump();
}
