/**
 * The shared deadline checker (src/deadline-checker.ts) and the bounded call built on it, with an
 * injected time and injected timers: a call past its bound rejects with the typed error and its
 * cause, a settled call leaves its slot, one timer serves every outstanding call, and the timer
 * never keeps a process alive once nothing is outstanding. The bound is in real time whatever the
 * lock's clock does, and a test that mocks the timers (`mock.timers`) ends a call with `tick`.
 */
import assert from 'node:assert/strict';
import { describe, mock, test } from 'node:test';
import { boundedCall, type CallBound } from '../../src/bounded-call.js';
import { monotonicClock } from '../../src/clock.js';
import { settleBefore } from '../../src/deadline.js';
import {
  DeadlineChecker,
  deadlines,
  type Expiring,
  type Timer,
  type Timers,
} from '../../src/deadline-checker.js';
import { RedisUnavailableError } from '../../src/errors.js';

/** Timers the test fires by hand: at most one is armed at a time by a checker. */
class FakeTimers implements Timers {
  armed: { callback: () => void; ms: number; refed: boolean; cleared: boolean }[] = [];
  set(callback: () => void, ms: number): Timer {
    const timer = {
      callback,
      ms,
      refed: true,
      cleared: false,
      ref: () => {
        timer.refed = true;
      },
      unref: () => {
        timer.refed = false;
      },
    };
    this.armed.push(timer);
    return timer;
  }
  clear(timer: Timer): void {
    (timer as unknown as { cleared: boolean }).cleared = true;
  }
  /** The one timer not cleared yet (undefined: none). */
  get live() {
    const live = this.armed.filter((t) => !t.cleared);
    assert.ok(live.length <= 1, 'one timer at most');
    return live[0];
  }
  fire(): void {
    const timer = this.live;
    assert.ok(timer, 'a timer is armed');
    timer.cleared = true;
    timer.callback();
  }
}

function setup() {
  const clock = { t: 1_000, now: () => clock.t };
  const timers = new FakeTimers();
  const checker = new DeadlineChecker(clock, timers);
  const wait = (due: number): Expiring & { expired: number } => ({
    due,
    slot: -1,
    own: undefined,
    expired: 0,
    expire() {
      this.expired += 1;
    },
  });
  return { clock, timers, checker, wait };
}

describe('DeadlineChecker', () => {
  test('one timer for the earliest deadline; a later wait re-arms nothing', () => {
    const { timers, checker, wait } = setup();
    checker.watch(wait(3_000));
    checker.watch(wait(3_500));
    assert.equal(timers.armed.length, 1);
    assert.equal(timers.live?.ms, 2_000);
    checker.watch(wait(2_000)); // due earlier: the timer moves
    assert.equal(timers.armed.length, 2);
    assert.equal(timers.live?.ms, 1_000);
    assert.equal(checker.outstanding, 3);
  });

  test('a wait past its deadline expires, once; one not yet due stays and re-arms the timer for it', () => {
    const { clock, timers, checker, wait } = setup();
    const first = wait(2_000);
    const second = wait(2_500);
    checker.watch(first);
    checker.watch(second);
    clock.t = 2_000;
    timers.fire();
    assert.equal(first.expired, 1);
    assert.equal(second.expired, 0);
    assert.equal(first.slot, -1, 'an expired wait leaves its slot');
    assert.equal(checker.outstanding, 1);
    assert.equal(timers.live?.ms, 500, 're-armed for what is left of the next deadline');
    clock.t = 2_500;
    timers.fire();
    assert.equal(second.expired, 1);
    assert.equal(first.expired, 1);
    assert.equal(checker.armed, false, 'nothing outstanding: not re-armed');
  });

  test('a timer that fires before the clock reaches the deadline expires nothing and re-arms', () => {
    const { clock, timers, checker, wait } = setup();
    const due = wait(2_000);
    checker.watch(due);
    clock.t = 1_999.5;
    timers.fire();
    assert.equal(due.expired, 0);
    assert.equal(timers.live?.ms, 1);
  });

  test('an unwatched wait leaves its slot; the others keep theirs (swap-remove)', () => {
    const { checker, wait } = setup();
    const [a, b, c] = [wait(2_000), wait(2_100), wait(2_200)];
    for (const w of [a, b, c]) checker.watch(w);
    checker.unwatch(a);
    assert.equal(a.slot, -1);
    assert.equal(checker.outstanding, 2);
    assert.equal(c.slot, 0, 'the last one took the freed slot');
    checker.unwatch(a); // twice: a no-op
    checker.unwatch(c);
    checker.unwatch(b);
    assert.equal(checker.outstanding, 0);
  });

  test('nothing outstanding: the timer stays armed but unref`d, and stops when it fires', () => {
    const { clock, timers, checker, wait } = setup();
    const w = wait(3_000);
    checker.watch(w);
    assert.equal(checker.keepsAlive, true, 'a call outstanding keeps the process alive until its bound');
    checker.unwatch(w);
    assert.equal(checker.keepsAlive, false);
    assert.equal(timers.live?.refed, false, 'unref`d: it never keeps the process alive');
    const next = wait(3_100);
    checker.watch(next); // the same timer serves the next call: ref'd again, not re-armed
    assert.equal(timers.armed.length, 1);
    assert.equal(timers.live?.refed, true);
    checker.unwatch(next);
    clock.t = 3_000;
    timers.fire();
    assert.equal(checker.armed, false, 'fired with nothing outstanding: stopped');
    assert.equal(timers.live, undefined);
  });
});

