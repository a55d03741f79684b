/**
 * The one retry schedule (src/backoff.ts): doubling, capped, jittered, with an injected random.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Backoff } from '../../src/backoff.js';
import { SPLIT_BACKOFF_MAX_MS } from '../../src/redlock/quorum.js';

describe('Backoff', () => {
  test('doubles from firstMs up to maxMs, and starts over on reset()', () => {
    const backoff = new Backoff({ firstMs: 5, maxMs: 50 });
    assert.deepEqual(
      Array.from({ length: 6 }, () => backoff.next()),
      [5, 10, 20, 40, 50, 50],
    );
    assert.equal(backoff.steps, 6);
    backoff.reset();
    assert.equal(backoff.steps, 0);
    assert.equal(backoff.next(), 5);
  });

  test("'half' jitter takes 50-100 % of the step, never under 1 ms (polling without pub/sub)", () => {
    const low = new Backoff({ firstMs: 10, maxMs: 250, jitter: 'half', random: () => 0 });
    assert.deepEqual([low.next(), low.next(), low.next()], [5, 10, 20]);
    const high = new Backoff({ firstMs: 10, maxMs: 250, jitter: 'half', random: () => 0.999 });
    assert.deepEqual([high.next(), high.next()], [9, 19]);
    assert.equal(new Backoff({ firstMs: 1, maxMs: 1, jitter: 'half', random: () => 0 }).next(), 1);
  });

  test("'full' jitter in attempt units: a Redlock call's split votes in a row", () => {
    // The wait after the n-th split in a row: random × min(cap, attempt duration × 2^n).
    const at = (random: number, splitsInARow: number, attemptMs = 2) => {
      const splits = new Backoff({
        firstMs: 1,
        maxMs: SPLIT_BACKOFF_MAX_MS,
        jitter: 'full',
        random: () => random,
      });
      for (let i = 0; i < splitsInARow; i += 1) splits.next(Math.max(1, attemptMs));
      return splits.next(Math.max(1, attemptMs));
    };
    assert.equal(at(0, 0), 0);
    assert.equal(at(0.99, 0), 1, 'first split: within one attempt time');
    assert.equal(at(0.99, 1), 3);
    assert.equal(at(0.99, 3), 15);
    assert.equal(at(0.99, 30), SPLIT_BACKOFF_MAX_MS - 1, 'capped');
    assert.equal(at(0.5, 0, 0), 0, 'an attempt under 1 ms counts as 1 ms');
    assert.equal(at(0.5, 2, 0.2), 2);
  });
});
