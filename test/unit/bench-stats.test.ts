/** The benchmark's order statistics: more than `limit` critical sections at once is a violation. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Acquisition, orderStats } from '../../bench/stats.js';

const at = (client: number, enteredAt: number, leftAt: number): Acquisition => ({
  client,
  calledAt: enteredAt - 1,
  enteredAt,
  leftAt,
});

test('a lock: any two critical sections at once are a violation', () => {
  assert.equal(orderStats([at(0, 0, 10), at(1, 10, 20)]).violations, 0);
  assert.equal(orderStats([at(0, 0, 10), at(1, 5, 20)]).violations, 1);
});

test('a semaphore of 3: three at once are fine, a fourth is a violation', () => {
  const three = [at(0, 0, 10), at(1, 1, 10), at(2, 2, 10)];
  assert.equal(orderStats(three, 3).violations, 0);
  assert.equal(orderStats([...three, at(3, 3, 10)], 3).violations, 1);
  assert.equal(orderStats([...three, at(3, 10, 12)], 3).violations, 0, 'after one left');
});

test('several acquirers per process: shares to the same acquirer and to the same process', () => {
  const of = (client: number, process: number, enteredAt: number): Acquisition => ({
    ...at(client, enteredAt, enteredAt + 1),
    process,
  });
  // Acquirers 0 and 1 live in process 0, acquirer 2 in process 1.
  const stats = orderStats([of(0, 0, 0), of(0, 0, 2), of(1, 0, 4), of(2, 1, 6), of(2, 1, 8)]);
  assert.equal(stats.violations, 0);
  assert.equal(stats.sameHolderShare, 2 / 4);
  assert.equal(stats.sameProcessShare, 3 / 4);
  assert.equal(
    orderStats([of(0, 0, 0), of(1, 0, 0.5)]).violations,
    1,
    'two acquirers of one process at once',
  );
});
