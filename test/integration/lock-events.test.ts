/**
 * The metrics events on the `locksmith` diagnostics channel: `acquired` (with the wait and the
 * lock's kind), `released` (with the hold time), `contended` (once per acquire that had to wait) and
 * `timed-out`. The order is the order of what happened, and nothing is published while nobody
 * listens (the channel has no subscribers then, so `lockEventsObserved()` is false).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { lockEventsObserved } from '../../src/events.js';
import {
  FairMutex,
  type LockEvent,
  LockTimeoutError,
  Mutex,
  Semaphore,
  subscribeLockEvents,
} from '../../src/index.js';
import { ioredisKind } from '../fixtures/clients.js';
import { nameMaker, redisForSuite, until } from '../fixtures/helpers.js';

/** The events of `lockName` only: the suite's other locks are not this test's business. */
function record(lockName: string): { events: LockEvent[]; stop: () => void } {
  const events: LockEvent[] = [];
  const stop = subscribeLockEvents((event) => {
    if (event.lockName === lockName) events.push(event);
  });
  return { events, stop };
}

const metricTypes = new Set(['acquired', 'released', 'contended', 'timed-out']);

describe('lock events for metrics (ioredis 6)', () => {
  const redis = redisForSuite(ioredisKind, { clients: 1 });
  const name = nameMaker('lock-events');

  test('nobody listens: the channel reports no subscribers, so events cost a check', () => {
    assert.equal(lockEventsObserved(), false);
    const stop = subscribeLockEvents(() => {});
    assert.equal(lockEventsObserved(), true);
    stop();
    assert.equal(lockEventsObserved(), false);
  });

  test('an uncontended acquire and release: acquired (kind, wait, attempts), then released (hold time)', async () => {
    const lockName = name();
    const { events, stop } = record(lockName);
    try {
      const lease = await new Mutex(redis.a.client, lockName).acquire();
      await lease.release();
    } finally {
      stop();
    }
    assert.deepEqual(
      events.map((e) => e.type),
      ['acquired', 'released'],
    );
    const [acquired, released] = events;
    assert.ok(acquired?.type === 'acquired' && released?.type === 'released');
    assert.equal(acquired.kind, 'Mutex');
    assert.equal(acquired.attempts, 1);
    assert.ok(acquired.waitMs >= 0 && acquired.fencingToken > 0);
    assert.ok(released.heldMs >= 0);
  });

  test('a waiter: contended once, then acquired with the wait it had; tryAcquire on a held lock is not contention', async () => {
    const lockName = name();
    const lock = new FairMutex(redis.a.client, lockName);
    const first = await lock.acquire();
    const { events, stop } = record(lockName);
    try {
      assert.equal(await lock.tryAcquire(), null);
      const waiting = lock.acquire({ timeoutMs: 30_000 });
      await until(() => events.some((e) => e.type === 'contended'), 'the waiter reports contention');
      await first.release();
      const second = await waiting;
      await second.release();
    } finally {
      stop();
    }
    assert.deepEqual(
      events.filter((e) => metricTypes.has(e.type)).map((e) => e.type),
      ['contended', 'released', 'acquired', 'released'],
    );
    const acquired = events.find((e) => e.type === 'acquired');
    assert.ok(acquired?.type === 'acquired');
    assert.equal(acquired.kind, 'FairMutex');
  });

  test('a wait that runs out: contended, then timed-out with the timeout, and no acquired', async () => {
    const lockName = name();
    const semaphore = new Semaphore(redis.a.client, lockName, { limit: 1 });
    const holder = await semaphore.acquire();
    const { events, stop } = record(lockName);
    try {
      await assert.rejects(semaphore.acquire({ timeoutMs: 200 }), LockTimeoutError);
    } finally {
      stop();
      await holder.release();
    }
    const types = events.filter((e) => metricTypes.has(e.type));
    assert.deepEqual(
      types.map((e) => e.type),
      ['contended', 'timed-out'],
    );
    const timedOut = types[1];
    assert.ok(timedOut?.type === 'timed-out');
    assert.equal(timedOut.timeoutMs, 200);
  });
});
