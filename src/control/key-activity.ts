// Which organisations and keys are served and refused, and when each key was last used and
// from where: the front-end threads' counts (KeyCache.harvest, every HARVEST_MS) added up in
// ten-minute spans for a day. The request path only counts on the caller it already holds;
// everything here runs on the main thread every few seconds. Kept across restarts in a small
// JSON file beside the traffic history (written every minute and at the end).

import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log.js';
import { reasonOf } from '../errors.js';
import type { KeyTally } from './auth.js';
import { type BodySchema, bodyProblem, closed } from '../wire/body-schema.js';

/** How often a front end hands over what its callers counted. */
export const HARVEST_MS = 10_000;
const SPAN_MS = 10 * 60_000;
/** A day of spans, and the one under way. */
const KEEP_SPANS = 24 * 6 + 1;
/** Keys counted in one span at most: past it, new keys go uncounted until the next span. */
const MAX_KEYS_PER_SPAN = 20_000;
/** Keys whose last use is kept at most (the least recently used are forgotten first). */
const MAX_LAST_USES = 100_000;
/** Key counts kept over all spans at most: the memory and the file stay bounded whoever makes keys. */
const MAX_ENTRIES = 200_000;

const COUNT: BodySchema = { type: 'integer', minimum: 0 };
/** The file, checked whole when read back: anything else is started afresh, never half read. */
const FILE_SCHEMA = closed(
  {
    spans: {
      type: 'array',
      items: closed(
        {
          start: { type: 'integer', minimum: 0 },
          keys: {
            type: 'array',
            items: closed({ id: { type: 'string' }, org_id: { type: 'string' }, requests: COUNT, limited: COUNT, refused: COUNT }, [
              'id',
              'org_id',
              'requests',
              'limited',
              'refused',
            ]),
          },
        },
        ['start', 'keys'],
      ),
    },
    last_use: {
      type: 'array',
      items: closed({ id: { type: 'string' }, at_ms: COUNT, from: { type: 'string' } }, ['id', 'at_ms', 'from']),
    },
  },
  ['spans', 'last_use'],
);

interface ActivityFile {
  spans: { start: number; keys: { id: string; org_id: string; requests: number; limited: number; refused: number }[] }[];
  last_use: { id: string; at_ms: number; from: string }[];
}

interface Counts {
  requests: number;
  limited: number;
  refused: number;
}

/** One organisation's or key's share of a window. */
export interface ActivityCounts extends Counts {
  id: string;
}

export interface LastUse {
  atMs: number;
  from: string;
}

export class KeyActivity {
  /** Per span (its start), per key: its organisation and counts. */
  private readonly spans = new Map<number, Map<string, Counts & { orgId: string }>>();
  private readonly lastUse = new Map<string, LastUse>();
  /** Key counts over all spans. */
  private entries = 0;

  constructor(
    /** The file it is kept in across restarts (null: memory only). */
    private readonly file: string | null = null,
    private readonly log?: Logger,
  ) {
    if (file) this.load(file);
  }

  /** Adds what a front end harvested at nowMs. */
  add(tallies: readonly KeyTally[], nowMs: number): void {
    const start = nowMs - (nowMs % SPAN_MS);
    let span = this.spans.get(start);
    if (span === undefined) {
      span = new Map();
      this.spans.set(start, span);
      for (const [s, old] of this.spans) {
        if (s > start - KEEP_SPANS * SPAN_MS) continue;
        this.entries -= old.size;
        this.spans.delete(s);
      }
    }
    for (const t of tallies) {
      let c = span.get(t.keyId);
      if (c === undefined) {
        if (span.size >= MAX_KEYS_PER_SPAN || this.entries >= MAX_ENTRIES) continue;
        c = { orgId: t.orgId, requests: 0, limited: 0, refused: 0 };
        span.set(t.keyId, c);
        this.entries++;
      }
      c.requests += t.requests;
      c.limited += t.limited;
      c.refused += t.refused;
      const known = this.lastUse.get(t.keyId);
      if (t.usedAtMs > 0 && (known === undefined || t.usedAtMs > known.atMs)) {
        this.lastUse.delete(t.keyId); // re-inserted last: the map's order is least recent first
        this.lastUse.set(t.keyId, { atMs: t.usedAtMs, from: t.usedFrom });
        if (this.lastUse.size > MAX_LAST_USES) this.lastUse.delete(this.lastUse.keys().next().value!);
      }
    }
  }

