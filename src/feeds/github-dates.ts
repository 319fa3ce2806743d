// When a GitHub-hosted file last changed, and when its repository last did: GitHub's raw host
// sends no Last-Modified, so a first fetch would otherwise date a list frozen for years at the
// moment it was fetched. The commits API says both (the path's last commit: the content's
// date; the repository's last commit: its publisher is still at work). Asked conditionally
// (an ETag's 304 costs nothing against the limit), a repository at most once an hour and a
// path only when its bytes are new, within the unauthenticated limit of 60 an hour (a token,
// GITHUB_TOKEN, raises it to 5 000). What it learnt is kept in DATA_DIR/sources/github.json.

import fs from 'node:fs';
import path from 'node:path';
import { makeDirectory } from '../files.js';
import { sourcesDir } from '../data-dir.js';
import { guardedFetch, type HopGuard, readCapped, USER_AGENT } from './source-fetch.js';
import { bodyProblem, closed } from '../wire/body-schema.js';
import { mirroredUrl } from './registry.js';

/** A file on GitHub's raw host: raw.githubusercontent.com/OWNER/REPO/REF/PATH. */
export interface GithubFile {
  repo: string;
  ref: string;
  path: string;
}

export function githubFileOf(url: string): GithubFile | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.hostname !== 'raw.githubusercontent.com') return null;
  const [owner, repo, ref, ...rest] = u.pathname.slice(1).split('/').map(decodeURIComponent);
  if (!owner || !repo || !ref || rest.length === 0) return null;
  return { repo: `${owner}/${repo}`, ref, path: rest.join('/') };
}

interface Asked {
  etag: string | null;
  /** The last commit's date (null: the API listed none). */
  date: string | null;
  checked_at: string;
}

/** The file's shape, checked when it is read back: anything else is started afresh. */
const ASKED_ROW = closed({ key: { type: 'string' }, etag: { type: ['string', 'null'] }, date: { type: ['string', 'null'] }, checked_at: { type: 'string' } }, [
  'key',
  'etag',
  'date',
  'checked_at',
]);
const FILE_SCHEMA = closed({
  repos: { type: 'array', items: ASKED_ROW },
  paths: { type: 'array', items: ASKED_ROW },
  remaining: { type: ['integer', 'null'] },
  reset_at: { type: ['string', 'null'] },
});
type AskedRow = Asked & { key: string };

/** The most of an answer of the commits API read (one commit's JSON is a few KiB). */
const MAX_ANSWER_BYTES = 256 << 10;

const REPO_EVERY_MS = 3_600_000;
/** Requests left unasked for a later hour (and for the operator's own calls with the same address). */
const RESERVE = 10;

export interface GithubDatesOptions {
  dataDir: string;
  nowMs: number;
  timeoutMs: number;
  /** Asked through the mirror, as every source is (SOURCES_MIRROR). */
  mirror?: string;
  token?: string;
  guard: HopGuard;
}

export class GithubDates {
  private readonly file: string;
  private readonly repos = new Map<string, Asked>();
  private readonly paths = new Map<string, Asked>();
  /** The API's own count of what is left this hour, and when it resets. */
  private remaining: number | null = null;
  private resetAt: string | null = null;
  private readonly inFlight = new Map<string, Promise<number | null>>();
  /** Requests this run made (the tests and `check:registry` count them). */
  asked = 0;

  constructor(private readonly o: GithubDatesOptions) {
    this.file = path.join(sourcesDir(o.dataDir), 'github.json');
    let doc: unknown = null;
    try {
      doc = JSON.parse(fs.readFileSync(this.file, 'utf8'));
    } catch {
      // None yet, or unreadable: asked again.
    }
    if (doc === null || bodyProblem(FILE_SCHEMA, doc) !== null) return;
    const d = doc as { repos?: AskedRow[]; paths?: AskedRow[]; remaining?: number | null; reset_at?: string | null };
    for (const { key, ...asked } of d.repos ?? []) this.repos.set(key, asked);
    for (const { key, ...asked } of d.paths ?? []) this.paths.set(key, asked);
    this.remaining = d.remaining ?? null;
    this.resetAt = d.reset_at ?? null;
  }

