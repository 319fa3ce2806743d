// The licensed database endpoints (interface.md §2.4–§2.7, DESIGN.md §6) and the /files/
// route of the local store. Every answer but a download's 302 and a file is {"rc": …} or
// the document; every download attempt by an organisation is recorded in its history.

import crypto from 'node:crypto';
import fs from 'node:fs';
import type { HttpRequest, HttpResponse } from '../../http/server/types.js';
import { ERRORS, RC, type RcCode, type RcError } from '../../wire/errors.js';
import type { Caller } from '../../control/auth.js';
import type { ControlDb } from '../../control/control-db.js';
import type { Catalogue } from '../../catalogue/catalogue.js';
import { getLicence, inTerm, standingOf } from '../../control/licences.js';
import { readCsvDiffs, readExportsManifest } from '../../pipeline/publish.js';
import { CSV_DIFF_FORMAT, RANGE_DIFF_FORMAT, type Publication, latestPublication } from '../../control/publications.js';
import { DATABASE_REFUSALS } from './database-refusals.js';
import { FILES_PREFIX, gzippedPath, type LocalStore } from '../../objects/local-store.js';
import { acceptsGzip } from '../../http/content-coding.js';
import type { ObjectStore } from '../../objects/object-store.js';
import type { RequestClient } from '../../http/client.js';
import { late, pending, sendError, sendJson, sendRc, type Pending } from '../../http/reply.js';
import { REVALIDATE } from '../../http/json.js';
import { sameEntity } from '../../http/compressing-response.js';
import { sendFile } from '../../http/file-transfer.js';
import type { RouteTable } from '../../http/routes.js';
import { Gate } from '../admission/gate.js';
import type { Metrics } from '../../http/metrics.js';
import { LIMIT_RULE, listLimit } from '../../control/operator.js';
import { downloadHistory, recordDownload } from '../../control/downloads.js';
import type { Edge } from '../admission/edge.js';
import type { Clock } from '../../clock.js';

/** Lifetime of a download link (DESIGN.md §6). */
export const LINK_TTL_MS = 300_000;

export type Outcome = 'ok' | 'bad_request' | 'forbidden' | 'bad_format' | 'no_license' | 'license_expired' | 'not_found' | 'not_published';

/** The history outcome of a refusal before the catalogue checks. */
const EARLY_OUTCOME: Partial<Record<RcCode, Outcome>> = { BAD_REQUEST: 'bad_request', UNAUTHORIZED: 'forbidden', FORBIDDEN: 'forbidden' };

export interface Ask {
  res: HttpResponse;
  caller: Caller;
  query: URLSearchParams;
  clientIp: string;
  userAgent: string;
  /** Where links point: PUBLIC_URL, a trusted proxy's forwarded origin, or '' (relative). */
  origin: string;
  ifNoneMatch: string;
  p: Pending;
}

export class DatabaseApi {
  private client!: RequestClient;
  private metrics!: Metrics;
  private clock!: Clock;

  constructor(
    private readonly db: ControlDb,
    private readonly catalogue: Catalogue,
    private readonly store: ObjectStore,
    private readonly files: LocalStore | null,
    private readonly gate: Gate,
    private readonly dataDir: string,
    private readonly publicUrl = '',
    /** Seconds until the daily build may be there (Retry-After of NOT_PUBLISHED); null: none scheduled. */
    private readonly retryAfterS: () => number | null = () => null,
  ) {}

  register(routes: RouteTable, edge: Edge): void {
    const { metrics } = edge;
    this.client = edge.client;
    this.metrics = metrics;
    this.clock = edge.clock;
    const route = (path: string, handler: (a: Ask) => void | Promise<void>, history = false): void => {
      routes.get(path, (res, req) => this.handle(res, req, handler, history), { internal: RC.INTERNAL, compress: true, family: 'database' });
    };
    route('/api/v1/database/list', (a) => this.list(a));
    route('/api/v1/database/download', (a) => this.download(a), true);
    route('/api/v1/database/metadata', (a) => this.metadata(a));
    route('/api/v1/database/checksum', (a) => this.checksum(a));
    route('/api/v1/database/downloads', (a) => this.history(a));
    if (this.files) {
      const files = this.files;
      routes.get(`${FILES_PREFIX}*`, (res, req) => serveFile(files, res, req, false, metrics, routes), {
        internal: RC.INTERNAL,
        family: 'files',
        head: (res, req) => serveFile(files, res, req, true, metrics, routes),
      });
    }
  }

