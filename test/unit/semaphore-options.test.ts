import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { resolveAcquireOptions } from '../../src/options.js';
import {
  defaultSemaphoreOptions,
  resolveSemaphoreOptions,
  semaphoreCallOptions,
} from '../../src/primitives/semaphore.js';

describe('semaphore options', () => {
  test('defaults are frozen: the FairMutex defaults and 1 permit; limit has none', () => {
    assert.ok(Object.isFrozen(defaultSemaphoreOptions));
    assert.equal(defaultSemaphoreOptions.permits, 1);
    assert.equal(defaultSemaphoreOptions.waiterTtlMs, 30_000);
    assert.equal('limit' in defaultSemaphoreOptions, false);
  });

  test("resolving never mutates the caller's object and returns a frozen copy", () => {
    const mine = { limit: 3, ttlMs: 5000 };
    const resolved = resolveSemaphoreOptions(mine);
    assert.deepEqual(mine, { limit: 3, ttlMs: 5000 });
    assert.ok(Object.isFrozen(resolved));
    assert.deepEqual([resolved.limit, resolved.permits, resolved.ttlMs], [3, 1, 5000]);
  });

  test('limit is required, a whole number ≥ 1; permits at most the limit', () => {
    assert.throws(() => resolveSemaphoreOptions(undefined), {
      name: 'TypeError',
      message: 'Expected `limit` to be an integer ≥ 1, got `undefined` (undefined)',
    });
    assert.throws(() => resolveSemaphoreOptions({ limit: 0 }), RangeError);
    assert.throws(() => resolveSemaphoreOptions({ limit: 1.5 }), RangeError);
    assert.throws(() => resolveSemaphoreOptions({ limit: 2, permits: 3 }), {
      name: 'RangeError',
      message: "Expected `permits` to be at most the semaphore's limit (2), got `3` (number)",
    });
    assert.throws(() => resolveSemaphoreOptions({ limit: 2, permit: 1 }), /Unknown option `permit`/);
  });

  test('permits is a per-call option of the Semaphore, checked like the lock option', () => {
    const base = resolveSemaphoreOptions({ limit: 4 });
    const call = resolveAcquireOptions(
      { permits: 3 },
      base,
      semaphoreCallOptions.acquire,
      semaphoreCallOptions.checks,
    );
    assert.equal(call.permits, 3);
    assert.equal(base.permits, 1);
    assert.throws(
      () =>
        resolveAcquireOptions(
          { permits: 0 },
          base,
          semaphoreCallOptions.tryAcquire,
          semaphoreCallOptions.checks,
        ),
      RangeError,
    );
    // Other kinds do not accept it.
    assert.throws(() => resolveAcquireOptions({ permits: 2 }, base), /Unknown option `permits`/);
  });
});