describe('boundedCall over the shared checker (mocked setTimeout, injected clock)', () => {
  const bound = (clock: { now(): number }): CallBound => ({
    name: 'job',
    clock,
    replyTimeoutMs: 2_000,
    disconnected: () => 'reconnecting',
  });

  test('past its bound: RedisUnavailableError, its cause the client`s account; a late reply is told', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const clock = { t: 0, now: () => clock.t };
      let answer: (value: string) => void = () => {};
      const call = new Promise<string>((resolve) => (answer = resolve));
      const late: unknown[] = [];
      const bounded = boundedCall(bound(clock), 'the release', call, {
        goesOn: 'it goes on',
        onLate: (settled) => late.push(settled),
      });
      let settled: unknown;
      bounded.then(
        (value) => (settled = value),
        (error: unknown) => (settled = error),
      );
      const outcome = (): unknown => settled;
      clock.t = 1_999;
      mock.timers.tick(1_999);
      await Promise.resolve();
      assert.equal(outcome(), undefined, 'not before its bound');
      clock.t = 2_000;
      mock.timers.tick(1);
      await new Promise((resolve) => setImmediate(resolve));
      const error = outcome();
      assert.ok(error instanceof RedisUnavailableError, String(error));
      assert.match(error.message, /the release got no reply in time; it goes on/);
      assert.ok(error.cause instanceof Error);
      assert.equal(error.cause.message, 'No reply from Redis within 2000 ms: reconnecting');
      answer('OK');
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(late, [{ kind: 'value', value: 'OK' }]);
    } finally {
      mock.timers.reset();
    }
  });

  test('answered in time: its reply, its slot freed, and no timer keeps the process alive', async () => {
    const clock = { now: () => performance.now() };
    const before = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const answering = boundedCall(bound(clock), 'inspect()', Promise.resolve(42));
    assert.equal(deadlines.outstanding, 1, 'watched while it waits');
    assert.equal(await answering, 42);
    assert.equal(deadlines.outstanding, 0, 'its slot is freed once it settled');
    const refed = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    assert.equal(refed, before, 'the checker`s timer is unref`d once nothing is outstanding');
  });

  test('a client error: RedisUnavailableError with the error as cause; an abort: the signal`s reason', async () => {
    const clock = { now: () => performance.now() };
    const failure = new Error('ECONNRESET');
    await assert.rejects(
      boundedCall(bound(clock), 'the extension', Promise.reject(failure)),
      (error: unknown) => error instanceof RedisUnavailableError && error.cause === failure,
    );
    const controller = new AbortController();
    const waiting = settleBefore(
      new Promise(() => {}),
      clock.now() + 10_000,
      controller.signal,
      clock,
      () => {},
    );
    controller.abort(new Error('stop'));
    await assert.rejects(waiting, /stop/);
  });
});