  /**
   * Reads what the handler needs from req (valid only now), checks the key and its scope,
   * runs the handler. `history`: refusals of a key that names an organisation are recorded.
   */
  private handle(res: HttpResponse, req: HttpRequest, handler: (a: Ask) => void | Promise<void>, history: boolean): void | Promise<void> {
    const client = this.client.of(res, req);
    const a: Ask = {
      res,
      caller: null as unknown as Caller,
      query: new URLSearchParams(req.getQuery() ?? ''),
      clientIp: client.text(),
      userAgent: req.getHeader('user-agent'),
      origin: this.publicUrl || (client.forwardedOrigin() ?? ''),
      ifNoneMatch: req.getHeader('if-none-match'),
      p: pending(res),
    };
    const c = this.gate.key(Gate.keyOf(req), this.clock.now());
    if (c === null || !('key' in c)) return rc(a, RC.UNAUTHORIZED, this.metrics, c === null ? KEY_REFUSALS.missing : c.message);
    a.caller = c;
    const refuse = (e: RcError, message: string): void => {
      if (history)
        this.record(a, a.query.get('id') ?? '', a.query.get('format') ?? '', a.query.get('sample') === 'true', EARLY_OUTCOME[e.code as RcCode]!, e.status, 0);
      rc(a, e, this.metrics, message);
    };
    if (!c.key.scopes.includes('db.download')) return refuse(RC.UNAUTHORIZED, KEY_REFUSALS.noDownloadScope);
    if (!this.gate.fromAllowedSource(c, client)) return refuse(RC.FORBIDDEN, KEY_REFUSALS.source);
    return handler(a);
  }

  record(a: Ask, datasetId: string, format: string, sample: boolean, outcome: Outcome, status: number, bytes: number): void {
    recordDownload(this.db, {
      orgId: a.caller.org.id,
      keyId: a.caller.key.id,
      datasetId,
      format,
      sample,
      outcome,
      httpStatus: status,
      bytes,
      clientIp: a.clientIp,
      userAgent: a.userAgent,
    });
  }

