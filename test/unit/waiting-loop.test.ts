/**
 * The waiting loop's rules with injected attempts and a fake hub: pure logic, no Redis.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ChannelWatch, SubscriberHub } from '../../src/adapters/subscriber-hub.js';
import {
  ClientClosedError,
  LockTimeoutError,
  RedisUnavailableError,
  TooManyAttemptsError,
} from '../../src/errors.js';
import { type LockEvent, subscribeLockEvents } from '../../src/events.js';
import { defaultLockOptions } from '../../src/options.js';
import type { LockBackend, Plan } from '../../src/plan.js';
import type { Outcome as AttemptOutcome, Attempts } from '../../src/waiting/attempts.js';
import { attemptOnce as tryOnce, acquireWithWaiting as waitFor } from '../../src/waiting/loop.js';
import { Wake, type WakeChannel } from '../../src/waiting/wake.js';

const held: AttemptOutcome = { acquired: false, holderPttlMs: 30_000 };
// Sent "now" whenever it is read, so the grant always has validity left (a stale one is given back).
const granted: AttemptOutcome = {
  acquired: true,
  fencingToken: 1,
  get sentAt() {
    return performance.now();
  },
};

/** A hub whose watch wakes when `release()` is called, or fails to subscribe. */
function fakeHub(options: { failSubscribe?: boolean } = {}) {
  let wake: (() => void) | undefined;
  let pending = false;
  const watch: ChannelWatch = {
    lastMessage: undefined,
    next: (timeoutMs) =>
      new Promise((resolve) => {
        if (pending) {
          pending = false;
          resolve('message');
          return;
        }
        const timer = setTimeout(() => resolve('timeout'), timeoutMs);
        wake = () => {
          clearTimeout(timer);
          resolve('message');
        };
      }),
    close: () => {},
  };
  const hub = {
    watchIfActive: () => undefined,
    watch: async () => {
      if (options.failSubscribe) throw new Error('ERR unknown command SUBSCRIBE');
      return watch;
    },
  } as unknown as SubscriberHub;
  return {
    hub,
    release() {
      if (wake) wake();
      else pending = true;
      wake = undefined;
    },
  };
}

/** What one test call varies: the plan's options, the attempts, the wake channels, the lock's answers. */
interface CallSetup {
  attempt: Attempts['attempt'];
  wake?: WakeChannel[];
  ttlMs?: number;
  timeoutMs?: number;
  retries?: number;
  retryDelayMs?: number;
  replyTimeoutMs?: number;
  clock?: { now(): number };
  disconnected?: () => string | undefined;
  giveBack?: () => Promise<boolean>;
}

/** A call: its plan, its attempts and the lock it calls back into; `gaveBack` counts give-backs. */
interface TestCall {
  plan: Plan;
  attempts: Attempts;
  backend: LockBackend;
  gaveBack: number;
}

function plan(setup: CallSetup): TestCall {
  const clock = setup.clock ?? { now: () => performance.now() };
  const timeoutMs = setup.timeoutMs ?? 10_000;
  const call: TestCall = {
    gaveBack: 0,
    plan: {
      name: 'unit',
      token: 'tok',
      mode: 'wait',
      deadline: clock.now() + timeoutMs,
      options: {
        ...defaultLockOptions,
        ttlMs: setup.ttlMs ?? 1_000,
        timeoutMs,
        retries: setup.retries ?? Number.POSITIVE_INFINITY,
        retryDelayMs: setup.retryDelayMs ?? Number.POSITIVE_INFINITY,
        retryJitterMs: 0,
        replyTimeoutMs: setup.replyTimeoutMs ?? defaultLockOptions.replyTimeoutMs,
        clock,
        signal: undefined,
      },
    },
    attempts: { attempt: setup.attempt, wake: setup.wake ? new Wake(setup.wake) : undefined },
    backend: {
      extend: async () => true,
      isHeldBy: async () => true,
      disconnected: setup.disconnected ?? (() => undefined),
      release: async () => {
        call.gaveBack += 1;
        return setup.giveBack ? setup.giveBack() : true;
      },
    },
  };
  return call;
}