/** An unanswered call and how it ended (undefined: not yet). */
function unanswered(bound: CallBound) {
  let ended: unknown;
  const bounded = boundedCall(bound, 'the release', new Promise<never>(() => {}));
  bounded.then(
    () => (ended = 'answered'),
    (error: unknown) => (ended = error),
  );
  return { ended: () => ended };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('the bound is in real time, and mocked timers end it with tick', () => {
  const bound = (clock: { now(): number }, replyTimeoutMs = 2_000): CallBound => ({
    name: 'job',
    clock,
    replyTimeoutMs,
    disconnected: () => undefined,
  });
  // One clock shared by the two tests below, as a test file's fixtures share one.
  const shared = { t: 0, now: () => shared.t };

  for (const round of ['first', 'second']) {
    test(`mock.timers enabled, reset and enabled again (${round} test on one clock): tick ends the call`, async () => {
      mock.timers.enable({ apis: ['setTimeout'] });
      try {
        const call = unanswered(bound(shared));
        mock.timers.tick(1_999);
        await Promise.resolve();
        assert.equal(call.ended(), undefined, 'not before its bound');
        mock.timers.tick(1);
        await settle();
        assert.ok(call.ended() instanceof RedisUnavailableError, String(call.ended()));
      } finally {
        mock.timers.reset();
      }
    });
  }

  test('mock.timers on setTimeout alone: tick(bound + 1) ends a call on the default clock', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const call = unanswered(bound(monotonicClock));
      mock.timers.tick(2_001);
      await settle();
      const error = call.ended();
      assert.ok(error instanceof RedisUnavailableError, String(error));
      assert.equal((error.cause as Error).message, 'No reply from Redis within 2000 ms');
      assert.equal(deadlines.outstanding, 0, 'a mocked wait is not the shared checker`s');
    } finally {
      mock.timers.reset();
    }
  });

  test('a frozen clock: the call still ends once its bound has passed in real time', async () => {
    const frozen = { now: () => 1_000 };
    const started = performance.now();
    const call = boundedCall(bound(frozen, 30), 'the release', new Promise<never>(() => {}));
    await assert.rejects(call, RedisUnavailableError);
    const waited = performance.now() - started;
    assert.ok(waited >= 29, `not before its bound (${waited} ms)`);
    assert.ok(waited < 1_000, `ended in real time (${waited} ms)`);
    const settled = await settleBefore(new Promise<never>(() => {}), 1_030, undefined, frozen, () => {});
    assert.deepEqual(settled, { kind: 'abandoned' });
  });

  test('a wait watched on real timers, ended while they are mocked, leaves no ref`d timer', async () => {
    let answer: (value: number) => void = () => {};
    const call = boundedCall(bound(monotonicClock), 'inspect()', new Promise<number>((r) => (answer = r)));
    assert.equal(deadlines.keepsAlive, true);
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      answer(7);
      assert.equal(await call, 7);
      assert.equal(deadlines.keepsAlive, false, 'the real timer is unref`d, not left to a mocked clear');
    } finally {
      mock.timers.reset();
    }
  });

  test('a wait watched on mocked timers and ended after they were reset: cleared by its own clear', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    let answer: (value: number) => void = () => {};
    const call = boundedCall(bound(monotonicClock), 'inspect()', new Promise<number>((r) => (answer = r)));
    mock.timers.reset();
    answer(8);
    assert.equal(await call, 8);
    assert.equal(deadlines.outstanding, 0);
  });
});

describe('a failure to start waiting is a rejection, and leaves nothing watched', () => {
  test('a clock that throws: settleBefore rejects, it does not throw', async () => {
    const broken = {
      now: (): number => {
        throw new Error('no clock');
      },
    };
    const waiting = settleBefore(Promise.resolve(1), 10, undefined, broken, () => {});
    await assert.rejects(waiting, /no clock/);
  });

  test('a signal that throws on addEventListener: boundedCall rejects, its wait unwatched', async () => {
    const signal = {
      aborted: false,
      addEventListener: () => {
        throw new Error('no listener');
      },
      removeEventListener: () => {},
    } as unknown as AbortSignal;
    const before = deadlines.outstanding;
    const call = boundedCall(
      { name: 'job', clock: monotonicClock, replyTimeoutMs: 2_000, disconnected: () => undefined },
      'the release',
      new Promise<never>(() => {}),
      { signal },
    );
    assert.equal(deadlines.outstanding, before, 'unwatched');
    await assert.rejects(call, /no listener/);
  });
});