  private list(a: Ask): void {
    const now = this.clock.now();
    const databases = this.catalogue.bases.map((b) => {
      const l = getLicence(this.db, a.caller.org.id, b.base);
      return {
        base: b.base,
        name: b.name,
        summary: b.summary,
        license_type: l?.licenceType ?? null,
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
          diffs: this.diffsOf(v.id),
        })),
      };
    });
    json(a, 200, { databases }, this.metrics);
  }

  /**
   * The diffs published beside a version's newest files: the CSV's, from the file published
   * before it (its SHA-256 as the checksum endpoint gave it) to the current one. None where the
   * newest CSV came without one.
   */
  private diffsOf(id: string): { format: 'csvgz' | 'ranges'; bytes: number; from_sha256: string; to_sha256: string }[] {
    const csv = latestPublication(this.db, id, 'csvgz', false);
    const record = csv && readCsvDiffs(this.dataDir, csv.buildId)[id];
    if (!csv || !record) return [];
    return (['csvgz', 'ranges'] as const).flatMap((format) => {
      const p = this.diffPublication(id, csv.buildId, format);
      return p ? [{ format, bytes: p.bytes, from_sha256: record.from_sha256, to_sha256: csv.checksums.sha256 }] : [];
    });
  }

  /** The diff (the CSV's, or the range diff) published with build `buildId` of a dataset, or null. */
  private diffPublication(id: string, buildId: string, kind: 'csvgz' | 'ranges'): Publication | null {
    const p = latestPublication(this.db, id, kind === 'csvgz' ? CSV_DIFF_FORMAT : RANGE_DIFF_FORMAT, false);
    return p !== null && p.buildId === buildId ? p : null;
  }

  /**
   * The checks download, metadata and checksum share, in order: 400 missing or malformed
   * parameters, 404 unknown database, 400 format not built, 403 no licence / term ended
   * (samples need none), 503 today's copy not published. Returns the publication, or answers
   * (recording the refusal when `record`) and returns null.
   */
  resolve(a: Ask, needFormat: boolean, record: boolean) {
    const id = a.query.get('id') ?? '';
    const format = a.query.get('format') ?? '';
    const sampleText = a.query.get('sample');
    const sample = sampleText === 'true';
    // The message may say when to come back: it is given the Retry-After it will stand beside.
    const refuse = (e: RcError, outcome: Outcome, message: string | ((retryS: number | null) => string)): null => {
      if (record) this.record(a, id, format, sample, outcome, e.status, 0);
      const retry = e === RC.NOT_PUBLISHED ? this.retryAfterS() : null;
      const text = typeof message === 'string' ? message : message(retry);
      late(a.res, a.p, () => sendRc(a.res, e, text, this.metrics, retry === null ? undefined : { headers: [['Retry-After', String(retry)]] }));
      return null;
    };
    const R = DATABASE_REFUSALS;
    if (id === '') return refuse(RC.BAD_REQUEST, 'bad_request', R.idMissing());
    const entry = this.catalogue.byId.get(id);
    if (needFormat && format === '') return refuse(RC.BAD_REQUEST, 'bad_request', R.formatMissing(id, entry?.version.formats ?? []));
    // `sample` is true or false (DESIGN.md §6): a full download is never given for `sample=1`.
    if (sampleText !== null && sampleText !== 'true' && sampleText !== 'false') return refuse(RC.BAD_REQUEST, 'bad_request', R.sampleMalformed(sampleText));
    if (!entry) return refuse(RC.NOT_FOUND, 'not_found', R.unknownDatabase(id));
    const formats = needFormat ? [format] : entry.version.formats;
    if (needFormat && !entry.version.formats.includes(format as never))
      return refuse(RC.FORMAT_NOT_BUILT, 'bad_format', R.formatNotBuilt(id, format, entry.version.formats));
    if (!sample) {
      const l = getLicence(this.db, a.caller.org.id, entry.base.base);
      const now = this.clock.now();
      const standing = standingOf(l, now);
      if (standing === 'unlicensed')
        return refuse(RC.NO_LICENSE, 'no_license', l === null ? R.noLicence(entry.base.base) : R.licenceNotBegun(entry.base.base, l.starts, l.expires));
      if (standing === 'expired') return refuse(RC.LICENSE_EXPIRED, 'license_expired', R.licenceEnded(entry.base.base, l!.starts, l!.expires));
    }
    const pubs = formats.map((f) => latestPublication(this.db, id, f, sample));
    // Today by the service's clock, as every other time it judges.
    const today = new Date(this.clock.now()).toISOString().slice(0, 10);
    const notPublished = (): null => refuse(RC.NOT_PUBLISHED, 'not_published', (retry) => R.notPublished(id, retry));
    if (pubs.some((p) => p === null)) {
      // Never published in this format at all: not built, unless nothing is published yet.
      const published = entry.version.formats.filter((f) => latestPublication(this.db, id, f, sample) !== null);
      if (needFormat && published.length > 0) return refuse(RC.FORMAT_NOT_BUILT, 'bad_format', R.formatNotBuilt(id, format, published));
      return notPublished();
    }
    if (entry.base.updateFreq === 'daily' && pubs.some((p) => p!.day < today)) return notPublished();
    return { id, format, sample, entry, pubs: pubs as NonNullable<(typeof pubs)[number]>[] };
  }

  private download(a: Ask): void | Promise<void> {
    // diff=true: the CSV's diff from the version before, checked after the same refusals.
    const diffText = a.query.get('diff');
    if (diffText !== null && diffText !== 'true' && diffText !== 'false' && diffText !== 'ranges')
      return this.refuseDiff(a, RC.BAD_REQUEST, DATABASE_REFUSALS.diffMalformed(diffText));
    const wantsDiff = diffText === 'true' || diffText === 'ranges';
    const r = this.resolve(a, true, true);
    if (!r) return;
    if (wantsDiff && (r.format !== 'csvgz' || r.sample)) return this.refuseDiff(a, RC.BAD_REQUEST, DATABASE_REFUSALS.diffOfCsvOnly(r.format));
    const diff = wantsDiff ? this.diffPublication(r.id, r.pubs[0].buildId, diffText === 'ranges' ? 'ranges' : 'csvgz') : null;
    if (wantsDiff && diff === null) return this.refuseDiff(a, RC.NOT_FOUND, DATABASE_REFUSALS.noDiff(r.id));
    const p = diff ?? r.pubs[0];
    const name = p.key.split('/').pop()!;
    const redirect = (url: string): void => {
      this.record(a, r.id, p.format, r.sample, 'ok', 302, p.bytes);
      late(a.res, a.p, () => {
        this.metrics.count(302);
        a.res.writeStatus('302 Found').writeHeader('Location', url).writeHeader('Cache-Control', 'no-store').end();
      });
    };
    const url = this.store.signedUrl(p.key, this.clock.now() + LINK_TTL_MS, name, a.origin);
    if (typeof url === 'string') return redirect(url);
    return url.then(redirect);
  }

  /** A refusal of a diff download, recorded in the download history as any refusal. */
  private refuseDiff(a: Ask, e: RcError, message: string): void {
    const outcome: Outcome = e === RC.NOT_FOUND ? 'not_found' : 'bad_request';
    this.record(a, a.query.get('id') ?? '', CSV_DIFF_FORMAT, a.query.get('sample') === 'true', outcome, e.status, 0);
    rc(a, e, this.metrics, message);
  }

  private metadata(a: Ask): void {
    const r = this.resolve(a, false, false);
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
    cached(a, doc, this.metrics);
  }

  private checksum(a: Ask): void {
    const r = this.resolve(a, true, false);
    if (!r) return;
    cached(a, { id: r.id, format: r.format, checksums: r.pubs[0].checksums }, this.metrics);
  }

  private history(a: Ask): void {
    const limit = listLimit(a.query.get('limit'));
    if (limit === null) return rc(a, RC.BAD_REQUEST, this.metrics, LIMIT_RULE);
    const downloads = downloadHistory(this.db, a.caller.org.id, limit);
    json(a, 200, { downloads }, this.metrics);
  }
}