function acquireWithWaiting(call: TestCall) {
  return waitFor(call.plan, call.attempts, call.backend);
}

function attemptOnce(call: TestCall) {
  return tryOnce({ ...call.plan, mode: 'try' }, call.attempts, call.backend);
}

async function until(condition: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 2));
  }
}

function recordEvents(): { events: LockEvent[]; stop: () => void } {
  const events: LockEvent[] = [];
  return { events, stop: subscribeLockEvents((e) => events.push(e)) };
}

describe('acquireWithWaiting', () => {
  // Issue 34, item 9: `timeoutMs` bounds the wait for the lock, never a reply. `timeoutMs: 0` on a
  // free lock rejected with LockTimeoutError under load, since the deadline abandoned its only attempt.
  test('an attempt sent at the deadline is decided by its reply, not abandoned at the deadline', async () => {
    const granted = (): AttemptOutcome => ({ acquired: true, fencingToken: 1, sentAt: performance.now() });
    const reply = (outcome: AttemptOutcome, ms: number) =>
      new Promise<AttemptOutcome>((resolve) => setTimeout(() => resolve(outcome), ms));
    const free = await acquireWithWaiting(
      plan({ timeoutMs: 0, ttlMs: 10_000, attempt: () => reply(granted(), 30) }),
    );
    assert.equal(free.attempts, 1, 'timeoutMs 0 tries once, and that try is answered');
    let calls = 0;
    const atDeadline = await acquireWithWaiting(
      plan({
        timeoutMs: 100,
        ttlMs: 10_000,
        attempt: () => {
          calls += 1;
          return calls === 1 ? Promise.resolve(held) : reply(granted(), 150);
        },
      }),
    );
    assert.equal(atDeadline.attempts, 2, 'the attempt sent when the wait ended took the lock');
  });

  test('an attempt unanswered for replyTimeoutMs is Redis unavailable, whatever the deadline', async () => {
    let calls = 0;
    const failure = await acquireWithWaiting(
      plan({
        timeoutMs: 100,
        ttlMs: 10_000,
        replyTimeoutMs: 200,
        attempt: () => {
          calls += 1;
          return calls === 1 ? Promise.resolve(held) : new Promise<AttemptOutcome>(() => {});
        },
      }),
    ).catch((error: unknown) => error);
    assert.ok(failure instanceof RedisUnavailableError, String(failure));
  });

  test('item 9: the attempt right after subscribing does not use up retries', async () => {
    const { hub, release } = fakeHub();
    let calls = 0;
    const acquiring = acquireWithWaiting(
      plan({
        retries: 1,
        wake: [{ hub, channel: 'c' }],
        attempt: async () => {
          calls += 1;
          return calls < 3 ? held : granted;
        },
      }),
    );
    setTimeout(release, 20);
    const { attempts } = await acquiring;
    assert.equal(attempts, 3);
  });

  test('item 9: renewal wake-ups are not retries', async () => {
    const { hub, release } = fakeHub();
    let calls = 0;
    const acquiring = acquireWithWaiting(
      plan({
        retries: 1,
        wake: [{ hub, channel: 'c' }],
        attempt: async () => {
          calls += 1;
          return calls < 6 ? { acquired: false, holderPttlMs: 30_000, renewInMs: 5 } : granted;
        },
      }),
    );
    setTimeout(release, 100);
    assert.equal((await acquiring).attempts, 6);
  });

  test('item 12: a LockError is never retried', async () => {
    let calls = 0;
    await assert.rejects(
      acquireWithWaiting(
        plan({
          attempt: async () => {
            calls += 1;
            throw new ClientClosedError('closed');
          },
        }),
      ),
      ClientClosedError,
    );
    assert.equal(calls, 1);
  });

  test('items 12/13: retries run out on a transient error: RedisUnavailableError with cause, token given back', async () => {
    const cause = new Error('ECONNRESET');
    const recorded = recordEvents();
    const p = plan({ retries: 0, attempt: async () => Promise.reject(cause) });
    try {
      await assert.rejects(acquireWithWaiting(p), (e: unknown) => {
        assert.ok(e instanceof RedisUnavailableError, String(e));
        assert.equal(e.cause, cause);
        return true;
      });
      assert.equal(p.gaveBack, 1, 'the errored attempt may have applied: its token is given back');
      assert.ok(recorded.events.some((e) => e.type === 'attempt-failed' && e.error === cause));
      assert.ok(recorded.events.some((e) => e.type === 'give-back' && e.token === 'tok'));
    } finally {
      recorded.stop();
    }
  });

  test('item 12: timeout while every attempt fails is RedisUnavailableError, not LockTimeoutError', async () => {
    await assert.rejects(
      acquireWithWaiting(
        plan({ timeoutMs: 100, attempt: async () => Promise.reject(new Error('ECONNREFUSED')) }),
      ),
      RedisUnavailableError,
    );
  });

  test('item 12: with no deadline, Redis unreachable for a TTL ends the wait', async () => {
    const started = performance.now();
    await assert.rejects(
      acquireWithWaiting(
        plan({
          timeoutMs: Number.POSITIVE_INFINITY,
          ttlMs: 200,
          attempt: async () => Promise.reject(new Error('x')),
        }),
      ),
      RedisUnavailableError,
    );
    assert.ok(performance.now() - started < 1_500);
  });

  test('item 12: an attempt unanswered for a TTL is abandoned; a late grant is given back', async () => {
    let late: ((o: AttemptOutcome) => void) | undefined;
    const p = plan({
      timeoutMs: Number.POSITIVE_INFINITY,
      ttlMs: 100,
      attempt: () =>
        new Promise<AttemptOutcome>((resolve) => {
          late = resolve;
        }),
    });
    await assert.rejects(acquireWithWaiting(p), RedisUnavailableError);
    const before = p.gaveBack;
    late?.(granted);
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(p.gaveBack, before + 1);
  });

  // Fault suite, "lost acquire replies, callers give up": an attempt whose connection was reset is
  // re-sent by the client after reconnecting and may apply after the call gave up (and gave its
  // token back), queueing the token again; its late "queued" reply must give the token back again,
  // or the lock is handed to that stale entry and held by nobody for a TTL.
  test('a late reply saying the attempt left a queue place, after the call gave up, gives the token back again', async () => {
    let late: ((o: AttemptOutcome) => void) | undefined;
    const p = plan({
      timeoutMs: 50,
      replyTimeoutMs: 50,
      attempt: () =>
        new Promise<AttemptOutcome>((resolve) => {
          late = resolve;
        }),
    });
    await assert.rejects(acquireWithWaiting(p), RedisUnavailableError);
    const before = p.gaveBack;
    late?.({ acquired: false, holderPttlMs: 500, leftState: true });
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(p.gaveBack, before + 1, 'queued after giving up: given back');
    // A plain "not acquired" (nothing left in Redis) needs nothing.
    const q = plan({
      timeoutMs: 50,
      replyTimeoutMs: 50,
      attempt: () =>
        new Promise<AttemptOutcome>((resolve) => {
          late = resolve;
        }),
    });
    await assert.rejects(acquireWithWaiting(q), RedisUnavailableError);
    const after = q.gaveBack;
    late?.({ acquired: false, holderPttlMs: 500 });
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(q.gaveBack, after);
  });

  // Issue #20 item 11: nobody saw the lock busy, and the client knows why: not a timeout.
  test('a call never answered while the client has no connection is RedisUnavailableError, with why', async () => {
    const failure = await acquireWithWaiting(
      plan({
        timeoutMs: 50,
        disconnected: () => 'the test client is reconnecting',
        attempt: () => new Promise<AttemptOutcome>(() => {}),
      }),
    ).catch((error: unknown) => error);
    assert.ok(failure instanceof RedisUnavailableError, String(failure));
    assert.match(
      String((failure.cause as Error).message),
      /No reply from Redis within \d+ ms: the test client is reconnecting/,
    );
  });

  test('a timeout counts its attempts in words a reader expects: 1 attempt, 2 attempts', () => {
    assert.match(new LockTimeoutError('x', 100, 1).message, /\(1 attempt\)$/);
    assert.match(new LockTimeoutError('x', 100, 2).message, /\(2 attempts\)$/);
  });

  test('a timeout against a held lock is still LockTimeoutError, and retries TooManyAttemptsError', async () => {
    await assert.rejects(
      acquireWithWaiting(plan({ timeoutMs: 50, attempt: async () => held })),
      LockTimeoutError,
    );
    await assert.rejects(
      acquireWithWaiting(plan({ retries: 2, retryDelayMs: 1, attempt: async () => held })),
      (e: unknown) => e instanceof TooManyAttemptsError && e.attempts === 3,
    );
  });

  test('item 8: when subscribing fails it polls with a short back-off, not the holder TTL, and says so', async () => {
    const { hub } = fakeHub({ failSubscribe: true });
    const recorded = recordEvents();
    let calls = 0;
    const started = performance.now();
    try {
      await acquireWithWaiting(
        plan({
          wake: [{ hub, channel: 'c' }],
          attempt: async () => {
            calls += 1;
            return calls < 5 ? held : granted;
          },
        }),
      );
      assert.ok(performance.now() - started < 1_000, 'polled, did not sleep the holder TTL');
      assert.equal(recorded.events.filter((e) => e.type === 'polling').length, 1, 'one polling event');
      assert.equal(recorded.events.filter((e) => e.type === 'subscribe-failed').length, 1);
    } finally {
      recorded.stop();
    }
  });
});

