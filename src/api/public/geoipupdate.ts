// MaxMind's update protocol as geoipupdate speaks it, so that teams that keep their MaxMind
// databases current with geoipupdate keep ipsift's the same way. 4.x and 5.x:
//
//   GET /geoip/databases/{edition}/update?db_md5={md5 of the file they have}
//   Authorization: Basic {account id}:{licence key}
//
// 6.x and later ask for the editions' MD5s and dates first, then download each outdated one as
// a tar.gz holding `{edition}_{date}/{edition}.mmdb`:
//
//   GET /geoip/updates/metadata?edition_id={edition}&edition_id=…
//   GET /geoip/databases/{edition}/download?date={YYYYMMDD}&suffix=tar.gz
//
// The edition is a database id of the catalogue (vpn_v1, geoip2_anonymous_v1, …), the account
// id the organisation's number (`ipsift org show`), the licence key one of its API keys with the
// db.download scope. The same checks as /api/v1/database/download apply, in the same order,
// and downloads go to the download history alike. `update` answers 304 when db_md5 is the
// published MMDB's MD5; else 200 with the MMDB gzip-compressed (the form written at publish),
// X-Database-MD5 (of the MMDB itself, which geoipupdate checks after decompressing) and
// Last-Modified (the publication time, which geoipupdate gives the file). `download` sends the
// same gzip form between two small gzip members, a tar header before it and the tar's padding
// and end after it: gzip readers read concatenated members as one stream, so the tar.gz costs
// no compression and no second copy on disk. Served from the local store only: an S3 store's
// objects never pass through ipsift.

import fs from 'node:fs';
import zlib from 'node:zlib';
import type { HttpRequest, HttpResponse } from '../../http/server/types.js';
import { RC, type RcError } from '../../wire/errors.js';
import type { LocalStore } from '../../objects/local-store.js';
import type { RequestClient } from '../../http/client.js';
import type { Gate } from '../admission/gate.js';
import type { Metrics } from '../../http/metrics.js';
import { late, pending, sendJson, sendRc } from '../../http/reply.js';
import type { RouteTable } from '../../http/routes.js';
import { KEY_REFUSALS, rc, type Ask, type DatabaseApi, type Outcome } from './databases.js';
import { parseRange, sendFile, type FileAnswer } from '../../http/file-transfer.js';
import type { Edge } from '../admission/edge.js';
import type { Clock } from '../../clock.js';

/** `Basic base64(user:password)`, as the user and the password; null when it is not that. */
export function basicCredentials(header: string): { user: string; password: string } | null {
  const m = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
  if (m === null) return null;
  const text = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = text.indexOf(':');
  return colon < 0 ? null : { user: text.slice(0, colon), password: text.slice(colon + 1) };
}

/** geoipupdate's AccountID and LicenseKey, as this server reads them. */
const UNAUTHORISED_MESSAGE = "Basic credentials are required: the organisation's account id (AccountID) and an API key with the db.download scope (LicenseKey)";

const CHALLENGE = ['WWW-Authenticate', 'Basic realm="ipsift", charset="UTF-8"'] as const;

/** Editions one metadata request may ask for. */
const MAX_EDITIONS = 50;

/** A ustar header for one regular file (POSIX.1-1988): name, size and time in octal, its checksum. */
export function tarHeader(name: string, size: number, mtimeS: number): Buffer {
  const h = Buffer.alloc(512);
  const field = (at: number, width: number, text: string): void => void h.write(text, at, width, 'latin1');
  const octal = (at: number, width: number, v: number): void => field(at, width, `${v.toString(8).padStart(width - 1, '0')}\0`);
  field(0, 100, name);
  octal(100, 8, 0o644);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, size);
  octal(136, 12, Math.floor(mtimeS));
  field(148, 8, ' '.repeat(8));
  field(156, 1, '0');
  field(257, 6, 'ustar\0');
  field(263, 2, '00');
  let sum = 0;
  for (const b of h) sum += b;
  field(148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return h;
}

