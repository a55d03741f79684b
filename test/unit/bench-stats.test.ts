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
