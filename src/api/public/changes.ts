// GET /api/v1/changes?since=<cursor>: the feed of what changed, read from the timeline of
// answers (history/): in order, a page at a time, each range whose answer changed when a build
// began to serve, with the build, the time, and per category of the caller's plan its answer
// before and after. `next` is the cursor of the following page; asking again with the last
// `next` brings what changed since, so a reader that keeps its cursor misses nothing and
// reads nothing twice, across builds and restarts. A key with the changes.read scope, of a
// plan that keeps history (scale, max), as for lookups as of a time.

import { formatAddress } from '../../net/network.js';
import type { HttpRequest, HttpResponse } from '../../http/server/types.js';
import { sendJson, sendRc } from '../../http/reply.js';
import type { RouteTable } from '../../http/routes.js';
import { RC } from '../../wire/errors.js';
import { CATEGORIES } from '../../model/categories.js';
import { TIER_FIELDS, TIER_SCALE } from '../../model/projection.js';
import type { ChangeCursor, Content, RangeChangeOf } from '../../history/timeline.js';
import type { TimelineReader } from '../../history/timeline-file.js';
import { Gate } from '../admission/gate.js';
import type { Edge } from '../admission/edge.js';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;

/** A cursor as text: span number, family, first address in hex (`12.4.51070000`); `0` is the start. */
export function cursorText(c: ChangeCursor | null): string {
  return c === null ? '0' : `${c.span}.${c.family}.${c.start.toString(16)}`;
}

function parseCursor(text: string): ChangeCursor | null | undefined {
  if (text === '0') return null;
  const m = /^(\d{1,9})\.(4|6)\.([0-9a-f]{1,32})$/.exec(text);
  if (m === null) return undefined;
  return { span: Number(m[1]), family: Number(m[2]) as 4 | 6, start: BigInt(`0x${m[3]}`) };
}

/** Each category of the caller's plan: its detail ({} where the plan shows none), or null when not in it. */
function categoriesOf(c: Content | null, tier: number): Map<string, string> {
  const out = new Map<string, string>();
  const all = c === null || c.text === '' ? {} : (JSON.parse(`{${c.text.slice(1)}}`) as Record<string, unknown>);
  const fields = TIER_FIELDS[tier];
  for (const cat of fields.flags) {
    const k = CATEGORIES.indexOf(cat);
    const inIt = c !== null && (c.mask & (1 << k)) !== 0;
    out.set(cat, inIt ? JSON.stringify(fields.details.includes(cat) ? (all[cat] ?? {}) : {}) : 'null');
  }
  return out;
}

/** A change as the caller's plan sees it: null when nothing it shows changed. */
function shown(ch: RangeChangeOf, tier: number): Record<string, unknown> | null {
  const before = categoriesOf(ch.before, tier);
  const after = categoriesOf(ch.after, tier);
  const categories: Record<string, unknown> = {};
  for (const [cat, b] of before) {
    const a = after.get(cat)!;
    if (a !== b) categories[cat] = { before: JSON.parse(b), after: JSON.parse(a) };
  }
  if (Object.keys(categories).length === 0) return null;
  return {
    first: formatAddress(ch.family, ch.first),
    last: formatAddress(ch.family, ch.last),
    build: ch.build,
    at: new Date(ch.from * 1000).toISOString().replace('.000Z', 'Z'),
    categories,
  };
}

export class ChangesApi {
  constructor(
    private readonly gate: Gate,
    private readonly timelines: TimelineReader,
  ) {}

  register(routes: RouteTable, edge: Edge): void {
    routes.get('/api/v1/changes', (res, req) => this.page(res, req, edge), { family: 'account', compress: true });
  }

  private page(res: HttpResponse, req: HttpRequest, edge: Edge): void {
    const { metrics } = edge;
    const now = edge.clock.now();
    const c = this.gate.caller(Gate.keyOf(req), edge.client.of(res, req), now);
    if (c === null) return sendRc(res, RC.UNAUTHORIZED, 'an API key with the changes.read scope is required', metrics);
    if (!('key' in c)) return sendRc(res, c.status === 403 ? RC.FORBIDDEN : c.status === 503 ? RC.UNAVAILABLE : RC.UNAUTHORIZED, c.message, metrics);
    if (!c.key.scopes.includes('changes.read')) return sendRc(res, RC.UNAUTHORIZED, 'this key lacks the changes.read scope: make a key with it', metrics);
    if (c.plan.fieldTier < TIER_SCALE) return sendRc(res, RC.FORBIDDEN, 'the change feed is not in this plan: the scale and max plans include it', metrics);
    const query = new URLSearchParams(req.getQuery() ?? '');
    const unknown = [...query.keys()].find((k) => k !== 'since' && k !== 'limit' && k !== 'apikey');
    if (unknown !== undefined) return sendRc(res, RC.BAD_REQUEST, `unknown parameter ${JSON.stringify(unknown.slice(0, 40))}: since and limit only`, metrics);
    const since = parseCursor(query.get('since') ?? '0');
    if (since === undefined) return sendRc(res, RC.BAD_REQUEST, 'since must be 0 or the next of an earlier page', metrics);
    const limitText = query.get('limit');
    const limit = limitText === null ? DEFAULT_LIMIT : /^\d{1,4}$/.test(limitText) ? Math.min(MAX_LIMIT, Number(limitText)) : 0;
    if (limit < 1) return sendRc(res, RC.BAD_REQUEST, `limit must be a whole number from 1 (at most ${MAX_LIMIT} are taken)`, metrics);
    const timeline = this.timelines.get(now);
    if (timeline === null) return sendJson(res, 200, { changes: [], next: cursorText(since) }, metrics);
    if (since !== null && since.span < timeline.spanNumbers.first)
      return sendRc(res, RC.BAD_REQUEST, 'since names changes older than the history kept (HISTORY_DAYS): start again from 0', metrics);
    const page = timeline.changesSince(since, limit);
    const changes = page.changes.map((ch) => shown(ch, c.plan.fieldTier)).filter((x) => x !== null);
    sendJson(res, 200, { changes, next: cursorText(page.next) }, metrics);
  }
}
