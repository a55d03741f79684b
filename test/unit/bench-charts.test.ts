/**
 * The bench's charts (bench/charts.ts over bench/svg.ts): from a run's cells, the three SVGs, each
 * naming every library it compares, with the numbers of the cells it was given and nothing else.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type BenchResults, charts } from '../../bench/charts.js';

const cell = (label: string, clients: number, acquisitionsPerS: number, acquirersPerProcess = 1) => ({
  label,
  tuned: false,
  limit: 1,
  servers: 1,
  clients,
  acquirersPerProcess,
  csMs: 0,
  acquisitionsPerS,
  waitMs: { p50: 0.5, p99: 12, max: 1_977 },
});

const results: BenchResults = {
  startedAt: '2026-11-27T18:00:00.000Z',
  cells: [
    cell('Locksmith FairMutex', 2, 7_400),
    cell('Locksmith FairMutex', 10, 4_142),
    cell('redis-semaphore <Mutex> & co', 2, 9_000),
    cell('redis-semaphore <Mutex> & co', 10, 7_511),
    { ...cell('Locksmith Semaphore', 10, 3_846), limit: 3 },
  ],
  pxcCells: [cell('Locksmith Mutex', 4, 44_621, 25)],
};

test('three charts: acquisitions by clients, the wait distribution, the P × C cells', () => {
  const svgs = charts(results);
  assert.deepEqual(Object.keys(svgs), [
    'acquisitions-by-clients.svg',
    'wait-distribution.svg',
    'pxc-cells.svg',
  ]);
  for (const [name, svg] of Object.entries(svgs)) {
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>[\s\S]*<\/svg>\n$/, name);
    assert.match(svg, /2026-11-27/, `${name} is dated by its run`);
  }
  const lines = svgs['acquisitions-by-clients.svg'] as string;
  assert.match(lines, /Locksmith FairMutex/);
  assert.match(lines, /redis-semaphore &lt;Mutex&gt; &amp; co/, 'names are escaped');
  assert.doesNotMatch(lines, /Locksmith Semaphore/, 'only one-holder locks are compared');
  assert.equal(lines.match(/<polyline/g)?.length, 2);
  const waits = svgs['wait-distribution.svg'] as string;
  assert.match(waits, /Locksmith FairMutex, max: 1\.977k/);
  assert.match(svgs['pxc-cells.svg'] as string, /Locksmith Mutex, 4×25/);
});

test('no cells, no charts', () => {
  assert.deepEqual(charts({ startedAt: '2026-11-27T18:00:00.000Z', cells: [], pxcCells: [] }), {});
});
