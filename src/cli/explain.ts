// `ipsift explain <ip>`: every feed range that covers an address, and the rule that decided.

import { explainAddress } from '../build/explain.js';
import { loadConfig } from '../config.js';
import { UsageError, parse, print } from './common.js';
import { HELP } from './help.js';

export function explain(args: string[]): void {
  const { values, positionals } = parse(args);
  if (values.help) return print(false, null, () => HELP.explain);
  if (positionals.length !== 1) throw new UsageError('explain takes exactly one address');
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