function json(a: Ask, status: number, body: unknown, metrics: Metrics, etag?: string): void {
  late(a.res, a.p, () => sendJson(a.res, status, body, metrics, etag ? [['ETag', etag]] : undefined, etag !== undefined));
}

/** A refusal, late-safe; with a message where the client can do something about it. */
export function rc(a: Ask, e: RcError, metrics: Metrics, message?: string): void {
  late(a.res, a.p, () => (message === undefined ? sendError(a.res, e, metrics) : sendRc(a.res, e, message, metrics)));
}

/** Why a database request's key was refused (401/403), with the way on. */
export const KEY_REFUSALS = Object.freeze({
  missing: 'an API key with the db.download scope is required: Authorization: Bearer <key>',
  noDownloadScope:
    'this key lacks the db.download scope: download with a key that holds it (ipsift key create --scope db.download, or allowed_scopes ["db.download"])',
  source: ERRORS.sourceNotAllowed.message,
});

/** A document with a strong ETag of its bytes; If-None-Match with it answers 304. */
function cached(a: Ask, doc: unknown, metrics: Metrics): void {
  const text = JSON.stringify(doc);
  const etag = `"${crypto.createHash('sha256').update(text).digest('base64url').slice(0, 27)}"`;
  if (a.ifNoneMatch.split(',').some((t) => sameEntity(t, etag))) {
    late(a.res, a.p, () => {
      metrics.count(304);
      a.res.writeStatus('304 Not Modified').writeHeader('ETag', etag).writeHeader('Cache-Control', REVALIDATE).endWithoutBody();
    });
    return;
  }
  json(a, 200, doc, metrics, etag);
}

/**
 * Serves a store file: the link is checked once, now; a transfer that has started runs to
 * its end even when the link lapses meanwhile. Streams with backpressure (tryEnd, onWritable)
 * and reads off the event loop. A transfer holds one of the shared read buffers only while a
 * chunk is read and handed to uWS: when the client stops reading, the rest is read again from
 * the file once the socket drains, so a stalled reader costs an open file and its socket's
 * kernel buffers, and all transfers together hold at most MAX_FILE_BUFFERS chunks.
 */
function serveFile(store: LocalStore, res: HttpResponse, req: HttpRequest, head: boolean, metrics: Metrics, routes: RouteTable): void {
  const url = req.getUrl();
  const range = req.getHeader('range');
  const ifNoneMatch = req.getHeader('if-none-match');
  const query = new URLSearchParams(req.getQuery() ?? '');
  const refuse = (e: RcError, extra?: [string, string]): void => sendError(res, e, metrics, { head, headers: extra ? [extra] : undefined });
  let key: string;
  try {
    key = decodeURIComponent(url.slice(FILES_PREFIX.length));
  } catch {
    return refuse(RC.FORBIDDEN); // not a name any link was made for
  }
  // Unknown, tampered and expired links look the same.
  const ok = store.verify(key, query, routes.nowMs());
  if (!ok) return refuse(RC.FORBIDDEN);
  // An MMDB goes out as its gzip form (written at publish) to a client that takes gzip.
  const mmdb = ok.file.endsWith('.mmdb');
  const gzipped = mmdb && acceptsGzip(req.getHeader('accept-encoding')) && fs.existsSync(gzippedPath(ok.file));
  const answer = {
    file: gzipped ? gzippedPath(ok.file) : ok.file,
    name: ok.name,
    headers: [...(gzipped ? [['Content-Encoding', 'gzip'] as const] : []), ...(mmdb ? [['Vary', 'Accept-Encoding'] as const] : [])],
  };
  sendFile(res, range, ifNoneMatch, head, answer, metrics, routes);
}
