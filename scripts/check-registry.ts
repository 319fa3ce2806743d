// `npm run check:registry`: every registry URL fetched as a refresh fetches it, and judged
// against what its format reads. Run by hand or on a schedule where the Internet is reachable,
// never in CI (there is none there). Per source it reports: reachable (or why not), whether the
// layout is the one its format reads (the format detected from the content), entries, and when
// the content last changed as far as the upstream says (Last-Modified; for a GitHub file, the
// date of the last commit that touched it, from GitHub's API). Exits 1 when any source is
// unreachable or in a layout its format does not read.
//
//   npm run check:registry                      # straight to the upstreams
//   npm run check:registry -- --mirror <base>   # through a SOURCES_MIRROR-style mirror
//   HTTPS_PROXY=http://proxy:3128 npm run check:registry   # Node 24+: NODE_USE_ENV_PROXY=1
//   npm run check:registry -- --json            # one JSON object per source

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { detectFormat, formatByName } from '../src/feeds/formats.js';
import { loadRegistry, mirroredUrl } from '../src/feeds/registry.js';
import { fetchSource, findLink } from '../src/feeds/source-fetch.js';
import type { Source } from '../src/feeds/sources.js';

export interface RegistryCheck {
  name: string;
  url: string;
  reachable: boolean;
  /** Why not reachable, or why the layout is not the format's. */
  problem: string | null;
  /** The format the content reads as (null: unreadable). */
  layout: string | null;
  layout_ok: boolean;
  entries: number;
  last_modified: string | null;
  /** For a raw.githubusercontent.com file: when its last commit was (GitHub's API). */
  last_commit: string | null;
}

async function lastCommit(url: string, timeoutMs: number): Promise<string | null> {
  const u = new URL(url);
  if (u.host !== 'raw.githubusercontent.com') return null;
  const [owner, repo, ref, ...rest] = u.pathname.slice(1).split('/');
  const api = `https://api.github.com/repos/${owner}/${repo}/commits?path=${encodeURIComponent(rest.join('/'))}&sha=${ref}&per_page=1`;
  try {
    const res = await fetch(api, {
      signal: AbortSignal.timeout(timeoutMs),
      headers: { accept: 'application/vnd.github+json', 'user-agent': 'ipsift registry check' },
    });
    if (!res.ok) return null;
    const [c] = (await res.json()) as { commit?: { committer?: { date?: string } } }[];
    return c?.commit?.committer?.date ?? null;
  } catch {
    return null;
  }
}

export async function checkSource(s: Source, o: { mirror?: string; timeoutMs: number; dir: string }): Promise<RegistryCheck> {
  const through = (url: string): string => (o.mirror ? mirroredUrl(url, o.mirror) : url);
  const out: RegistryCheck = {
    name: s.name,
    url: s.url!,
    reachable: false,
    problem: null,
    layout: null,
    layout_ok: false,
    entries: 0,
    last_modified: null,
    last_commit: null,
  };
  const target = path.join(o.dir, s.name);
  try {
    const url = s.find ? await findLink(through(s.url!), s.find, o.timeoutMs) : s.url!;
    const got = await fetchSource({ url: through(url), target, timeoutMs: o.timeoutMs, maxBytes: s.maxBytes ?? 256 << 20 });
    out.reachable = true;
    if (got.kind === 'fetched') out.last_modified = got.lastModified;
  } catch (e) {
    out.problem = (e as Error).message;
    return out;
  }
  const text = fs.readFileSync(target, 'utf8');
  const detected = detectFormat(text);
  out.layout = detected instanceof Error ? null : detected.name;
  // A plain list is what no other format claims.
  out.layout_ok = out.layout === (s.format === 'list' ? 'list' : s.format);
  if (!out.layout_ok) out.problem = `the content reads as ${out.layout ?? `nothing known (${(detected as Error).message})`}, not ${s.format}`;
  try {
    out.entries = formatByName(s.format)?.rows({ file: target, text }).length ?? 0;
  } catch (e) {
    out.problem ??= (e as Error).message;
  }
  out.last_commit = o.mirror ? null : await lastCommit(s.url!, o.timeoutMs);
  return out;
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  const args = process.argv.slice(2);
  const mirror = args.includes('--mirror') ? args[args.indexOf('--mirror') + 1] : undefined;
  const json = args.includes('--json');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ipsift-check-registry-'));
  let bad = 0;
  try {
    for (const s of loadRegistry()) {
      const c = await checkSource(s, { mirror, timeoutMs: 60_000, dir });
      if (!c.reachable || !c.layout_ok) bad++;
      if (json) console.log(JSON.stringify(c));
      else {
        const changed = c.last_commit ?? c.last_modified ?? 'unknown';
        console.log(
          `${c.reachable && c.layout_ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.reachable ? `${c.layout ?? '?'}, ${c.entries} entries, content changed ${changed}` : 'unreachable'}${c.problem ? ` — ${c.problem}` : ''}`,
        );
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  process.exitCode = bad > 0 ? 1 : 0;
}