// Found by the fault suite (orphaned key, CI): a give-back that fails on a transient error (a reset
// connection rejected it) left the token holding the lock for up to a TTL, owned by nobody.
describe('give-back after giving up', () => {
  /** A give-back that fails `failures` times with a transient error, then releases. */
  function flakyGiveBack(failures: number) {
    const calls: number[] = [];
    return {
      calls,
      giveBack: async () => {
        calls.push(performance.now());
        if (calls.length <= failures) throw new Error('Socket closed unexpectedly');
        return true;
      },
    };
  }

  test('a transient failure is retried until it answers, and reported once', async () => {
    const recorded = recordEvents();
    const flaky = flakyGiveBack(2);
    const p = plan({
      retries: 0,
      attempt: async () => Promise.reject(new Error('ECONNRESET')),
      giveBack: flaky.giveBack,
    });
    try {
      await assert.rejects(acquireWithWaiting(p), RedisUnavailableError);
      await until(() => recorded.events.some((e) => e.type === 'give-back'));
      assert.equal(flaky.calls.length, 3);
      const giveBacks = recorded.events.filter((e) => e.type === 'give-back');
      assert.deepEqual(
        giveBacks.map((e) => e.type === 'give-back' && e.released),
        [true],
      );
    } finally {
      recorded.stop();
    }
  });

  test('tryAcquire: the same', async () => {
    const flaky = flakyGiveBack(1);
    const p = plan({
      attempt: async () => Promise.reject(new Error('ECONNRESET')),
      giveBack: flaky.giveBack,
    });
    await assert.rejects(attemptOnce(p), RedisUnavailableError);
    await until(() => flaky.calls.length === 2);
  });

  test('retries stop once a TTL has passed since the attempt (the key expired by itself), or on a LockError', async () => {
    const recorded = recordEvents();
    const flaky = flakyGiveBack(Number.POSITIVE_INFINITY);
    let attemptedAt = Number.NaN;
    // Long enough for a retry on a busy machine (they start 5 ms after the failure).
    const ttlMs = 500;
    const p = plan({
      ttlMs,
      retries: 0,
      attempt: async () => {
        attemptedAt = performance.now();
        throw new Error('x');
      },
      giveBack: flaky.giveBack,
    });
    try {
      await assert.rejects(acquireWithWaiting(p), RedisUnavailableError);
      await until(() => recorded.events.some((e) => e.type === 'give-back'));
      const last = flaky.calls.at(-1) as number;
      assert.ok(flaky.calls.length >= 2, `retried (${flaky.calls.length})`);
      // Measured from the attempt (the loop's clock read just before it), not from the call: a
      // busy machine may stall between the two.
      assert.ok(last - attemptedAt <= ttlMs, `no try after the TTL (${(last - attemptedAt).toFixed(1)} ms)`);
      const event = recorded.events.find((e) => e.type === 'give-back');
      assert.ok(event?.type === 'give-back' && event.released === undefined && event.error instanceof Error);

      const closed = new ClientClosedError('closed');
      let closedCalls = 0;
      const q = plan({
        retries: 0,
        attempt: async () => Promise.reject(new Error('x')),
        giveBack: async () => {
          closedCalls += 1;
          throw closed;
        },
      });
      await assert.rejects(acquireWithWaiting(q), RedisUnavailableError);
      await new Promise((r) => setTimeout(r, 30));
      assert.equal(closedCalls, 1, 'a LockError is not retried');
    } finally {
      recorded.stop();
    }
  });

  test('while the call still runs (a grant with no validity left), a failed give-back is not retried later', async () => {
    // The next attempt uses the same token: a give-back retried after it could delete its lock.
    let n = 0;
    const flaky = flakyGiveBack(1);
    const stale: AttemptOutcome = { acquired: true, fencingToken: 1, sentAt: -1e9 };
    const p = plan({
      attempt: async () => (++n === 1 ? stale : granted),
      giveBack: flaky.giveBack,
    });
    await acquireWithWaiting(p);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(flaky.calls.length, 1);
  });
});

