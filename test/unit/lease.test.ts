/**
 * The lease and its watchdog with an injected clock and fake timers: no Redis, no wall clock.
 * The backend is a scripted stand-in for the *lock script results* only; everything that talks
 * to Redis is tested against real servers in test/integration.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import type { Clock } from '../../src/clock.js';
import { LockLostError, NotHeldError } from '../../src/errors.js';
import { Lease, type LeaseBackend } from '../../src/lease/lease.js';

class FakeClock implements Clock {
  t = 1_000;
  now(): number {
    return this.t;
  }
}

function setup(options: { autoExtend: boolean; ttlMs?: number }) {
  const clock = new FakeClock();
  const calls: string[] = [];
  let extendResult: () => Promise<boolean> = async () => true;
  const backend: LeaseBackend = {
    extend: async (_token, ttl) => {
      calls.push(`extend ${ttl}`);
      return extendResult();
    },
    release: async () => {
      calls.push('release');
      return true;
    },
    isHeldBy: async () => true,
  };
  const lease = new Lease(
    {
      name: 'job',
      token: 't',
      fencingToken: 7,
      ttlMs: options.ttlMs ?? 3_000,
      sentAt: clock.t,
      attempts: 1,
      autoExtend: options.autoExtend,
      driftFactor: 0.01,
    },
    backend,
    clock,
  );
  const advance = async (ms: number) => {
    clock.t += ms;
    mock.timers.tick(ms);
    // let the extension's promise chain run
    for (let i = 0; i < 10; i += 1) await Promise.resolve();
  };
  return {
    lease,
    calls,
    clock,
    advance,
    setExtend: (f: () => Promise<boolean>) => {
      extendResult = f;
    },
  };
}

describe('lease', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout'] }));
  afterEach(() => mock.timers.reset());

  test('validity is ttl − drift from the send time, and counts down', async () => {
    const { lease, advance } = setup({ autoExtend: false });
    assert.equal(lease.remainingMs, 3_000 - 32);
    await advance(1_000);
    assert.equal(lease.remainingMs, 2_000 - 32);
    assert.ok(lease.isHeld);
  });

  test('without auto-extension the signal aborts with LockLostError when validity runs out', async () => {
    const { lease, advance } = setup({ autoExtend: false });
    await advance(2_967);
    assert.equal(lease.signal.aborted, false);
    await advance(1);
    assert.equal(lease.signal.aborted, true);
    assert.ok(lease.signal.reason instanceof LockLostError);
    assert.equal((lease.signal.reason as LockLostError).reason, 'expired');
    assert.equal(lease.isHeld, false);
  });

  test('the watchdog extends at a third of the TTL, re-armed from each extension', async () => {
    const { lease, calls, advance } = setup({ autoExtend: true });
    await advance(999);
    assert.deepEqual(calls, []);
    await advance(1);
    assert.deepEqual(calls, ['extend 3000']);
    await advance(1_000);
    assert.deepEqual(calls, ['extend 3000', 'extend 3000']);
    for (let i = 0; i < 20; i += 1) await advance(500);
    assert.ok(lease.isHeld, 'kept alive well past the TTL');
    assert.equal(calls.length, 12);
    assert.equal(lease.remainingMs, 3_000 - 32);
  });

  test('a process frozen past its TTL comes back to a lost lease, not an extended one', async () => {
    const { lease, advance } = setup({ autoExtend: true });
    await advance(10_000);
    assert.equal(lease.signal.aborted, true);
    assert.equal((lease.signal.reason as LockLostError).reason, 'expired');
  });

  test('never two extensions in flight: a slow extension delays the next', async () => {
    const { calls, advance, setExtend } = setup({ autoExtend: true });
    let finish: (v: boolean) => void = () => {};
    setExtend(() => new Promise<boolean>((r) => (finish = r)));
    await advance(1_000);
    await advance(1_500);
    assert.equal(calls.length, 1, 'the second is not sent while the first is in flight');
    finish(true);
    await advance(0);
    await advance(1);
    assert.equal(
      calls.length,
      2,
      'sent at once: its planned time (1,000 ms after the first was sent) has passed',
    );
  });

  test('a transient error is retried while validity remains, then the lease is lost', async () => {
    const { lease, calls, advance, setExtend } = setup({ autoExtend: true });
    setExtend(async () => {
      throw new Error('connection reset');
    });
    await advance(1_000);
    assert.equal(calls.length, 1);
    await advance(300);
    assert.equal(calls.length, 2, 'retried after ttl/10');
    assert.equal(lease.signal.aborted, false);
    await advance(1_700);
    assert.equal(lease.signal.aborted, true);
    const reason = lease.signal.reason as LockLostError;
    assert.equal(reason.reason, 'expired');
    assert.equal((reason.cause as Error).message, 'connection reset');
  });

  test('a token mismatch aborts at once with reason not-owner', async () => {
    const { lease, advance, setExtend } = setup({ autoExtend: true });
    setExtend(async () => false);
    await advance(1_000);
    assert.equal(lease.signal.aborted, true);
    assert.equal((lease.signal.reason as LockLostError).reason, 'not-owner');
    await assert.rejects(lease.extend(), LockLostError);
  });

  test('release stops the watchdog, is reported once, and later extend is NotHeldError', async () => {
    const { lease, calls, advance } = setup({ autoExtend: true });
    assert.equal(await lease.release(), true);
    assert.equal(await lease.release(), false);
    await advance(10_000);
    assert.deepEqual(calls, ['release']);
    assert.equal(lease.signal.aborted, false, 'a release is not a loss');
    await assert.rejects(lease.extend(), NotHeldError);
  });

  test('a manual extend with a new TTL moves validity and the schedule', async () => {
    const { lease, calls, advance } = setup({ autoExtend: true });
    await advance(500);
    await lease.extend(9_000);
    assert.equal(lease.ttlMs, 9_000);
    assert.equal(lease.remainingMs, 9_000 - 92);
    await advance(2_999);
    assert.deepEqual(calls, ['extend 9000']);
    await advance(1);
    assert.deepEqual(calls, ['extend 9000', 'extend 9000']);
  });

  test('extend validates its argument before any call', async () => {
    const { lease, calls } = setup({ autoExtend: false });
    await assert.rejects(lease.extend(-1), RangeError);
    assert.deepEqual(calls, []);
  });
});
