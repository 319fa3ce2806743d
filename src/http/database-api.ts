// The licensed database endpoints (interface.md §2.4–§2.7, DESIGN.md §6) and the /files/
// route of the local store. Every answer but a download's 302 and a file is {"rc": …} or
// the document; every download attempt by an organisation is recorded in its history.

import crypto from 'node:crypto';
import fs from 'node:fs';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { statusLine } from '../api/errors.js';
import type { Caller } from '../accounts/auth.js';
import type { ControlDb } from '../accounts/control-db.js';
import type { Catalogue } from '../catalogue/catalogue.js';
import { getLicence, inTerm, standingOf } from '../catalogue/licences.js';
import { latestPublication, readExportsManifest } from '../catalogue/publish.js';
import type { Logger } from '../log.js';
import { FILES_PREFIX, type LocalStore } from '../store/local-store.js';
import type { ObjectStore } from '../store/object-store.js';
import type { RequestClient } from './client.js';
import { writeJsonType } from './json-head.js';
import type { RouteTable } from './routes.js';
import { Gate } from './gate.js';
import type { Metrics } from './metrics.js';

/** Lifetime of a download link (DESIGN.md §6). */
export const LINK_TTL_MS = 300_000;
const FILE_CHUNK = 256 * 1024;

type Outcome = 'ok' | 'bad_format' | 'no_license' | 'license_expired' | 'not_found' | 'not_published';

const RC_STATUS: Record<string, number> = {
  OK: 200,
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  FORMAT_NOT_BUILT: 400,
  NO_LICENSE: 403,
  LICENSE_EXPIRED: 403,
  NOT_PUBLISHED: 503,
  INTERNAL: 500,
};

interface Ask {
  res: HttpResponse;
  caller: Caller;
  query: URLSearchParams;
  clientIp: string;
  userAgent: string;
  host: string;
  ifNoneMatch: string;
  aborted: boolean;
}

export class DatabaseApi {
  private client!: RequestClient;

  constructor(
    private readonly db: ControlDb,
    private readonly catalogue: Catalogue,
    private readonly store: ObjectStore,
    private readonly files: LocalStore | null,
    private readonly gate: Gate,
    private readonly dataDir: string,
    private readonly log: Logger,
  ) {}

  register(routes: RouteTable, metrics: Metrics, client: RequestClient): void {
    this.client = client;
    const route = (path: string, handler: (a: Ask) => void | Promise<void>): void => {
      routes.get(path, (res, req) => this.handle(res, req, metrics, handler));
    };
    route('/api/v1/database/list', (a) => this.list(a, metrics));
    route('/api/v1/database/download', (a) => this.download(a, metrics));
    route('/api/v1/database/metadata', (a) => this.metadata(a, metrics));
    route('/api/v1/database/checksum', (a) => this.checksum(a, metrics));
    route('/api/v1/database/downloads', (a) => this.history(a, metrics));
    if (this.files) {
      const files = this.files;
      routes.get(`${FILES_PREFIX}*`, (res, req) => serveFile(files, res, req, false, metrics));
      routes.head(`${FILES_PREFIX}*`, (res, req) => serveFile(files, res, req, true, metrics));
    }
  }

  /** Reads what the handler needs from req (valid only now), checks the key, runs it. */
  private handle(res: HttpResponse, req: HttpRequest, metrics: Metrics, handler: (a: Ask) => void | Promise<void>): void {
    const client = this.client.of(res, req);
    const a: Ask = {
      res,
      caller: null as unknown as Caller,
      query: new URLSearchParams(req.getQuery() ?? ''),
      clientIp: client.text(),
      userAgent: req.getHeader('user-agent'),
      host: req.getHeader('host'),
      ifNoneMatch: req.getHeader('if-none-match'),
      aborted: false,
    };
    res.onAborted(() => {
      a.aborted = true;
    });
    const c = this.gate.caller(Gate.keyOf(req), client, Date.now());
    if (c !== null && !('key' in c) && c.status === 403) return rc(a, 'FORBIDDEN', metrics);
    if (c === null || !('key' in c) || !c.key.scopes.includes('db.download')) return rc(a, 'UNAUTHORIZED', metrics);
    a.caller = c;
    Promise.resolve()
      .then(() => handler(a))
      .catch((e: unknown) => {
        this.log.error('database handler failed', { reason: e instanceof Error ? e.message : String(e) });
        rc(a, 'INTERNAL', metrics);
      });
  }

