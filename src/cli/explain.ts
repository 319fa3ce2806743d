// `ipsift explain <ip>`: every feed range that covers an address, and the rule that decided;
// with --at, what the service answered at that time (the timeline of answers) and which build.

import { explainAddress } from '../build/explain.js';
import { loadConfig } from '../config.js';
import { UsageError, parse, print } from './common.js';
import { HELP } from './help.js';
import { asOfAnswer, parseAt } from '../history/as-of.js';
import { readTimeline } from '../history/timeline-file.js';
import { loadIndexFile } from '../index/loader.js';
import { readCurrentBuildId } from '../index/builds.js';
import { INDEX_FILE, buildDir } from '../data-dir.js';
import { TIER_MAX } from '../model/projection.js';
import { NOT_ADDRESS, ParsedAddress, parseAddress } from '../net/address.js';
import path from 'node:path';

/**
 * `explain <ip> --at <time>`: the answer the timeline keeps for that time, on the widest plan,
 * with the build that served then. The feeds of then are not kept, so no evidence is shown.
 */
async function explainAsOf(ip: string, at: string, json: boolean): Promise<void> {
  const dataDir = loadConfig(process.env).dataDir;
  const p = new ParsedAddress();
  if (parseAddress(ip, 0, ip.length, p) === NOT_ADDRESS) throw new UsageError(`not an IP address: ${JSON.stringify(ip)}`);
  const when = parseAt(encodeURIComponent(at), Date.now());
  if ('refused' in when) throw new UsageError(when.refused);
  const timeline = readTimeline(dataDir);
  const current = readCurrentBuildId(dataDir);
  if (timeline === null || current === null) throw new UsageError('no history is kept here yet: it starts with the first build that serves');
  const { index } = await loadIndexFile(path.join(buildDir(dataDir, current), INDEX_FILE));
  const found = asOfAnswer(p, timeline, index, TIER_MAX, when.seconds);
  if ('outside' in found) throw new UsageError(`--at is outside the history kept: ${found.outside}`);
  const answer = JSON.parse(found.body.toString('utf8')) as Record<string, unknown>;
  const build = timeline.spanAt(when.seconds)?.build ?? null;
  print(
    json,
    { at: new Date(when.seconds * 1000).toISOString(), build, answer },
    () => `${answer.ip} as of ${at}: build ${build} (serving from ${answer.as_of}) answered ${JSON.stringify(answer)}`,
  );
}

export function explain(args: string[]): void | Promise<void> {
  const { values, positionals } = parse(args, { at: { type: 'string' } });
  if (values.help) return print(false, null, () => HELP.explain);
  if (positionals.length !== 1) throw new UsageError('explain takes exactly one address');
  if (typeof values.at === 'string') return explainAsOf(positionals[0], values.at, values.json === true);
  const e = explainAddress(loadConfig(process.env).dataDir, positionals[0]);
  if (e === null) throw new UsageError(`not an IP address: ${JSON.stringify(positionals[0])}`);
  print(values.json as boolean, e, () => {
    const lines = [`${e.ip}${e.bogon ? ': a bogon, answered without a lookup (every flag false)' : ''}`];
    const cats = Object.entries(e.categories);
    if (cats.length === 0) lines.push('  no feed covers it: every flag false');
    for (const [category, c] of cats) {
      lines.push(`  ${category}: ${c.answer === null ? `not ${category}` : `is_${category} ${JSON.stringify(c.answer)}`} — ${c.rule}`);
      for (const k of c.claims) {
        lines.push(`      ${k.feed}\t${k.evidence}\tpriority ${k.priority}\t${k.network}\t${k.detail === null ? `not ${category}` : JSON.stringify(k.detail)}`);
        if (k.source)
          lines.push(
            `        from ${k.source.url ?? '(unknown)'}, fetched ${k.source.fetched_at ?? '-'}, content of ${k.source.changed_at ?? 'no known date'}${k.source.dated_by ? ` (by ${k.source.dated_by})` : ''}, confirmed ${k.source.confirmed_at ?? '-'}`,
          );
      }
    }
    return lines.join('\n');
  });
}
