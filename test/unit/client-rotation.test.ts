import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientKindIndex } from '../faults/toolkit/client-rotation.js';

/** Kind indexes the workers of a pool of `poolSize` use in runs 0..runs-1. */
function used(poolSize: number, kindCount: number, runs: number): number[][] {
  return Array.from({ length: runs }, (_, run) =>
    Array.from({ length: poolSize }, (_, worker) => clientKindIndex(worker, run, poolSize, kindCount)),
  );
}

test('four workers over six client kinds: every kind within two runs, each twice every three', () => {
  const runs = used(4, 6, 3);
  assert.deepEqual(runs, [
    [0, 1, 2, 3],
    [4, 5, 0, 1],
    [2, 3, 4, 5],
  ]);
  assert.deepEqual(new Set(runs.slice(0, 2).flat()).size, 6);
});

test('within one run the workers use different kinds whenever there are enough kinds', () => {
  for (const [poolSize, kindCount] of [
    [4, 6],
    [2, 6],
    [6, 6],
    [3, 7],
  ] as const) {
    for (const workers of used(poolSize, kindCount, 10)) assert.equal(new Set(workers).size, poolSize);
  }
});

test('more workers than kinds: every kind in every run', () => {
  for (const workers of used(8, 6, 5)) assert.equal(new Set(workers).size, 6);
});
