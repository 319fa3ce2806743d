// What one callgrind dump counts, for the budget's workloads (instruction-budget.ts) and the
// whole server's (served.ts): its instructions, or its estimated cycles where callgrind
// simulated the caches and the branch predictor.

import fs from 'node:fs';

/**
 * Estimated cycles of a callgrind dump's totals, as KCachegrind estimates them (an L1 miss 10
 * cycles, a last-level miss 100) plus 15 a mispredicted branch. It repeats about as well as
 * the instruction count: the simulated L1 is indexed by the offset in a page, which address
 * randomisation leaves alone, and last-level misses are about one a request.
 */
export function cyclesOf(dump: string): number {
  const events = /^events: (.+)$/m.exec(dump)?.[1].split(' ') ?? [];
  const totals = /^summary: (.+)$/m.exec(dump)?.[1].split(' ').map(Number) ?? [];
  const of = (e: string): number => {
    const v = totals[events.indexOf(e)];
    if (v === undefined) throw new Error(`the callgrind dump counts no ${e}`);
    return v;
  };
  const l1 = of('I1mr') + of('D1mr') + of('D1mw');
  const ll = of('ILmr') + of('DLmr') + of('DLmw');
  return of('Ir') + 10 * l1 + 100 * ll + 15 * (of('Bcm') + of('Bim'));
}

/**
 * The count of the k-th dump of the main thread (thread 1) in callgrind's output `out`:
 * instructions, or with `cycles` estimated cycles. `what` names the workload in the error.
 */
export function countOfDump(out: string, k: number, what: string, cycles = false): number {
  const dump = `${out}.${k}-01`;
  const text = fs.existsSync(dump) ? fs.readFileSync(dump, 'utf8') : '';
  const summary = /^summary: (\d+)/m.exec(text);
  if (!summary) throw new Error(`${what}: callgrind wrote no measured stretch ${k} (${dump})`);
  return cycles ? cyclesOf(text) : Number(summary[1]);
}
