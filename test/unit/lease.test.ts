/**
 * The lease and its watchdog with an injected clock and fake timers: no Redis, no wall clock.
 * The backend is a scripted stand-in for the *lock script results* only; everything that talks
 * to Redis is tested against real servers in test/integration.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import type { Clock } from '../../src/clock.js';
import { LockLostError, NotHeldError, RedisUnavailableError } from '../../src/errors.js';
import { type LockEvent, subscribeLockEvents } from '../../src/events.js';
import { Lease } from '../../src/lease/lease.js';
import { defaultLockOptions } from '../../src/options.js';
import type { LockBackend } from '../../src/plan.js';

/** A monotonic clock and a wall clock the test moves independently (a suspend moves only the wall). */
class FakeClock implements Clock {
  t = 1_000;
  wall = 1_700_000_000_000;
  now(): number {
    return this.t;
  }
  wallNow(): number {
    return this.wall;
  }
}

function setup(options: { autoExtend: boolean; ttlMs?: number }) {
  const clock = new FakeClock();
  const calls: string[] = [];
  let extendResult: () => Promise<boolean> = async () => true;
  let releaseResult: () => Promise<boolean> = async () => true;
  const backend: LockBackend = {
    extend: async (_token, ttl) => {
      calls.push(`extend ${ttl}`);
      return extendResult();
    },
    release: async () => {
      calls.push('release');
      return releaseResult();
    },
    isHeldBy: async () => true,
    disconnected: () => undefined,
  };
  const plan = {
    name: 'job',
    token: 't',
    mode: 'wait' as const,
    deadline: Number.POSITIVE_INFINITY,
    options: {
      ...defaultLockOptions,
      ttlMs: options.ttlMs ?? 3_000,
      autoExtend: options.autoExtend,
      clock,
      signal: undefined,
    },
  };
  const lease = Lease.grant(plan, { grant: { fencingToken: 7, sentAt: clock.t }, attempts: 1 }, backend);
  const settle = async () => {
    // let the extension's promise chain run
    for (let i = 0; i < 40; i += 1) await Promise.resolve();
  };
  /** Time passing on a running host: both clocks move. */
  const advance = async (ms: number) => {
    clock.t += ms;
    clock.wall += ms;
    mock.timers.tick(ms);
    await settle();
  };
  return {
    lease,
    calls,
    clock,
    advance,
    settle,
    setExtend: (f: () => Promise<boolean>) => {
      extendResult = f;
    },
    setRelease: (f: () => Promise<boolean>) => {
      releaseResult = f;
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

  test("fencingTokens: its one name's token, frozen, the same object at every read", () => {
    const { lease } = setup({ autoExtend: false });
    const tokens = lease.fencingTokens;
    assert.deepEqual(tokens, { job: 7 });
    assert.ok(Object.isFrozen(tokens));
    assert.equal(lease.fencingTokens, tokens);
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

  test('with a TTL longer than three expiry looks, the extension armed by a look still comes at a third of the TTL', async () => {
    const { lease, calls, advance } = setup({ autoExtend: true, ttlMs: 30_000 });
    for (let i = 0; i < 9; i += 1) await advance(1_000);
    await advance(999);
    assert.deepEqual(calls, []);
    await advance(1);
    assert.deepEqual(calls, ['extend 30000']);
    for (let i = 0; i < 10; i += 1) await advance(1_000);
    assert.deepEqual(calls, ['extend 30000', 'extend 30000']);
    assert.ok(lease.isHeld);
    await lease.release();
    for (let i = 0; i < 30; i += 1) await advance(1_000);
    assert.equal(calls.filter((c: string) => c.startsWith('extend')).length, 2, 'no extension after release');
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
    assert.ok(reason.cause instanceof RedisUnavailableError);
    assert.equal(((reason.cause as Error).cause as Error).message, 'connection reset');
    await advance(0);
    assert.equal(
      calls.at(-1),
      'release',
      'a failed extension may have applied: the token is given back on loss',
    );
  });

  test("onLoss (the library's own watchers) is told once when the lease is lost, at once when it already is, never after release", async () => {
    const lost = setup({ autoExtend: false });
    const told: string[] = [];
    lost.lease.onLoss(() => told.push('first'));
    await lost.advance(2_967);
    assert.equal(told.length, 0);
    await lost.advance(10_000);
    assert.deepEqual(told, ['first'], 'once, when validity ran out');
    lost.lease.onLoss(() => told.push('late'));
    assert.deepEqual(told, ['first', 'late'], 'a listener added after the loss is told at once');

    const released = setup({ autoExtend: false });
    released.lease.onLoss(() => told.push('released'));
    await released.lease.release();
    await released.advance(10_000);
    released.lease.onLoss(() => told.push('after release'));
    assert.deepEqual(told, ['first', 'late'], 'a release is not a loss');
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

  // Issue 7, item 14.
  test('extend refuses a TTL too short to leave validity, before any call', async () => {
    const { lease, calls } = setup({ autoExtend: false });
    await assert.rejects(lease.extend(3), {
      name: 'RangeError',
      message: /at least 13 ms with driftFactor 0.01/,
    });
    assert.deepEqual(calls, []);
    assert.ok(lease.isHeld);
  });
});

/** A `RedisUnavailableError` whose cause's message matches `cause`. */
function unavailableBecause(cause: RegExp): (error: unknown) => boolean {
  return (error) =>
    error instanceof RedisUnavailableError && error.cause instanceof Error && cause.test(error.cause.message);
}

// Issue 7, item 1: an extension's validity is what it bought, shorter or longer.
describe('lease: extension semantics', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout'] }));
  afterEach(() => mock.timers.reset());

  test('a shorter manual extension shortens validity to send time + TTL − drift', async () => {
    const { lease, advance } = setup({ autoExtend: false });
    await advance(500);
    await lease.extend(600);
    assert.equal(lease.ttlMs, 600);
    assert.equal(lease.remainingMs, 600 - 8);
    await advance(591);
    assert.equal(lease.signal.aborted, false);
    await advance(1);
    assert.equal(lease.signal.aborted, true, 'lost when the 600 ms bought ran out, not the old 3 s');
  });

  test('a shorter extension in flight, or one that failed, already counts: it may have applied', async () => {
    const { lease, advance, settle, setExtend } = setup({ autoExtend: false });
    let fail: (error: Error) => void = () => {};
    setExtend(() => new Promise<boolean>((_resolve, reject) => (fail = reject)));
    const extending = lease.extend(600);
    await settle();
    assert.equal(lease.remainingMs, 600 - 8, 'in flight: Redis may already hold the shorter TTL');
    fail(new Error('connection reset'));
    await assert.rejects(extending, unavailableBecause(/connection reset/));
    assert.equal(lease.remainingMs, 600 - 8, 'failed: the outcome is unknown, the shorter one is assumed');
    await advance(592);
    assert.equal(lease.isHeld, false);
  });

  test('a longer extension that failed leaves validity as it was', async () => {
    const { lease, setExtend } = setup({ autoExtend: false });
    setExtend(async () => {
      throw new Error('connection reset');
    });
    await assert.rejects(lease.extend(9_000), unavailableBecause(/connection reset/));
    assert.equal(lease.remainingMs, 3_000 - 32);
  });

  test('no reply within replyTimeoutMs: RedisUnavailableError; the extension goes on, and counts once applied', async () => {
    const { lease, advance, settle, setExtend } = setup({ autoExtend: false });
    let answer: (extended: boolean) => void = () => {};
    setExtend(() => new Promise<boolean>((resolve) => (answer = resolve)));
    await advance(500);
    const extending = lease.extend();
    await settle();
    await advance(2_000);
    await assert.rejects(extending, unavailableBecause(/No reply from Redis within 2000 ms/));
    assert.equal(lease.remainingMs, 3_000 - 32 - 2_500, 'nothing bought yet');
    answer(true);
    await settle();
    assert.equal(lease.remainingMs, 3_000 - 32 - 2_000, 'what it bought, counted from its send time');
    assert.equal(lease.signal.aborted, false);
  });

  test('the watchdog and a manual extension are never in flight together; the later one counts', async () => {
    const { lease, calls, advance, setExtend } = setup({ autoExtend: true });
    const pending: ((v: boolean) => void)[] = [];
    setExtend(() => new Promise<boolean>((r) => pending.push(r)));
    await advance(1_000); // the watchdog's extension (3 s) is sent
    const manual = lease.extend(600);
    await advance(0);
    assert.deepEqual(calls, ['extend 3000'], 'the manual one waits for the watchdog one');
    pending[0]?.(true);
    await advance(0);
    assert.deepEqual(calls, ['extend 3000', 'extend 600']);
    pending[1]?.(true);
    await manual;
    assert.equal(lease.remainingMs, 600 - 8, 'validity is what the last extension bought');
  });
});

// Issue 7, item 6: validity counts down by whichever clock moved further.
describe('lease: host suspend and wall-clock steps', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout'] }));
  afterEach(() => mock.timers.reset());

  test('a suspend (wall clock moves, monotonic does not) loses the lease on the next check', async () => {
    const { lease, clock } = setup({ autoExtend: false });
    const signal = lease.signal;
    clock.wall += 60_000; // the VM slept a minute; performance.now() did not move
    assert.equal(lease.remainingMs, 0);
    assert.equal(lease.isHeld, false);
    assert.equal(signal.aborted, true, 'isHeld false and signal live never coexist');
    assert.equal((signal.reason as LockLostError).reason, 'expired');
  });

  test('the expiry timer notices a suspend within a second of resuming, without any read', async () => {
    const { lease, clock, advance } = setup({ autoExtend: true, ttlMs: 30_000 });
    const signal = lease.signal;
    clock.wall += 60_000;
    await advance(1_000);
    assert.equal(signal.aborted, true);
  });

  test('a wall clock stepping back gives no extra validity', async () => {
    const { lease, clock, advance } = setup({ autoExtend: false });
    clock.wall -= 3_600_000;
    await advance(1_000);
    assert.equal(lease.remainingMs, 3_000 - 32 - 1_000, 'counted by the monotonic clock');
    await advance(1_967);
    assert.equal(lease.isHeld, true);
    await advance(1);
    assert.equal(lease.isHeld, false);
  });

  test('a wall clock ahead shortens validity; remainingMs, validUntil and the expiry timer agree', async () => {
    const { lease, clock, advance } = setup({ autoExtend: false });
    const signal = lease.signal;
    clock.wall += 1_000;
    assert.equal(lease.remainingMs, 3_000 - 32 - 1_000);
    assert.equal(lease.validUntil, clock.t + lease.remainingMs);
    await advance(1_967);
    assert.equal(signal.aborted, false);
    assert.equal(lease.remainingMs, 1);
    await advance(1);
    assert.equal(signal.aborted, true, 'the timer fired when remainingMs reached 0');
  });

  test('an extension re-bases both clocks at its send time', async () => {
    const { lease, clock, advance } = setup({ autoExtend: false });
    clock.wall += 1_000;
    await lease.extend();
    assert.equal(lease.remainingMs, 3_000 - 32, 'the suspend before the extension no longer counts');
    await advance(500);
    assert.equal(lease.remainingMs, 3_000 - 32 - 500);
  });
});

// Issue 7, item 2: a lease lost locally may still own its token in Redis.
describe('lease: giving back the token of a lost lease', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout'] }));
  afterEach(() => mock.timers.reset());

  test('release() of a lost lease still sends the compare-and-delete, and reports false', async () => {
    const { lease, calls, advance } = setup({ autoExtend: false });
    await advance(3_000);
    assert.equal(lease.signal.aborted, true);
    assert.equal(await lease.release(), false);
    assert.deepEqual(calls, ['release']);
    assert.equal(await lease.release(), false);
    assert.deepEqual(calls, ['release'], 'once');
  });

  test('a failing give-back is swallowed: release() of a lost lease still resolves false', async () => {
    const { lease, advance, setRelease } = setup({ autoExtend: false });
    setRelease(async () => {
      throw new Error('connection reset');
    });
    await advance(3_000);
    const releasing = lease.release();
    await advance(2_000);
    assert.equal(await releasing, false);
  });

  test('an extension whose success arrives after the lease was lost gives the token back', async () => {
    const { lease, calls, advance, settle, setExtend } = setup({ autoExtend: false });
    let finish: (v: boolean) => void = () => {};
    setExtend(() => new Promise<boolean>((r) => (finish = r)));
    const extending = lease.extend();
    await settle();
    await advance(3_000);
    assert.equal(lease.signal.aborted, true);
    // Its caller stopped waiting after replyTimeoutMs (2 s), while the lease was still valid.
    await assert.rejects(extending, RedisUnavailableError);
    finish(true);
    await settle();
    assert.deepEqual(calls, ['extend 3000', 'release']);
  });
});

// Issue 7, item 15: what the lease handles by itself is reported as events.
describe('lease: events', () => {
  let events: LockEvent[] = [];
  let stop: () => void = () => {};
  beforeEach(() => {
    mock.timers.enable({ apis: ['setTimeout'] });
    events = [];
    stop = subscribeLockEvents((event) => {
      if (event.lockName === 'job') events.push(event);
    });
  });
  afterEach(() => {
    stop();
    mock.timers.reset();
  });

  test('extend-failed with its retry delay, then lock-lost with the last error', async () => {
    const { advance, setExtend } = setup({ autoExtend: true });
    const reset = new Error('connection reset');
    setExtend(async () => {
      throw reset;
    });
    await advance(1_000);
    // Typed as every infrastructure fault is, with the client's error as its cause.
    const failed = events.filter((e) => e.type === 'extend-failed');
    assert.equal(failed.length, 1);
    assert.equal(failed[0]?.retryInMs, 300);
    assert.ok(failed[0]?.error instanceof RedisUnavailableError);
    assert.equal((failed[0] as { error: Error }).error.cause, reset);
    await advance(2_000);
    const lost = events.filter((e) => e.type === 'lock-lost');
    assert.equal(lost.length, 1);
    assert.equal(lost[0]?.type === 'lock-lost' && lost[0].reason, 'expired');
    assert.equal(((lost[0] as { error: Error }).error as Error).cause, reset);
  });

  test('extend-failed without a retry when no validity is left', async () => {
    const { clock, advance, setExtend } = setup({ autoExtend: true });
    let fail: (error: Error) => void = () => {};
    setExtend(() => new Promise<boolean>((_resolve, reject) => (fail = reject)));
    await advance(1_000);
    clock.t += 5_000;
    clock.wall += 5_000;
    const reset = new Error('connection reset');
    fail(reset);
    await advance(0);
    const failed = events.filter((e) => e.type === 'extend-failed');
    assert.equal(failed.length, 1);
    assert.equal(failed[0]?.retryInMs, undefined);
    assert.equal((failed[0] as { error: Error }).error.cause, reset);
  });

  test('give-back for the token of a lost lease, released or failed', async () => {
    const first = setup({ autoExtend: false });
    await first.advance(3_000);
    await first.lease.release();
    const second = setup({ autoExtend: false });
    const reset = new Error('connection reset');
    second.setRelease(async () => {
      throw reset;
    });
    await second.advance(3_000);
    void second.lease.release();
    // A give-back that failed on an error that may pass is sent again until the token would be
    // gone by itself (a TTL, 3 s here), and reported once, when it ends.
    for (let i = 0; i < 8; i += 1) await second.advance(500);
    assert.ok(second.calls.filter((c) => c === 'release').length > 2, 'the give-back was re-sent');
    assert.deepEqual(
      events.filter((e) => e.type === 'give-back'),
      [
        { type: 'give-back', lockName: 'job', token: 't', released: true, error: undefined },
        { type: 'give-back', lockName: 'job', token: 't', released: undefined, error: reset },
      ],
    );
  });

  // Issue 20 items 9 and 12: release() is bounded by replyTimeoutMs, the same on every client.
  test('release(): a rejected release is sent again, so a reset connection gives the same outcome as a re-sending client', async () => {
    const { lease, advance, setRelease, calls } = setup({ autoExtend: false });
    let sent = 0;
    setRelease(async () => {
      sent += 1;
      if (sent === 1) throw new Error('read ECONNRESET');
      return true;
    });
    const releasing = lease.release();
    await advance(0);
    await advance(50);
    assert.equal(await releasing, true);
    assert.deepEqual(calls, ['release', 'release']);
  });

  test('release(): no reply within replyTimeoutMs rejects with RedisUnavailableError; the release goes on', async () => {
    const { lease, advance, setRelease } = setup({ autoExtend: false });
    let answer: (released: boolean) => void = () => {};
    setRelease(() => new Promise((resolve) => (answer = resolve)));
    const releasing = lease.release().then(
      () => assert.fail('resolved without a reply'),
      (error: unknown) => error,
    );
    await advance(2_000);
    const error = await releasing;
    assert.ok(error instanceof RedisUnavailableError, String(error));
    assert.match(String((error.cause as Error).message), /No reply from Redis within 2000 ms/);
    answer(true);
    await advance(0);
    assert.deepEqual(
      events.filter((e) => e.type === 'give-back'),
      [{ type: 'give-back', lockName: 'job', token: 't', released: true, error: undefined }],
    );
    assert.equal(await lease.release(), false, 'released once');
  });

  // Issue 34, item 10: it resolved before its give-back was applied, and the next holder found the
  // token still there.
  test('release() of a lost lease resolves false once its give-back is applied, or after replyTimeoutMs', async () => {
    const { lease, advance, setRelease, calls } = setup({ autoExtend: false });
    let answer: (released: boolean) => void = () => {};
    setRelease(() => new Promise((resolve) => (answer = resolve)));
    await advance(3_000);
    assert.equal(lease.isHeld, false);
    let resolved = false;
    const releasing = lease.release().then((released) => {
      resolved = true;
      return released;
    });
    await advance(0);
    assert.deepEqual(calls, ['release'], 'its own token is given back');
    assert.equal(resolved, false, 'not before the give-back is applied');
    answer(true);
    await advance(0);
    assert.equal(resolved, true);
    assert.equal(await releasing, false);

    const unanswered = setup({ autoExtend: false });
    unanswered.setRelease(() => new Promise(() => {}));
    await unanswered.advance(3_000);
    let done = false;
    const waiting = unanswered.lease.release().then((released) => {
      done = true;
      return released;
    });
    await unanswered.advance(1_999);
    assert.equal(done, false);
    await unanswered.advance(1);
    assert.equal(await waiting, false, 'bounded by replyTimeoutMs, and never a rejection');
  });

  test('lock-lost with reason not-owner', async () => {
    const { advance, setExtend } = setup({ autoExtend: true });
    setExtend(async () => false);
    await advance(1_000);
    assert.deepEqual(events, [{ type: 'lock-lost', lockName: 'job', reason: 'not-owner', error: undefined }]);
  });
});
