// The suites that run again on another side of a boundary: test/node-server.test.ts on
// node:http ('server'), test/threads.test.ts on two front-end threads ('threads'),
// test/cluster-stores.test.ts on PostgreSQL and Redis ('stores'). Each says which it is before
// importing them; a suite whose checks are not that boundary's (a store's faults in the
// threads' run, a parser's fuzzing on PostgreSQL) runs once, in its own file.

export type Boundary = 'server' | 'threads' | 'stores';

/** Marks this process as the run of the imported suites again on `boundary`. */
export function runningAgainOn(boundary: Boundary): void {
  process.env.IPSIFT_TEST_AGAIN = boundary;
}

/** The option of a suite or test that runs again only on `boundaries` (none: only in its own file). */
export function againOn(...boundaries: Boundary[]): { skip: string | false } {
  const now = process.env.IPSIFT_TEST_AGAIN as Boundary | undefined;
  if (now === undefined || boundaries.includes(now)) return { skip: false };
  return { skip: `not the ${now} boundary's checks: run once, in its own file` };
}