  private record(a: Ask, datasetId: string, format: string, sample: boolean, outcome: Outcome, status: number, bytes: number): void {
    this.db
      .prepare(
        `INSERT INTO downloads (org_id, dataset_id, format, sample, outcome, bytes, http_status, apikey_id, client_ip, user_agent, created)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(a.caller.org.id, datasetId, format, sample ? 1 : 0, outcome, bytes, status, a.caller.key.id, a.clientIp, a.userAgent, new Date().toISOString());
  }

  private list(a: Ask, metrics: Metrics): void {
    const now = Date.now();
    const databases = this.catalogue.bases.map((b) => {
      const l = getLicence(this.db, a.caller.org.id, b.base);
      return {
        base: b.base,
        name: b.name,
        summary: b.summary,
        license_type: l?.licenseType ?? null,
        starts: l?.starts ?? null,
        expires: l?.expires ?? null,
        renews_at: l?.renewsAt ?? null,
        notice_due_at: l?.noticeDueAt ?? null,
        in_term: inTerm(l, now),
        standing: standingOf(l, now),
        versions: b.versions.map((v) => ({
          id: v.id,
          version: v.version,
          summary: v.summary,
          formats: v.formats.flatMap((f) => {
            const p = latestPublication(this.db, v.id, f, false);
            return p ? [{ format: f, bytes: p.bytes }] : [];
          }),
          sample_formats: v.formats.filter((f) => latestPublication(this.db, v.id, f, true) !== null),
        })),
      };
    });
    json(a, 200, { databases }, metrics);
  }

  /**
   * The checks download, metadata and checksum share, in order: 404 unknown database,
   * 400 format not built, 403 no licence / term ended (samples need none), 503 today's
   * copy not published. Returns the publication, or answers and returns null.
   */
  private resolve(a: Ask, metrics: Metrics, needFormat: boolean, record: boolean) {
    const id = a.query.get('id') ?? '';
    const format = a.query.get('format') ?? '';
    const sample = a.query.get('sample') === 'true';
    const refuse = (code: string, outcome: Outcome): null => {
      if (record) this.record(a, id, format, sample, outcome, RC_STATUS[code], 0);
      rc(a, code, metrics);
      return null;
    };
    if (id === '' || (needFormat && format === '')) return rc(a, 'BAD_REQUEST', metrics), null;
    const entry = this.catalogue.byId.get(id);
    if (!entry) return refuse('NOT_FOUND', 'not_found');
    const formats = needFormat ? [format] : entry.version.formats;
    if (needFormat && !entry.version.formats.includes(format as never)) return refuse('FORMAT_NOT_BUILT', 'bad_format');
    if (!sample) {
      const l = getLicence(this.db, a.caller.org.id, entry.base.base);
      const standing = standingOf(l, Date.now());
      if (standing === 'unlicensed') return refuse('NO_LICENSE', 'no_license');
      if (standing === 'expired') return refuse('LICENSE_EXPIRED', 'license_expired');
    }
    const pubs = formats.map((f) => latestPublication(this.db, id, f, sample));
    const today = new Date().toISOString().slice(0, 10);
    if (pubs.some((p) => p === null)) {
      // Never published in this format at all: not built, unless nothing is published yet.
      if (needFormat && latestPublication(this.db, id, entry.version.formats[0], sample) !== null) return refuse('FORMAT_NOT_BUILT', 'bad_format');
      return refuse('NOT_PUBLISHED', 'not_published');
    }
    if (entry.base.updateFreq === 'daily' && pubs.some((p) => p!.day < today)) return refuse('NOT_PUBLISHED', 'not_published');
    return { id, format, sample, entry, pubs: pubs as NonNullable<(typeof pubs)[number]>[] };
  }

  private async download(a: Ask, metrics: Metrics): Promise<void> {
    const r = this.resolve(a, metrics, true, true);
    if (!r) return;
    const p = r.pubs[0];
    const name = p.key.split('/').pop()!;
    const url = await this.store.signedUrl(p.key, Date.now() + LINK_TTL_MS, name, `http://${a.host || 'localhost'}`);
    this.record(a, r.id, r.format, r.sample, 'ok', 302, p.bytes);
    if (a.aborted) return;
    metrics.count(302);
    a.res.cork(() => a.res.writeStatus('302 Found').writeHeader('Location', url).writeHeader('Cache-Control', 'no-store').end());
  }

