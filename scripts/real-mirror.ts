// A loopback mirror of the real public data (../shared/data/real) laid out as SOURCES_MIRROR
// expects, <base>/HOST/PATH: GitHub-hosted files at raw.githubusercontent.com/<owner>/<repo>/<ref>/<path>,
// and each registry source hosted elsewhere at its own HOST/PATH where the registry names a
// verbatim copy. It answers conditional requests (ETag, Last-Modified → 304) as the real hosts
// do, counts what it was asked, and lets a test replace any file's answer (a change, an error
// page, an empty or oversized body).

import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Source } from '../src/feeds/sources.js';
import { REAL } from './real-data.js';

export interface MirrorAnswer {
  status?: number;
  headers?: Record<string, string>;
  body: Buffer | string;
  /** Its Last-Modified (default: when it was set). */
  modified?: Date;
}

export interface MirrorRequest {
  path: string;
  status: number;
  conditional: boolean;
  userAgent: string;
}

export interface RealMirror {
  /** The base to give SOURCES_MIRROR. */
  readonly url: string;
  readonly requests: MirrorRequest[];
  /** The most requests it was answering at once. */
  readonly maxInFlight: number;
  /** Answers a source's URL with this instead (null: the file again). */
  override(sourceUrl: string, answer: MirrorAnswer | null): void;
  /** Moves the replay's clock (ms). */
  replayAt(ms: number): void;
  close(): Promise<void>;
}

/** The file under REAL holding owner/repo/path, whatever category folder it sits in. */
export function realCopy(ownerRepoPath: string): string | null {
  const [owner, repo, ...rest] = ownerRepoPath.split('/');
  for (const category of fs.readdirSync(REAL)) {
    const file = path.join(REAL, category, `${owner}__${repo}`, ...rest);
    if (fs.existsSync(file) && fs.statSync(file).isFile()) return file;
  }
  return null;
}

/** owner/repo/path of a raw.githubusercontent.com URL (its ref dropped), or null. */
export function githubPath(url: string): string | null {
  const u = new URL(url);
  if (u.host !== 'raw.githubusercontent.com') return null;
  const [owner, repo, , ...rest] = u.pathname.slice(1).split('/');
  return [owner, repo, ...rest].join('/');
}

/** The copy a source's URL is checked against: its GitHub file, or the registry's named copy. */
export function copyOf(source: Pick<Source, 'url' | 'copy'>): string | null {
  const where = (source.url && githubPath(source.url)) ?? source.copy ?? null;
  return where ? realCopy(where) : null;
}

/** Samples of the first-party layouts that have no verbatim copy in the real data (test/fixtures/upstream). */
export const UPSTREAM_SAMPLES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../test/fixtures/upstream');

/** A source's sample in its upstream's layout (named after the source), or null. */
export function sampleOf(source: Pick<Source, 'name'>): string | null {
  const file = fs.existsSync(UPSTREAM_SAMPLES) ? fs.readdirSync(UPSTREAM_SAMPLES).find((f) => f.replace(/\.[a-z]+$/, '') === source.name) : undefined;
  return file ? path.join(UPSTREAM_SAMPLES, file) : null;
}

/**
 * A sample of a source's layout that the mirror does not serve (`<name>.layout.*`): Apple's
 * egress list, whose host stands for one out of reach in the tests, is read from it by the
 * registry's test alone.
 */
export function layoutSampleOf(source: Pick<Source, 'name'>): string | null {
  const file = fs.existsSync(UPSTREAM_SAMPLES)
    ? fs.readdirSync(UPSTREAM_SAMPLES).find((f) => f.replace(/\.[a-z]+$/, '') === `${source.name}.layout`)
    : undefined;
  return file ? path.join(UPSTREAM_SAMPLES, file) : null;
}

/** Files a sample page links to, answered with the real data's verbatim copy of that file. */
const LINKED_COPIES: Record<string, string> = {
  'https://download.microsoft.com/download/7/1/D/71D86715-5596-4529-9B13-DA13A5DE5B63/ServiceTags_Public_20260824.json':
    'femueller/cloud-ip-ranges/microsoft-azure-ip-ranges.json',
};