  /** The path's last commit (ms), asked when `fresh` (its bytes are new) or never asked before. */
  pathDate(f: GithubFile, fresh: boolean): Promise<number | null> {
    const key = `${f.repo}/${f.ref}/${f.path}`;
    const known = this.paths.get(key);
    // A path the API could not date is asked again an hour later, not at every refresh.
    if (known && !fresh && (known.date !== null || this.o.nowMs - Date.parse(known.checked_at) < REPO_EVERY_MS)) {
      return Promise.resolve(known.date ? Date.parse(known.date) : null);
    }
    const query = `path=${encodeURIComponent(f.path)}${f.ref === 'HEAD' ? '' : `&sha=${encodeURIComponent(f.ref)}`}&per_page=1`;
    return this.once(`p:${key}`, () => this.ask(this.paths, key, `https://api.github.com/repos/${f.repo}/commits?${query}`));
  }

  /** The repository's last commit (ms), asked at most once an hour. */
  repoDate(f: GithubFile): Promise<number | null> {
    const known = this.repos.get(f.repo);
    if (known && this.o.nowMs - Date.parse(known.checked_at) < REPO_EVERY_MS) return Promise.resolve(known.date ? Date.parse(known.date) : null);
    const query = f.ref === 'HEAD' ? 'per_page=1' : `sha=${encodeURIComponent(f.ref)}&per_page=1`;
    return this.once(`r:${f.repo}`, () => this.ask(this.repos, f.repo, `https://api.github.com/repos/${f.repo}/commits?${query}`));
  }

  save(): void {
    makeDirectory(path.dirname(this.file));
    const tmp = `${this.file}.${process.pid}.tmp`;
    const rows = (table: Map<string, Asked>): AskedRow[] => [...table].map(([key, asked]) => ({ key, ...asked }));
    fs.writeFileSync(tmp, JSON.stringify({ repos: rows(this.repos), paths: rows(this.paths), remaining: this.remaining, reset_at: this.resetAt }, null, 1));
    fs.renameSync(tmp, this.file);
  }

  private once(key: string, ask: () => Promise<number | null>): Promise<number | null> {
    let p = this.inFlight.get(key);
    if (!p) {
      p = ask();
      this.inFlight.set(key, p);
    }
    return p;
  }

  private async ask(table: Map<string, Asked>, key: string, url: string): Promise<number | null> {
    const known = table.get(key);
    const cached = known?.date ? Date.parse(known.date) : null;
    const resetMs = this.resetAt ? Date.parse(this.resetAt) : 0;
    if (this.remaining !== null && this.remaining <= RESERVE && this.o.nowMs < resetMs) return cached;
    const headers: Record<string, string> = { 'user-agent': USER_AGENT, accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' };
    if (known?.etag) headers['if-none-match'] = known.etag;
    if (this.o.token) headers.authorization = `Bearer ${this.o.token}`;
    this.asked++;
    let res: Response;
    try {
      res = await guardedFetch(this.o.mirror ? mirroredUrl(url, this.o.mirror) : url, { headers, signal: AbortSignal.timeout(this.o.timeoutMs) }, this.o.guard);
    } catch {
      // GitHub unreachable: what was known stands, and the content stays as dated.
      table.set(key, { etag: known?.etag ?? null, date: known?.date ?? null, checked_at: new Date(this.o.nowMs).toISOString() });
      return cached;
    }
    const remaining = Number(res.headers.get('x-ratelimit-remaining') ?? NaN);
    const reset = Number(res.headers.get('x-ratelimit-reset') ?? NaN);
    if (Number.isInteger(remaining)) this.remaining = remaining;
    if (Number.isFinite(reset)) this.resetAt = new Date(reset * 1000).toISOString();
    const checked_at = new Date(this.o.nowMs).toISOString();
    if (res.status === 304 && known) {
      await res.body?.cancel();
      table.set(key, { ...known, checked_at });
      return cached;
    }
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      table.set(key, { etag: known?.etag ?? null, date: known?.date ?? null, checked_at });
      return cached;
    }
    let date: string | null = null;
    try {
      const { text, whole } = await readCapped(res, MAX_ANSWER_BYTES);
      if (!whole) return cached;
      const list = JSON.parse(text) as { commit?: { committer?: { date?: string } } }[];
      const d = Array.isArray(list) ? list[0]?.commit?.committer?.date : undefined;
      if (typeof d === 'string' && Number.isFinite(Date.parse(d))) date = new Date(Date.parse(d)).toISOString();
    } catch {
      return cached;
    }
    table.set(key, { etag: res.headers.get('etag'), date, checked_at });
    return date ? Date.parse(date) : null;
  }
}