  private metadata(a: Ask, metrics: Metrics): void {
    const r = this.resolve(a, metrics, false, false);
    if (!r) return;
    const m = readExportsManifest(this.dataDir, r.pubs[0].buildId).databases[r.id];
    const size: Record<string, number> = {};
    const sampleSize: Record<string, number> = {};
    for (const f of r.entry.version.formats) {
      size[f] = latestPublication(this.db, r.id, f, false)?.bytes ?? 0;
      sampleSize[f] = latestPublication(this.db, r.id, f, true)?.bytes ?? 0;
    }
    const doc = {
      id: r.id,
      update_freq: r.entry.base.updateFreq,
      updated: m.updated,
      entries: m.entries,
      schema: Object.fromEntries(r.entry.version.formats.map((f) => [f, m.schema[f] ?? []])),
      sample: Object.fromEntries(r.entry.version.formats.map((f) => [f, m.sample[f] ?? []])),
      size,
      sample_size: sampleSize,
      sample_entries: m.sample_entries,
    };
    cached(a, doc, metrics);
  }

  private checksum(a: Ask, metrics: Metrics): void {
    const r = this.resolve(a, metrics, true, false);
    if (!r) return;
    cached(a, { id: r.id, format: r.format, checksums: r.pubs[0].checksums }, metrics);
  }

