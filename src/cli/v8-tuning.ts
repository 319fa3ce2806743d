// The V8 settings `ipsift serve` runs with, set before any request path is compiled (cli/main.ts).
// They are the process's: the front-end threads, the batch workers and the daily build's
// threads run under them. `ipsift build` and the other commands keep V8's own.

import v8 from 'node:v8';

/**
 * TurboFan's cumulative inlining budget, in bytes of bytecode (V8's default: 920). A keyed
 * lookup is one route handler that inlines the gate, the key cache, the meter, the index walk
 * and the answer writer; at the default the budget ran out part way through. Measured with the
 * instruction budget's harness (valgrind, Node 20): keyed 7 053 → 6 297 instructions a request,
 * keyless 5 957 → 5 222, a batch of 1 000 5.23 M → 4.77 M. A build of 1 000 ranges with every
 * export spends 15 % more, compiling more; a 1 M-range build took the same time either way
 * (37.1-39.8 s, alternating), so serve's daily build keeps it and the build command goes without.
 */
export const INLINING_BUDGET_BYTES = 3000;

/** Sets ipsift's V8 settings; nothing on Bun, which runs JavaScriptCore. */
export function tuneV8(): void {
  if (process.versions.bun !== undefined) return;
  v8.setFlagsFromString(`--max-inlined-bytecode-size-cumulative=${INLINING_BUDGET_BYTES}`);
}
