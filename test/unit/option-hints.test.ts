/**
 * Options typed by users of node-redlock, redis-semaphore, Redisson and redis_exp_lock are refused
 * with a TypeError that says what Locksmith calls them (issue #8). Pure: the check runs before any
 * client is touched (test/integration/option-hints.test.ts shows no command reaches Redis).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { defaultLockOptions, resolveAcquireOptions, resolveLockOptions } from '../../src/options.js';

const lockKnown =
  'known: ttlMs, autoExtend, timeoutMs, retries, retryDelayMs, retryJitterMs, replyTimeoutMs, wakeOnRelease, driftFactor, prefix, clock, label, minReplicaAcks, replicaAckTimeoutMs';

/** [foreign option, the hint the message must carry]. */
const lockOptionHints: [string, string][] = [
  ['retryCount', "did you mean `retries`? (node-redlock's `retryCount: -1` is `retries: Infinity`)"],
  ['retryDelay', 'did you mean `retryDelayMs`? (usually unneeded: a release wakes a waiter)'],
  ['retryJitter', 'did you mean `retryJitterMs`? (adds 0..retryJitterMs ms to timed waits)'],
  [
    'automaticExtensionThreshold',
    'did you mean `autoExtend`? (the watchdog extends the lease at about ttlMs/3 while held; `autoExtend: false` turns it off)',
  ],
  ['duration', 'did you mean `ttlMs`? (the lease TTL in milliseconds)'],
  ['lockTimeout', 'did you mean `ttlMs`? (the lock lifetime in milliseconds (a lock timeout, not a wait))'],
  ['acquireTimeout', 'did you mean `timeoutMs`? (how long `acquire()` waits, in milliseconds)'],
  ['acquireAttemptsLimit', 'did you mean `retries`? (attempts after the first: acquireAttemptsLimit − 1)'],
  ['retryInterval', 'did you mean `retryDelayMs`? (usually unneeded: a release wakes a waiter)'],
  [
    'refreshInterval',
    'did you mean `autoExtend`? (the watchdog extends the lease at about ttlMs/3 while held; `autoExtend: false` turns it off)',
  ],
  [
    'onLockLost',
    'there is no callback: `lease.signal` aborts with a `LockLostError` when the lock is lost (`lease.signal.addEventListener("abort", …)`)',
  ],
  [
    'identifier',
    'owner tokens are random per acquisition: read `lease.token`, and release a token held elsewhere with `mutex.releaseToken(token)`',
  ],
  ['leaseTime', 'did you mean `ttlMs`? (in milliseconds; add `autoExtend: false` for a fixed lease)'],
  ['waitTime', 'did you mean `timeoutMs`? (how long `acquire()` waits, in milliseconds)'],
  [
    'lockWatchdogTimeout',
    'did you mean `ttlMs`? (the watchdog extends the lease at about ttlMs/3 while held; `autoExtend: false` turns it off)',
  ],
  ['expiry', 'did you mean `ttlMs`? (milliseconds, where redis_exp_lock counts seconds)'],
  ['interval', 'did you mean `retryDelayMs`? (milliseconds, where redis_exp_lock counts seconds)'],
  ['ttl', 'did you mean `ttlMs`? (the lease TTL in milliseconds)'],
  [
    'timeout',
    'did you mean `timeoutMs`? (`timeoutMs` is how long `acquire()` waits; the lock lifetime is `ttlMs`)',
  ],
  ['maxRetries', 'did you mean `retries`? (attempts after the first)'],
  ['retry', 'did you mean `retries`? (attempts after the first)'],
];

describe('unknown options name their Locksmith equivalent', () => {
  for (const [foreign, hint] of lockOptionHints) {
    test(`lock option \`${foreign}\``, () => {
      assert.throws(() => resolveLockOptions({ [foreign]: 1 }), {
        name: 'TypeError',
        message: `Unknown option \`${foreign}\` in \`options\`; ${hint} (${lockKnown})`,
      });
    });
  }

  test('per-call options get the same hints', () => {
    assert.throws(() => resolveAcquireOptions({ retryCount: 3 }, defaultLockOptions), {
      name: 'TypeError',
      message:
        "Unknown option `retryCount` in `options`; did you mean `retries`? (node-redlock's `retryCount: -1` is `retries: Infinity`) (known: ttlMs, autoExtend, timeoutMs, retries, retryDelayMs, retryJitterMs, replyTimeoutMs, signal)",
    });
  });

  test('a hint is not offered where its option is not accepted either', () => {
    // tryAcquire() makes one attempt: it has no timeoutMs to suggest for `acquireTimeout`.
    assert.throws(
      () =>
        resolveAcquireOptions({ acquireTimeout: 5 }, defaultLockOptions, ['ttlMs', 'autoExtend', 'signal']),
      {
        name: 'TypeError',
        message: 'Unknown option `acquireTimeout` in `options` (known: ttlMs, autoExtend, signal)',
      },
    );
  });

  test('names from no table still get the prefix suggestion, or none', () => {
    assert.throws(() => resolveLockOptions({ autoExt: true }), {
      message: `Unknown option \`autoExt\` in \`options\`; did you mean \`autoExtend\`? (${lockKnown})`,
    });
    assert.throws(() => resolveLockOptions({ banana: 1 }), {
      message: `Unknown option \`banana\` in \`options\` (${lockKnown})`,
    });
  });

  test('inherited object keys are not hints', () => {
    assert.throws(() => resolveLockOptions({ toString: 1 }), {
      message: `Unknown option \`toString\` in \`options\` (${lockKnown})`,
    });
  });

  test("the caller's options object is not changed", () => {
    const options = Object.freeze({ retryCount: 3 });
    assert.throws(() => resolveLockOptions(options), TypeError);
    assert.deepEqual(options, { retryCount: 3 });
  });
});
