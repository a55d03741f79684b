/**
 * The shared deadline checker (src/deadline-checker.ts) and the bounded call built on it, with an
 * injected clock and injected timers: a call past its bound rejects with the typed error and its
 * cause, a settled call leaves its slot, one timer serves every outstanding call, and the timer
 * never keeps a process alive once nothing is outstanding.
 */
import assert from 'node:assert/strict';
import { describe, mock, test } from 'node:test';
import { boundedCall, type CallBound } from '../../src/bounded-call.js';
import { settleBefore } from '../../src/deadline.js';
import {
  checkerFor,
  DeadlineChecker,
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
  const sameTimers = {};
  const checker = new DeadlineChecker(clock, timers, () => sameTimers);
  const wait = (deadline: number): Expiring & { expired: number } => ({
    deadline,
    slot: -1,
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

  test('timers replaced (a test mocking them) re-arm at the next watch', () => {
    const clock = { t: 0, now: () => clock.t };
    const timers = new FakeTimers();
    let current: object = {};
    const checker = new DeadlineChecker(clock, timers, () => current);
    checker.watch({ deadline: 100, slot: -1, expire() {} });
    current = {};
    checker.watch({ deadline: 200, slot: -1, expire() {} });
    assert.equal(timers.armed.length, 2);
    assert.equal(timers.live?.ms, 200);
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
    assert.equal(checkerFor(clock).outstanding, 1, 'watched while it waits');
    assert.equal(await answering, 42);
    assert.equal(checkerFor(clock).outstanding, 0, 'its slot is freed once it settled');
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