const key = (url: string): string => {
  const u = new URL(url);
  return `/${u.host}${u.pathname}${u.search}`;
};

export interface MirrorOptions {
  /** Each answer waits this long first, as a distant host would (0: at once). */
  delayMs?: number;
  /**
   * Replays the upstreams as they stood at this time (ms), with their real dates (the data
   * README's commits): GitHub's raw host sends no Last-Modified, GitHub's commits API answers
   * each path's and repository's last commit up to then, and a file whose last commit is later
   * is answered by a stand-in for the version before it (its last line dropped). Move it with
   * `replayAt`.
   */
  replayAt?: number;
  /** Hosts whose paths are answered by a dropped connection, as an unreachable host would be. */
  unreachable?: (host: string) => boolean;
}

export async function startRealMirror(sources: readonly Source[], options: MirrorOptions = {}): Promise<RealMirror> {
  const { delayMs = 0, unreachable } = options;
  let replayAt = options.replayAt;
  const dates = replayAt === undefined ? null : upstreamDates();
  const byPath = new Map<string, string>();
  for (const s of sources) {
    const file = s.url ? (copyOf(s) ?? sampleOf(s)) : null;
    if (s.url && file) byPath.set(key(s.url), file);
  }
  for (const [url, where] of Object.entries(LINKED_COPIES)) {
    const file = realCopy(where);
    if (file) byPath.set(key(url), file);
  }
  const overrides = new Map<string, MirrorAnswer>();
  const requests: MirrorRequest[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const server = http.createServer((req, res) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    res.once('close', () => inFlight--);
    if (delayMs > 0) setTimeout(() => serve(req, res), delayMs);
    else serve(req, res);
  });
  const serve = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const p = req.url ?? '/';
    const conditional = req.headers['if-none-match'] !== undefined || req.headers['if-modified-since'] !== undefined;
    const answer = (status: number, headers: Record<string, string>, body?: Buffer | string): void => {
      requests.push({ path: p, status, conditional, userAgent: req.headers['user-agent'] ?? '' });
      res.writeHead(status, headers).end(body);
    };
    if (unreachable?.(p.split('/')[1] ?? '')) {
      requests.push({ path: p, status: 0, conditional, userAgent: req.headers['user-agent'] ?? '' });
      req.socket.destroy();
      return;
    }
    if (dates && p.startsWith('/api.github.com/')) return answerCommits(p, dates, replayAt!, answer);
    const o = overrides.get(p);
    let body: Buffer;
    let modified: Date;
    let type = 'text/plain';
    if (o) {
      if (o.status !== undefined && o.status !== 200) return answer(o.status, o.headers ?? { 'content-type': 'text/html' }, o.body);
      body = Buffer.from(o.body);
      modified = o.modified ?? new Date();
      if (o.headers?.['content-type']) type = o.headers['content-type'];
    } else {
      const file = byPath.get(p);
      if (!file) return answer(404, { 'content-type': 'text/html' }, '<html><body>404 Not Found</body></html>');
      body = fs.readFileSync(file);
      modified = fs.statSync(file).mtime;
      const at = dates?.paths.get(githubPathOfMirrored(p) ?? '');
      if (at !== undefined && at > replayAt!) body = body.subarray(0, body.lastIndexOf(10, body.length - 2) + 1);
      if (file.endsWith('.json')) type = 'application/json';
      else if (file.endsWith('.html')) type = 'text/html';
      else if (file.endsWith('.xml')) type = 'application/xml';
    }
    const etag = `"${crypto.createHash('sha1').update(body).digest('hex')}"`;
    const lastModified = new Date(Math.floor(modified.getTime() / 1000) * 1000).toUTCString();
    const inm = req.headers['if-none-match'];
    const ims = req.headers['if-modified-since'];
    if (inm !== undefined ? inm === etag : ims !== undefined && Date.parse(ims) >= Date.parse(lastModified)) {
      return answer(304, { etag, 'last-modified': lastModified });
    }
    // GitHub's raw host sends an ETag and no Last-Modified; the replay answers as it does.
    const github = dates !== null && p.startsWith('/raw.githubusercontent.com/');
    answer(200, { 'content-type': type, etag, ...(github ? {} : { 'last-modified': lastModified }), 'content-length': String(body.length) }, body);
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get maxInFlight() {
      return maxInFlight;
    },
    replayAt(ms) {
      replayAt = ms;
    },
    override(sourceUrl, a) {
      if (a === null) overrides.delete(key(sourceUrl));
      else overrides.set(key(sourceUrl), a);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The real dates of the upstreams, from the data README: each path's last commit, each repository's head. */
export interface UpstreamDates {
  /** owner/repo/path → its last commit (ms). */
  paths: Map<string, number>;
  /** owner/repo → its head commit at the snapshot (ms). */
  heads: Map<string, number>;
}

export function upstreamDates(): UpstreamDates {
  const text = fs.readFileSync(path.join(REAL, 'README.md'), 'utf8');
  const paths = new Map<string, number>();
  const heads = new Map<string, number>();
  for (const line of text.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    // | category | `file` | lines | records | repo | `path` | `commit` | date | licence | format |
    if (cells.length >= 11 && /^[\w.-]+\/[\w.-]+$/.test(cells[5]) && /^\d{4}-\d\d-\d\d$/.test(cells[8])) {
      paths.set(`${cells[5]}/${cells[6].replaceAll('`', '')}`, Date.parse(`${cells[8]}T00:00:00Z`));
    }
    // | repo | `head` | date | licence |
    if (cells.length === 6 && /^[\w.-]+\/[\w.-]+$/.test(cells[1]) && /^\d{4}-\d\d-\d\d$/.test(cells[3]))
      heads.set(cells[1], Date.parse(`${cells[3]}T00:00:00Z`));
  }
  return { paths, heads };
}

/** owner/repo/path of a mirrored raw.githubusercontent.com path (its ref dropped), or null. */
function githubPathOfMirrored(p: string): string | null {
  const m = /^\/raw\.githubusercontent\.com\/([^/]+)\/([^/]+)\/[^/]+\/([^?]+)/.exec(p);
  return m ? `${m[1]}/${m[2]}/${decodeURIComponent(m[3])}` : null;
}

/**
 * GitHub's commits API as it would have answered at `at`: a path's last commit up to then (a
 * file whose last commit is later has an earlier version whose date the data does not hold:
 * none is given), a repository's latest commit the data knows up to then.
 */
function answerCommits(p: string, dates: UpstreamDates, at: number, answer: (status: number, headers: Record<string, string>, body?: string) => void): void {
  const u = new URL(p, 'http://mirror');
  const m = /^\/api\.github\.com\/repos\/([^/]+\/[^/]+)\/commits$/.exec(u.pathname);
  if (!m) return answer(404, { 'content-type': 'application/json' }, '{"message":"Not Found"}');
  const repo = m[1];
  const file = u.searchParams.get('path');
  let date: number | undefined;
  if (file !== null) {
    const d = dates.paths.get(`${repo}/${file}`);
    date = d !== undefined && d <= at ? d : undefined;
  } else {
    const known = [dates.heads.get(repo), ...[...dates.paths].filter(([k]) => k.startsWith(`${repo}/`)).map(([, d]) => d)];
    date = Math.max(...known.filter((d): d is number => d !== undefined && d <= at));
    if (!Number.isFinite(date)) date = undefined;
  }
  const body = JSON.stringify(date === undefined ? [] : [{ sha: '0'.repeat(40), commit: { committer: { date: new Date(date).toISOString() } } }]);
  answer(200, { 'content-type': 'application/json', etag: `"${crypto.createHash('sha1').update(body).digest('hex')}"`, 'x-ratelimit-remaining': '59' }, body);
}
