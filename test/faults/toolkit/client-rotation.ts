/**
 * Which client library each fault-suite worker uses in each scenario run. The pool has a fixed
 * number of workers (4 by default), usually fewer than there are client kinds (7), so a fixed
 * `worker index % kinds` would leave some kinds out of the suite for good. Rotating by the run
 * number gives every kind its turn: with 4 workers and 7 kinds, every 7 runs use each kind 4 times.
 */
export function clientKindIndex(
  workerIndex: number,
  runNumber: number,
  poolSize: number,
  kindCount: number,
): number {
  return (workerIndex + runNumber * poolSize) % kindCount;
}