/** The gzip members around a gzip-compressed file that make it `name` inside a tar.gz. */
export function tarGzAround(name: string, size: number, mtimeS: number): { before: Buffer; after: Buffer } {
  const padding = (512 - (size % 512)) % 512;
  return { before: zlib.gzipSync(tarHeader(name, size, mtimeS)), after: zlib.gzipSync(Buffer.alloc(padding + 1024)) };
}

export class GeoipUpdateApi {
  constructor(
    private readonly api: DatabaseApi,
    private readonly files: LocalStore,
    private readonly gate: Gate,
  ) {}

  private client!: RequestClient;
  private metrics!: Metrics;
  private clock!: Clock;

  register(routes: RouteTable, edge: Edge): void {
    this.client = edge.client;
    this.metrics = edge.metrics;
    this.clock = edge.clock;
    const o = { internal: RC.INTERNAL, family: 'database' } as const;
    routes.get('/geoip/databases/:edition/update', (res, req) => this.update(res, req, routes), o);
    routes.get('/geoip/updates/metadata', (res, req) => this.metadata(res, req), o);
    routes.get('/geoip/databases/:edition/download', (res, req) => this.download(res, req, routes), o);
  }

  /**
   * The caller of a request in geoipupdate's terms: Basic credentials naming an organisation's
   * account id and one of its keys, holding db.download, from an allowed source. Null once refused.
   */
  private caller(res: HttpResponse, req: HttpRequest, edition: string, record: boolean): Ask | null {
    const client = this.client.of(res, req);
    const a: Ask = {
      res,
      caller: null as unknown as Ask['caller'],
      query: new URLSearchParams({ id: edition, format: 'mmdb' }),
      clientIp: client.text(),
      userAgent: req.getHeader('user-agent'),
      origin: '',
      ifNoneMatch: '',
      p: pending(res),
    };
    const unauthorised = (message = UNAUTHORISED_MESSAGE): null => {
      sendRc(res, RC.UNAUTHORIZED, message, this.metrics, { headers: [CHALLENGE] });
      return null;
    };
    const credentials = basicCredentials(req.getHeader('authorization'));
    if (credentials === null) return unauthorised();
    // Credentials were sent: the refusal says which part is wrong.
    if (!/^[1-9]\d{0,15}$/.test(credentials.user))
      return unauthorised("the account id (AccountID) must be the organisation's number, as `ipsift org show` prints it");
    const c = this.gate.key(credentials.password, this.clock.now());
    if (c === null || !('key' in c))
      return unauthorised('the licence key (LicenseKey) is no live API key: use one with the db.download scope that is neither revoked nor expired');
    // A key of another organisation than the account named is no key for this account.
    if (c.org.accountId !== Number(credentials.user))
      return unauthorised("the licence key (LicenseKey) belongs to another account: AccountID must be its organisation's number");
    a.caller = c;
    const refuse = (e: RcError, outcome: Outcome, message: string): null => {
      if (record) this.api.record(a, edition, 'mmdb', false, outcome, e.status, 0);
      if (e === RC.UNAUTHORIZED) return unauthorised(message);
      rc(a, e, this.metrics, message);
      return null;
    };
    if (!c.key.scopes.includes('db.download')) return refuse(RC.UNAUTHORIZED, 'forbidden', KEY_REFUSALS.noDownloadScope);
    if (!this.gate.fromAllowedSource(c, client)) return refuse(RC.FORBIDDEN, 'forbidden', KEY_REFUSALS.source);
    return a;
  }

