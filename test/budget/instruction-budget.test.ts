// The instruction budget (loadtest/instruction-budget.ts): the lookup paths, a batch of 1 000,
// a build and its exports, and keyed lookups on the whole server (in instructions and in
// estimated cycles), counted by callgrind, may not grow more than 2 % (a build 4 %) past the counts committed
// in loadtest/instruction-budget.json. A cost that is meant is accepted by writing the new
// counts (`npm run budget -- --write`) in the same commit.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BUDGETED, BUDGET_SLACK, compare, measureAll, readBudget, slackOf, valgrindVersion } from '../../loadtest/instruction-budget.js';
import { cyclesOf } from '../../loadtest/callgrind-dump.js';

const budget = readBudget();
const valgrind = await valgrindVersion();
/** Counts hold for one runtime and one valgrind: elsewhere the test has nothing to compare with. */
const skip =
  process.versions.bun !== undefined
    ? 'the budget is counted on Node'
    : valgrind === null
      ? 'valgrind is not installed'
      : process.version !== budget.node || valgrind !== budget.valgrind
        ? `the budget was counted on Node ${budget.node} with ${budget.valgrind} (here: ${process.version}, ${valgrind})`
        : false;

describe('instruction budget', { skip }, () => {
  test(`instructions (and the whole server's estimated cycles) per request, per batch and per build stay within ${BUDGET_SLACK * 100} % of the budget (${slackOf('build') * 100} % for a build)`, async (t) => {
    const counts = await measureAll();
    const over: string[] = [];
    for (const w of BUDGETED) {
      const line = compare(w, counts[w], budget.counts[w]);
      t.diagnostic(line);
      assert.ok(counts[w] > 0, line);
      if (!(counts[w] <= budget.counts[w] * (1 + slackOf(w))))
        over.push(line); // none yet counts as over
      else if (counts[w] < budget.counts[w] * (1 - slackOf(w)))
        t.diagnostic(`${w} is cheaper than its budget: lock the gain in with npm run budget -- --write`);
    }
    assert.deepEqual(over, [], 'over budget: find the cost, or accept it by committing the counts of npm run budget -- --write');
  });
});

describe('estimated cycles', () => {
  test("are the instructions plus 10 an L1 miss, 100 a last-level miss and 15 a mispredicted branch, from a dump's totals", () => {
    const dump = ['events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim', 'summary: 1000 400 300 7 5 3 1 2 4 90 6 20 2', 'fn=(1) main'].join('\n');
    assert.equal(cyclesOf(dump), 1000 + 10 * (7 + 5 + 3) + 100 * (1 + 2 + 4) + 15 * (6 + 2));
  });

  test('a dump counted without the simulation has none to give', () => {
    assert.throws(() => cyclesOf('events: Ir\nsummary: 1000\n'), /counts no I1mr/);
  });
});
