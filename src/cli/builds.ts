// `ipsift build` (a new build, served and published) and `ipsift builds` (list, use, log, compare).

import { loadConfig } from '../config.js';
import { IpsiftError } from '../errors.js';
import { buildBefore, compareBuilds } from '../index/build-changes.js';
import { buildSummaries, listBuilds, readServingLog } from '../index/builds.js';
import type { BuildComparison } from '../index/compare.js';
import { serveBuild } from '../index/loader.js';
import { unknownProvidersLine } from '../model/providers.js';
import { buildAndPublish } from '../pipeline/pipeline.js';
import { updateTimeline } from '../history/timeline-file.js';
import { UsageError, parse, print } from './common.js';
import { HELP } from './help.js';

/**
 * `ipsift build`: a new build, made the serving one, its databases and index published to the
 * object store, so that what the command says it did (serving, published) is what downloads
 * and followers see. --no-publish stops before the store; --no-serve makes the build only.
 */
export async function build(args: string[]): Promise<void> {
  const { values } = parse(args, { 'no-publish': { type: 'boolean' }, 'no-serve': { type: 'boolean' } });
  if (values.help) return print(false, null, () => HELP.build);
  const serve = !values['no-serve'];
  const publish = serve && !values['no-publish'];
  const config = loadConfig(process.env);
  const {
    id,
    dir,
    manifest,
    publication,
    pruned,
    prune_error,
    publish_error,
    changes,
    build_ms,
    publish_ms,
    total_ms: total,
  } = await buildAndPublish(config, { serve, publish });
  // The build serves; its publication failed: an error for the command, saying which part failed.
  if (publish_error !== null) throw new IpsiftError('PUBLISH', `build ${id} serves, but publishing it failed: ${publish_error}`);
  print(values.json as boolean, { ...manifest, dir, serving: serve, publication, pruned, changes, build_ms, publish_ms, total_ms: total }, () => {
    const ranges = (r: Record<string, number | undefined>) =>
      Object.entries(r)
        .map(([c, n]) => `${c} ${n}`)
        .join(', ') || 'none';
    const i = manifest.index;
    return [
      `build ${id} → ${dir}`,
      `  ranges IPv4: ${ranges(manifest.ranges.v4)}`,
      `  ranges IPv6: ${ranges(manifest.ranges.v6)}`,
      `  index: ${i.v4} IPv4 + ${i.v6} IPv6 intervals, ${i.records} records, ${i.bytes} bytes`,
      ...(manifest.unknown_providers.length ? [`  ${unknownProvidersLine(manifest.unknown_providers)}`] : []),
      ...(changes ? [`  changed against ${changes.from}: ${changes.ranges} ranges ('ipsift builds compare ${changes.from} ${id}' shows them)`] : []),
      `  timings: ${Object.entries(manifest.timings_ms)
        .map(([k, v]) => `${k} ${v} ms`)
        .join(', ')}; build ${build_ms} ms${publication ? `, publish ${publish_ms} ms` : ''}, total ${total} ms`,
      serve
        ? `serving: running servers switch to ${id} within INDEX_POLL_MS`
        : `not serving (--no-serve): 'ipsift builds use ${id}' makes it the serving build`,
      publication
        ? `published: ${publication.artifacts} database files and the index to the ${config.objectStore.kind} store; downloads serve build ${id}`
        : serve
          ? `not published (--no-publish): downloads serve the last published build until 'ipsift publish'`
          : 'not published',
      ...(pruned.length ? [`removed ${pruned.length} older build(s) past KEEP_BUILDS=${config.keepBuilds}: ${pruned.join(', ')}`] : []),
      ...(prune_error ? [`older builds not removed: ${prune_error}`] : []),
    ].join('\n');
  });
}

export async function builds(args: string[]): Promise<void> {
  const { values, positionals } = parse(args);
  if (values.help) return print(false, null, () => HELP.builds);
  const dataDir = loadConfig(process.env).dataDir;
  if (positionals[0] === 'use') {
    if (positionals.length !== 2) throw new UsageError('builds use takes exactly one build id');
    if (!listBuilds(dataDir).includes(positionals[1])) throw new UsageError(`no build ${positionals[1]}`);
    await serveBuild(dataDir, positionals[1]);
    updateTimeline(dataDir, Date.now(), loadConfig(process.env).historyDays);
    return print(values.json as boolean, { current: positionals[1] }, () => `serving build is now ${positionals[1]}`);
  }
  if (positionals[0] === 'log') {
    const spans = readServingLog(dataDir).reverse();
    return print(values.json as boolean, spans, () =>
      spans.length ? spans.map((s) => `${s.build}\t${s.from} – ${s.to ?? 'now'}\t${s.node}`).join('\n') : 'no build has served here yet',
    );
  }
  if (positionals[0] === 'compare') {
    const ids = positionals.slice(1);
    const known = listBuilds(dataDir);
    if (ids.length < 1 || ids.length > 2) throw new UsageError('builds compare takes one build id (compared with the build before it) or two (from, to)');
    for (const id of ids) if (!known.includes(id)) throw new UsageError(`no build ${id}: 'ipsift builds' lists them`);
    const from = ids.length === 2 ? ids[0] : buildBefore(dataDir, ids[0]);
    if (from === null) throw new UsageError(`${ids[0]} is the oldest build on disk: name two builds to compare`);
    const to = ids[ids.length - 1];
    const c = compareBuilds(dataDir, from, to, 20);
    return print(values.json as boolean, c, () => comparisonText(c));
  }
  if (positionals.length) throw new UsageError(`unknown builds command ${positionals[0]}: use, log or compare`);
  const list = buildSummaries(dataDir);
  print(values.json as boolean, list, () =>
    list.length ? list.map((b) => `${b.current ? '*' : ' '} ${b.id}\t${b.created}\t${b.bytes} bytes`).join('\n') : 'no builds',
  );
}

/** A comparison as an operator reads it: a line per category that changed, then the first ranges. */
function comparisonText(c: BuildComparison): string {
  const lines = [`${c.from} → ${c.to}: ${c.ranges} ranges changed`];
  for (const [category, n] of Object.entries(c.categories)) {
    if (n.ranges === 0) continue;
    lines.push(`  ${category}: ${n.ranges} (${n.gained} gained, ${n.lost} lost, ${n.changed} with another detail; ${n.ipv4_addresses} IPv4 addresses)`);
  }
  const side = (v: Record<string, unknown> | null): string => (v === null ? 'not' : JSON.stringify(v));
  for (const e of c.examples) lines.push(`    ${e.category}	${e.first} – ${e.last}	${side(e.before)} → ${side(e.after)}`);
  if (c.more) lines.push(`    … and ${c.more} more (--json lists the first ${c.examples.length})`);
  return lines.join('\n');
}