  /** 4.x/5.x: the MMDB gzip-compressed, unless db_md5 is current. */
  private update(res: HttpResponse, req: HttpRequest, routes: RouteTable): void | Promise<void> {
    const edition = req.getParameter(0) ?? '';
    const range = req.getHeader('range');
    const known = new URLSearchParams(req.getQuery() ?? '').get('db_md5') ?? '';
    const a = this.caller(res, req, edition, true);
    if (a === null) return;
    const r = this.api.resolve(a, true, true);
    if (!r) return;
    const p = r.pubs[0];
    const md5 = p.checksums.md5.toLowerCase();
    const lastModified = new Date(p.publishedAt).toUTCString();
    if (known.toLowerCase() === md5) {
      // Nothing was downloaded: not a history entry.
      this.metrics.count(304);
      return void res.writeStatus('304 Not Modified').writeHeader('X-Database-MD5', md5).writeHeader('Last-Modified', lastModified).endWithoutBody();
    }
    return this.send(a, r.id, p.key, range, routes, (file) => ({
      file,
      name: `${r.id}.mmdb.gz`,
      headers: [
        ['X-Database-MD5', md5],
        ['Last-Modified', lastModified],
      ],
    }));
  }

  /** 6.x and later: each edition's MD5 and date, every one checked as a download would be. */
  private metadata(res: HttpResponse, req: HttpRequest): void {
    const editions = new URLSearchParams(req.getQuery() ?? '').getAll('edition_id');
    const a = this.caller(res, req, editions[0] ?? '', false);
    if (a === null) return;
    if (editions.length === 0 || editions.length > MAX_EDITIONS)
      return rc(a, RC.BAD_REQUEST, this.metrics, `edition_id is required, 1 to ${MAX_EDITIONS} of them (GeoIP.conf's EditionIDs)`);
    const databases: { edition_id: string; md5: string; date: string }[] = [];
    for (const edition of editions) {
      a.query = new URLSearchParams({ id: edition, format: 'mmdb' });
      const r = this.api.resolve(a, true, false);
      if (!r) return;
      databases.push({ edition_id: edition, md5: r.pubs[0].checksums.md5.toLowerCase(), date: r.pubs[0].day });
    }
    late(res, a.p, () => sendJson(res, 200, { databases }, this.metrics));
  }

  /**
   * 6.x and later: the current MMDB as a tar.gz. The `date` asked for is not checked: only the
   * latest publication is kept, and geoipupdate checks the MD5 it got from the metadata.
   */
  private download(res: HttpResponse, req: HttpRequest, routes: RouteTable): void | Promise<void> {
    const edition = req.getParameter(0) ?? '';
    const range = req.getHeader('range');
    const a = this.caller(res, req, edition, true);
    if (a === null) return;
    const r = this.api.resolve(a, true, true);
    if (!r) return;
    const p = r.pubs[0];
    const published = new Date(p.publishedAt);
    const folder = `${r.id}_${p.day.replace(/-/g, '')}`;
    return this.send(a, r.id, p.key, range, routes, (file) => ({
      file,
      name: `${folder}.tar.gz`,
      headers: [['Last-Modified', published.toUTCString()]],
      around: tarGzAround(`${folder}/${r.id}.mmdb`, p.bytes, published.getTime() / 1000),
    }));
  }

  /**
   * Sends the gzip form of the publication's MMDB (written now where an older ipsift published
   * it), recorded as a download; `range`: the request's Range header (a resumed download).
   */
  private send(a: Ask, id: string, key: string, range: string, routes: RouteTable, answer: (file: string) => FileAnswer): void | Promise<void> {
    const go = (file: string): void => {
      const f = answer(file);
      const size = fs.statSync(file).size + (f.around ? f.around.before.length + f.around.after.length : 0);
      // As sendFile will answer: the whole, a part (a resumed download), or a range past the end.
      const part = range === '' ? null : parseRange(range, size);
      if (part === 'unsatisfiable') this.api.record(a, id, 'mmdb', false, 'bad_request', 416, 0);
      else this.api.record(a, id, 'mmdb', false, 'ok', part ? 206 : 200, part ? part.end - part.start + 1 : size);
      late(a.res, a.p, () => sendFile(a.res, range, '', false, f, this.metrics, routes));
    };
    const file = this.files.gzipped(key);
    if (typeof file === 'string') return go(file);
    return file.then(go);
  }
}