  private history(a: Ask, metrics: Metrics): void {
    const raw = a.query.get('limit');
    if (raw !== null && !/^[1-9]\d{0,8}$/.test(raw)) return rc(a, 'BAD_REQUEST', metrics);
    const limit = Math.min(200, raw === null ? 50 : Number(raw));
    const rows = this.db
      .prepare('SELECT * FROM downloads WHERE org_id = ? ORDER BY id DESC LIMIT ?')
      .all(a.caller.org.id, limit) as Record<string, string | number>[];
    const downloads = rows.map((d) => ({
      dataset_id: d.dataset_id,
      format: d.format,
      outcome: d.outcome,
      sample: d.sample === 1,
      bytes: d.bytes,
      http_status: d.http_status,
      apikey_id: d.apikey_id,
      client_ip: d.client_ip,
      user_agent: d.user_agent,
      created: d.created,
    }));
    json(a, 200, { downloads }, metrics);
  }
}

function json(a: Ask, status: number, body: unknown, metrics: Metrics, etag?: string): void {
  if (a.aborted) return;
  metrics.count(status);
  a.res.cork(() => {
    writeJsonType(a.res.writeStatus(statusLine(status)));
    if (etag) a.res.writeHeader('ETag', etag);
    a.res.end(JSON.stringify(body));
  });
}

function rc(a: Ask, code: string, metrics: Metrics): void {
  json(a, RC_STATUS[code], { rc: code }, metrics);
}

/** A document with a strong ETag of its bytes; If-None-Match with it answers 304. */
function cached(a: Ask, doc: unknown, metrics: Metrics): void {
  const text = JSON.stringify(doc);
  const etag = `"${crypto.createHash('sha256').update(text).digest('base64url').slice(0, 27)}"`;
  if (a.ifNoneMatch.split(',').some((t) => t.trim() === etag || t.trim() === '*')) {
    if (a.aborted) return;
    metrics.count(304);
    a.res.cork(() => a.res.writeStatus('304 Not Modified').writeHeader('ETag', etag).endWithoutBody());
    return;
  }
  json(a, 200, doc, metrics, etag);
}

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
 * Serves a store file: the link is checked once, now; a transfer that has started runs to
 * its end even when the link lapses meanwhile. Streams with backpressure (tryEnd, onWritable),
 * one chunk in memory at a time.
 */
function serveFile(store: LocalStore, res: HttpResponse, req: HttpRequest, head: boolean, metrics: Metrics): void {
  const url = req.getUrl();
  const key = decodeURIComponent(url.slice(FILES_PREFIX.length));
  const range = req.getHeader('range');
  const ifNoneMatch = req.getHeader('if-none-match');
  const ok = store.verify(key, new URLSearchParams(req.getQuery() ?? ''), Date.now());
  const refuse = (status: number, extra?: [string, string]): void => {
    metrics.count(status);
    writeJsonType(res.writeStatus(statusLine(status)));
    if (extra) res.writeHeader(extra[0], extra[1]);
    res.end(JSON.stringify({ rc: status === 416 ? 'BAD_REQUEST' : 'FORBIDDEN' }));
  };
  // Unknown, tampered and expired links look the same.
  if (!ok) return refuse(403);
  let fd: number;
  let size: number;
  let etag: string;
  try {
    fd = fs.openSync(ok.file, 'r');
    const st = fs.fstatSync(fd);
    size = st.size;
    etag = `"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}-${st.ino.toString(16)}"`;
  } catch {
    return refuse(403);
  }
  const common = (r: HttpResponse): void => {
    r.writeHeader('ETag', etag).writeHeader('Accept-Ranges', 'bytes');
    r.writeHeader('Content-Type', ok.name.endsWith('.gz') ? 'application/gzip' : 'application/octet-stream');
    r.writeHeader('Content-Disposition', `attachment; filename="${ok.name.replace(/[^A-Za-z0-9._-]/g, '_')}"`);
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
    return refuse(416, ['Content-Range', `bytes */${size}`]);
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

  let aborted = false;
  let closed = false;
  const close = (): void => {
    if (!closed) fs.closeSync(fd);
    closed = true;
  };
  res.onAborted(() => {
    aborted = true;
    close();
  });
  let position = start;
  let first = true;
  // One buffer per transfer: uWS has taken a chunk's bytes once tryEnd accepts them, so the
  // buffer is refilled only after that, and memory stays flat however large the file.
  const buffer = Buffer.allocUnsafeSlow(Math.min(FILE_CHUNK, total));
  const pump = (): void => {
    while (!aborted) {
      const n = Math.min(FILE_CHUNK, end + 1 - position);
      const chunk = buffer.subarray(0, n);
      fs.readSync(fd, chunk, 0, n, position);
      position += n;
      const lastOffset = res.getWriteOffset();
      let result: [boolean, boolean] = [false, false];
      res.cork(() => {
        if (first) {
          res.writeStatus(status);
          common(res);
          if (r) res.writeHeader('Content-Range', `bytes ${start}-${end}/${size}`);
          first = false;
        }
        result = res.tryEnd(chunk, total);
      });
      const [written, done] = result;
      if (done) return close();
      if (!written) {
        res.onWritable((offset) => {
          const [again, finished] = res.tryEnd(chunk.subarray(offset - lastOffset), total);
          if (finished) close();
          else if (again) setImmediate(pump);
          return again;
        });
        return;
      }
    }
  };
  pump();
}

