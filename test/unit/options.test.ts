import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { defaultLockOptions, resolveAcquireOptions, resolveLockOptions } from '../../src/options.js';

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

  test('tryAcquire-only option lists refuse waiting options', () => {
    assert.throws(
      () => resolveAcquireOptions({ timeoutMs: 5 }, defaultLockOptions, ['ttlMs', 'signal']),
      TypeError,
    );
  });
});
