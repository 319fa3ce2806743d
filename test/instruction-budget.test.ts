// The instruction budget (loadtest/instruction-budget.ts): the lookup paths, a batch of 1 000,
// a build and its exports, and keyed lookups on the whole server, counted by callgrind, may
// not grow more than 2 % past the counts committed in loadtest/instruction-budget.json. A cost that is meant is accepted by writing
// the new counts (`npm run budget -- --write`) in the same commit.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BUDGETED, BUDGET_SLACK, compare, measureAll, readBudget, valgrindVersion } from '../loadtest/instruction-budget.js';

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
  test(`instructions per request, per batch and per build stay within ${BUDGET_SLACK * 100} % of the budget`, async (t) => {
    const counts = await measureAll();
    const over: string[] = [];
    for (const w of BUDGETED) {
      const line = compare(w, counts[w], budget.counts[w]);
      t.diagnostic(line);
      assert.ok(counts[w] > 0, line);
      if (!(counts[w] <= budget.counts[w] * (1 + BUDGET_SLACK))) over.push(line); // none yet counts as over
      else if (counts[w] < budget.counts[w] * (1 - BUDGET_SLACK)) t.diagnostic(`${w} is cheaper than its budget: lock the gain in with npm run budget -- --write`);
    }
    assert.deepEqual(over, [], 'over budget: find the cost, or accept it by committing the counts of npm run budget -- --write');
  });
});
