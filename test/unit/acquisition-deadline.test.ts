/**
 * An attempt still in flight when the caller's `timeoutMs` runs out is a timeout, not Redis being
 * unavailable, even when the timer fires before the clock reads the deadline (timers have 1 ms
 * granularity). Found by the "Coming from…" table's checks: `acquire({ timeoutMs: 100 })` on a held
 * lock rejected about once in a hundred with RedisUnavailableError ("no reply in time").
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LockTimeoutError } from '../../src/errors.js';
import { acquireWithWaiting } from '../../src/primitives/acquisition.js';

test('the deadline passing while an attempt is in flight rejects with LockTimeoutError', async () => {
  // A clock running at 90 % of real time: every timer fires before the clock reaches its instant,
  // as a timer rounded to whole milliseconds does by a fraction of one.
  const start = performance.now();
  const slowClock = { now: () => start + (performance.now() - start) * 0.9 };
  let attempts = 0;
  await assert.rejects(
    acquireWithWaiting({
      name: 'unit',
      token: 'tok',
      ttlMs: 30_000,
      driftFactor: 0.01,
      wake: undefined,
      timeoutMs: 50,
      retries: Number.POSITIVE_INFINITY,
      retryDelayMs: Number.POSITIVE_INFINITY,
      retryJitterMs: 0,
      signal: undefined,
      clock: slowClock,
      wakeUpIsRetry: true,
      mayHaveLeftState: () => false,
      giveBack: async () => true,
      attempt: () => {
        attempts += 1;
        return new Promise(() => {}); // Redis is slow: no reply before the caller's deadline
      },
    }),
    (error: unknown) => {
      assert.ok(error instanceof LockTimeoutError, `got ${String(error)}`);
      return true;
    },
  );
  assert.equal(attempts, 1, 'the caller gave up with the one attempt in flight');
});
