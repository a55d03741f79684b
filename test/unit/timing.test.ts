import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  driftMs,
  extendAfterMs,
  extendRetryAfterMs,
  MIN_VALIDITY_MS,
  minTtlMs,
  nextWaitMs,
  validUntil,
} from '../../src/timing.js';

describe('validity', () => {
  test('drift is 1% of the TTL plus 2 ms', () => {
    assert.equal(driftMs(10_000, 0.01), 102);
    assert.equal(driftMs(1, 0.01), 3);
    assert.equal(driftMs(1000, 0), 2);
  });

  test('validity counts from when the request was sent, minus drift', () => {
    assert.equal(validUntil(500, 10_000, 0.01), 500 + 10_000 - 102);
  });

  // Issue 7, item 14: a TTL not above its own drift margin can never yield a usable lease.
  test('minTtlMs is the smallest TTL that leaves MIN_VALIDITY_MS of validity after drift', () => {
    assert.equal(minTtlMs(0.01), 13);
    assert.equal(minTtlMs(0), 12);
    assert.equal(minTtlMs(0.5), 24);
    for (let f = 0; f <= 0.5; f += 0.01) {
      const min = minTtlMs(f);
      assert.ok(min - driftMs(min, f) >= MIN_VALIDITY_MS, `factor ${f}: ${min} is enough`);
      assert.ok(min - 1 - driftMs(min - 1, f) < MIN_VALIDITY_MS, `factor ${f}: ${min - 1} is not`);
    }
  });
});

describe('next wait', () => {
  const base = { retryDelayMs: undefined, jitterMs: 0, remainingMs: 60_000, random: () => 0.5 };

  test('waits at most the holder remaining TTL', () => {
    assert.equal(nextWaitMs({ ...base, holderPttlMs: 1234 }), 1234);
  });

  test('a fixed retry delay bounds the wait', () => {
    assert.equal(nextWaitMs({ ...base, holderPttlMs: 5000, retryDelayMs: 10 }), 10);
  });

  test('never waits past the time left', () => {
    assert.equal(nextWaitMs({ ...base, holderPttlMs: 5000, remainingMs: 7 }), 7);
  });

  test('PTTL 0 (the lock is in its last millisecond) retries in 1 ms, not later', () => {
    assert.equal(nextWaitMs({ ...base, holderPttlMs: 0 }), 1);
  });

  test('a key without expiry (-1) or gone (-2) falls back to the retry delay, or 50 ms', () => {
    assert.equal(nextWaitMs({ ...base, holderPttlMs: -1 }), 50);
    assert.equal(nextWaitMs({ ...base, holderPttlMs: -2, retryDelayMs: 20 }), 20);
  });

  test('jitter adds 0..jitterMs', () => {
    assert.equal(nextWaitMs({ ...base, holderPttlMs: 100, jitterMs: 10, random: () => 0 }), 100);
    assert.equal(nextWaitMs({ ...base, holderPttlMs: 100, jitterMs: 10, random: () => 0.999 }), 110);
  });
});

describe('extension schedule', () => {
  test('extends at a third of the TTL', () => {
    assert.equal(extendAfterMs(30_000), 10_000);
    assert.equal(extendAfterMs(2), 1);
  });

  test('retries a failed extension within the validity left', () => {
    assert.equal(extendRetryAfterMs(30_000, 100_000), 3_000);
    assert.equal(extendRetryAfterMs(30_000, 400), 200);
    assert.equal(extendRetryAfterMs(30_000, 1), 1);
  });
});