describe('the error when retries run out', () => {
  test('after a grant that came back too late to use, it says so, not that another owner holds the lock', async () => {
    // CI: a 100 ms lock whose one attempt's reply took longer, reported as "held by another owner".
    const stale: AttemptOutcome = { acquired: true, fencingToken: 1, sentAt: -1e9 };
    const p = plan({ retries: 0, attempt: async () => stale });
    await assert.rejects(
      acquireWithWaiting(p),
      (e: unknown) =>
        e instanceof TooManyAttemptsError && /too late/.test(e.message) && !/another owner/.test(e.message),
    );
  });

  test('after a held lock, it names another owner', async () => {
    const p = plan({ retries: 0, attempt: async () => ({ acquired: false, holderPttlMs: 1_000 }) });
    await assert.rejects(
      acquireWithWaiting(p),
      (e: unknown) => e instanceof TooManyAttemptsError && /another owner/.test(e.message),
    );
  });
});

describe('attemptOnce (tryAcquire)', () => {
  test('item 12: unanswered within the TTL: RedisUnavailableError; the late grant is given back (item 3)', async () => {
    let late: ((o: AttemptOutcome) => void) | undefined;
    const p = plan({
      ttlMs: 50,
      attempt: () =>
        new Promise<AttemptOutcome>((resolve) => {
          late = resolve;
        }),
    });
    await assert.rejects(attemptOnce(p), RedisUnavailableError);
    const before = p.gaveBack;
    late?.(granted);
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(p.gaveBack, before + 1);
  });

  test('item 3: a failed attempt gives its token back and rejects with the cause', async () => {
    const cause = new Error('ECONNRESET');
    const p = plan({ attempt: async () => Promise.reject(cause) });
    await assert.rejects(
      attemptOnce(p),
      (e: unknown) => e instanceof RedisUnavailableError && e.cause === cause,
    );
    assert.equal(p.gaveBack, 1);
  });
});
