import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { defaultLockOptions, resolveAcquireOptions, resolveLockOptions } from '../../src/options.js';
import { defaultRedlockOptions, resolveRedlockOptions } from '../../src/redlock/redlock-options.js';

describe('lock options', () => {
  test('defaults are frozen and documented values', () => {
    assert.ok(Object.isFrozen(defaultLockOptions));
    assert.equal(defaultLockOptions.ttlMs, 30_000);
    assert.equal(defaultLockOptions.timeoutMs, 10_000);
    assert.equal(defaultLockOptions.autoExtend, true);
    assert.equal(defaultLockOptions.prefix, 'locksmith');
  });

  test("merging never mutates the caller's object and returns a frozen copy", () => {
    const mine = { ttlMs: 5000 };
    const resolved = resolveLockOptions(mine);
    assert.deepEqual(mine, { ttlMs: 5000 });
    assert.ok(Object.isFrozen(resolved));
    assert.equal(resolved.ttlMs, 5000);
    assert.equal(resolved.timeoutMs, 10_000);
  });

  test('RedlockMutex options: the lock options, nodeTimeoutMs 50 and a 50 ms retry delay by default', () => {
    assert.ok(Object.isFrozen(defaultRedlockOptions));
    assert.equal(defaultRedlockOptions.nodeTimeoutMs, 50);
    assert.equal(defaultRedlockOptions.retryDelayMs, 50);
    assert.equal(defaultRedlockOptions.ttlMs, defaultLockOptions.ttlMs);
    const mine = { nodeTimeoutMs: 20, ttlMs: 1000 };
    const resolved = resolveRedlockOptions(mine);
    assert.deepEqual(mine, { nodeTimeoutMs: 20, ttlMs: 1000 });
    assert.ok(Object.isFrozen(resolved));
    assert.equal(resolved.nodeTimeoutMs, 20);
    assert.throws(() => resolveRedlockOptions({ nodeTimeoutMs: -1 }), RangeError);
    assert.throws(() => resolveLockOptions({ nodeTimeoutMs: 20 }), /Unknown option `nodeTimeoutMs`/);
  });

  test('undefined fields fall back to the defaults', () => {
    assert.equal(resolveLockOptions({ ttlMs: undefined }).ttlMs, 30_000);
  });

  test('an unknown option is refused with a hint', () => {
    assert.throws(() => resolveLockOptions({ ttl: 5000 }), {
      name: 'TypeError',
      message: /Unknown option `ttl`.*did you mean `ttlMs`/,
    });
  });

  test('per-call options override the lock options without touching them', () => {
    const base = resolveLockOptions({ ttlMs: 1000 });
    const call = resolveAcquireOptions({ timeoutMs: 5 }, base);
    assert.equal(call.timeoutMs, 5);
    assert.equal(call.ttlMs, 1000);
    assert.equal(base.timeoutMs, 10_000);
  });

  test('a call without options gets the lock options as one frozen object, built once per lock', () => {
    const base = resolveLockOptions({ ttlMs: 1000 });
    const first = resolveAcquireOptions(undefined, base);
    assert.equal(resolveAcquireOptions(undefined, base), first);
    assert.ok(Object.isFrozen(first));
    assert.equal(first.signal, undefined);
    assert.deepEqual({ ...first, signal: undefined }, { ...base, signal: undefined });
    assert.notEqual(resolveAcquireOptions(undefined, resolveLockOptions({ ttlMs: 1000 })), first, 'per lock');
  });

  test('tryAcquire-only option lists refuse waiting options', () => {
    assert.throws(
      () => resolveAcquireOptions({ timeoutMs: 5 }, defaultLockOptions, ['ttlMs', 'signal']),
      TypeError,
    );
  });

  // Issue 7, item 14: TTLs that leave no validity after the drift margin used to pass and spin.
  test('a ttlMs too short to leave validity after drift is refused, naming the minimum', () => {
    for (const ttlMs of [1, 2, 3, 12]) {
      assert.throws(() => resolveLockOptions({ ttlMs }), {
        name: 'RangeError',
        message: new RegExp(
          `Expected \`ttlMs\` to be at least 13 ms with driftFactor 0.01.*got \`${ttlMs}\``,
        ),
      });
    }
    assert.equal(resolveLockOptions({ ttlMs: 13 }).ttlMs, 13);
  });

  test('the minimum follows the driftFactor, whichever option comes first', () => {
    assert.throws(
      () => resolveLockOptions({ ttlMs: 20, driftFactor: 0.5 }),
      /at least 24 ms with driftFactor 0.5/,
    );
    assert.equal(resolveLockOptions({ ttlMs: 24, driftFactor: 0.5 }).ttlMs, 24);
  });

  test('per-call acquire options are held to the driftFactor of the lock', () => {
    const base = resolveLockOptions({ driftFactor: 0.5 });
    assert.throws(() => resolveAcquireOptions({ ttlMs: 3 }, base), {
      name: 'RangeError',
      message: /at least 24 ms with driftFactor 0.5/,
    });
    assert.throws(() => resolveAcquireOptions({ ttlMs: 3 }, defaultLockOptions), RangeError);
    assert.equal(resolveAcquireOptions({ ttlMs: 24 }, base).ttlMs, 24);
  });
});
