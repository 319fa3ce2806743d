// The operator's console on the admin port: /console/ (its page) and /console/assets/<hash>/…
// (its scripts and style), as `npm run build` wrote them into dist/console (scripts/
// console-assets.ts). The page is never stored by a cache; the assets sit under a directory
// named by the hash of their contents, so they are kept for a year and a new build is a new
// name. Every answer carries a strict Content-Security-Policy: scripts and styles from this
// origin only, no inline script or style, no frames, forms or other origins. The console talks
// to the admin API alone, with the operator token in a header, never in a cookie.

import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { negotiate, writeCoding } from '../../http/content-coding.js';
import type { RouteTable } from '../../http/routes.js';
import type { HttpResponse } from '../../http/server/types.js';
import { BR, GZIP } from '../../wire/codings.js';
import type { Edge } from '../admission/edge.js';
import { sendError } from '../../http/reply.js';
import { ERRORS } from '../../wire/errors.js';

/** Where `npm run build` writes the console (dist/console, beside dist/src). */
export const CONSOLE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../console');

export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** One file of the console; its compressed forms are made on first request, once. */
class Asset {
  private gz: Buffer | null = null;
  private brotli: Buffer | null = null;

  constructor(
    readonly type: string,
    readonly identity: Buffer,
  ) {}

  get gzip(): Buffer {
    return (this.gz ??= zlib.gzipSync(this.identity, { level: 9 }));
  }

  get br(): Buffer {
    return (this.brotli ??= zlib.brotliCompressSync(this.identity, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }));
  }
}

const asset = (file: string): Asset => new Asset(TYPES[path.extname(file)] ?? 'application/octet-stream', fs.readFileSync(file));

/** The console as built: its page, and its assets by path under /console/assets/. */
export interface ConsoleFiles {
  page: Asset;
  assets: Map<string, Asset>;
}

/** Reads dist/console; null where it was not built (the console then answers 404 with why). */
export function readConsole(dir = CONSOLE_DIR): ConsoleFiles | null {
  const page = path.join(dir, 'index.html');
  if (!fs.existsSync(page)) return null;
  const assets = new Map<string, Asset>();
  const root = path.join(dir, 'assets');
  for (const hash of fs.readdirSync(root))
    for (const name of fs.readdirSync(path.join(root, hash))) assets.set(`${hash}/${name}`, asset(path.join(root, hash, name)));
  return { page: asset(page), assets };
}

const FOREVER = 'public, max-age=31536000, immutable';

export class ConsoleRoute {
  constructor(private readonly files: ConsoleFiles | null) {}

  register(routes: RouteTable, edge: Edge): void {
    const { files } = this;
    const send = (res: HttpResponse, acceptEncoding: string, a: Asset, cache: string): void => {
      edge.metrics.count(200);
      res.writeStatus('200 OK').writeHeader('Content-Type', a.type).writeHeader('Cache-Control', cache);
      res.writeHeader('Content-Security-Policy', CONSOLE_CSP).writeHeader('X-Content-Type-Options', 'nosniff').writeHeader('Referrer-Policy', 'no-referrer');
      const coding = negotiate(acceptEncoding);
      if (coding === BR) {
        writeCoding(res, BR);
        res.end(a.br);
      } else if (coding === GZIP) {
        writeCoding(res, GZIP);
        res.end(a.gzip);
      } else {
        res.writeHeader('Vary', 'Accept-Encoding').end(a.identity);
      }
    };
    const notBuilt = (res: HttpResponse): void =>
      sendError(
        res,
        { ...ERRORS.notFound, body: Buffer.from(JSON.stringify({ error: 'the console is not built here: npm run build writes it into dist/console' })) },
        edge.metrics,
      );
    routes.get('/console', (res) => {
      edge.metrics.count(308);
      res.writeStatus('308 Permanent Redirect').writeHeader('Location', '/console/').end();
    });
    // The admin port's root leads to the console (302: the root may serve something else one day).
    routes.get('/', (res) => {
      edge.metrics.count(302);
      res.writeStatus('302 Found').writeHeader('Location', '/console/').end();
    });
    routes.get('/console/', (res, req) => (files ? send(res, req.getHeader('accept-encoding'), files.page, 'no-store') : notBuilt(res)));
    routes.get('/console/assets/:hash/:file', (res, req) => {
      const a = files?.assets.get(`${req.getParameter(0)}/${req.getParameter(1)}`);
      if (a === undefined) return sendError(res, ERRORS.notFound, edge.metrics);
      send(res, req.getHeader('accept-encoding'), a, FOREVER);
    });
  }
}