  /** When the key was last used and from where, as far as this server saw (null: not in the last day's memory). */
  lastUseOf(keyId: string): LastUse | null {
    return this.lastUse.get(keyId) ?? null;
  }

  /**
   * The organisations and keys of the last windowMs (whole ten-minute spans), most refused
   * first (429s and other 4xx together), then by requests; `limit` of each at most.
   */
  top(windowMs: number, nowMs: number, limit = 10): { organizations: ActivityCounts[]; keys: (ActivityCounts & { org_id: string })[] } {
    const from = nowMs - windowMs;
    const keys = new Map<string, Counts & { orgId: string }>();
    const orgs = new Map<string, Counts>();
    for (const [start, span] of this.spans) {
      if (start + SPAN_MS <= from) continue;
      for (const [keyId, c] of span) {
        add(keys, keyId, c, () => ({ orgId: c.orgId, requests: 0, limited: 0, refused: 0 }));
        add(orgs, c.orgId, c, () => ({ requests: 0, limited: 0, refused: 0 }));
      }
    }
    const order = (a: Counts, b: Counts): number => b.limited + b.refused - (a.limited + a.refused) || b.requests - a.requests;
    return {
      organizations: [...orgs]
        .map(([id, c]) => ({ id, ...c }))
        .sort(order)
        .slice(0, limit),
      keys: [...keys]
        .map(([id, { orgId, ...c }]) => ({ id, org_id: orgId, ...c }))
        .sort(order)
        .slice(0, limit),
    };
  }

  /** Writes the file (a new one renamed over the old: never half written). */
  save(): void {
    if (!this.file) return;
    const doc: ActivityFile = {
      spans: [...this.spans].map(([start, m]) => ({
        start,
        keys: [...m].map(([id, c]) => ({ id, org_id: c.orgId, requests: c.requests, limited: c.limited, refused: c.refused })),
      })),
      last_use: [...this.lastUse].map(([id, u]) => ({ id, at_ms: u.atMs, from: u.from })),
    };
    try {
      fs.mkdirSync(path.dirname(this.file), { recursive: true });
      const tmp = `${this.file}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, JSON.stringify(doc), { mode: 0o600 });
      fs.renameSync(tmp, this.file);
    } catch (e) {
      this.log?.warn('key activity not saved: it is kept in memory', { file: this.file, reason: reasonOf(e) });
    }
  }

  private load(file: string): void {
    let doc: unknown;
    try {
      doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') this.log?.warn('key activity not read back: starting afresh', { file, reason: reasonOf(e) });
      return;
    }
    const problem = bodyProblem(FILE_SCHEMA, doc);
    if (problem !== null) {
      this.log?.warn('key activity not read back: starting afresh', { file, reason: problem });
      return;
    }
    const { spans, last_use } = doc as ActivityFile;
    for (const { start, keys } of spans) {
      const span = new Map<string, Counts & { orgId: string }>();
      for (const k of keys) {
        if (this.entries >= MAX_ENTRIES) break;
        span.set(k.id, { orgId: k.org_id, requests: k.requests, limited: k.limited, refused: k.refused });
        this.entries++;
      }
      this.spans.set(start, span);
    }
    for (const u of last_use.slice(-MAX_LAST_USES)) this.lastUse.set(u.id, { atMs: u.at_ms, from: u.from });
  }
}

function add<T extends Counts>(into: Map<string, T>, id: string, c: Counts, fresh: () => T): void {
  let t = into.get(id);
  if (t === undefined) into.set(id, (t = fresh()));
  t.requests += c.requests;
  t.limited += c.limited;
  t.refused += c.refused;
}
