/**
 * The Mutex's own behaviour beyond the lock contract (lock-contract.ts runs that for every lock
 * kind): it barges into a free lock, skips waiters whose process is gone, and the exact shape of
 * its state.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Mutex } from '../../src/index.js';
import type { ClientKind } from '../fixtures/clients.js';
import { awaitedLater, nameMaker, redisForSuite, until } from '../fixtures/helpers.js';

export function mutexOnlySuite(kind: ClientKind): void {
  describe(`Mutex only (${kind.name})`, () => {
    const redis = redisForSuite(kind);
    const name = nameMaker(`mutex-${kind.name}`);

    test('its queue keys and hand-off channel share the lock’s hash tag', () => {
      const mutex = new Mutex(redis.a.client, name());
      for (const key of [
        mutex.keys.lock,
        mutex.keys.fence,
        mutex.keys.queue,
        mutex.keys.waiting,
        mutex.keys.grantedChannelPrefix,
      ]) {
        assert.equal(key.match(/\{([^}]*)\}/)?.[1], mutex.name);
      }
    });

    test('inspect() of a free Mutex is exactly its lock state', async () => {
      assert.deepEqual(await new Mutex(redis.a.client, name()).inspect(), {
        locked: false,
        ownerToken: undefined,
        remainingTtlMs: undefined,
        lastFencingToken: 0,
        holderLabel: undefined,
      });
    });

    test('a waiter whose process is gone is skipped (PUBLISH reached nobody)', async () => {
      const { a, b } = redis;
      const mutex = new Mutex(a.client, name(), { ttlMs: 20_000 });
      const held = await mutex.acquire();
      const waiting = awaitedLater(new Mutex(b.client, mutex.name).acquire({ timeoutMs: 15_000 }));
      await until(async () => Number(await a.command('LLEN', mutex.keys.queue)) === 1, 'the waiter queues');
      // A dead process's entry (the entry format of arrival-queue.lua, and its place in the waiting
      // hash), on a channel nobody listens to: within its deadline (server time; same machine) and
      // ahead of the live waiter, so it is looked at first and only PUBLISH's receiver count can
      // tell that nobody is there.
      const channel = `${mutex.keys.grantedChannelPrefix}gone`;
      const deadline = Date.now() + 5_000;
      await a.command('HSET', mutex.keys.waiting, 'dead-waiter', String(deadline));
      await a.command(
        'LPUSH',
        mutex.keys.queue,
        `${Date.now()}|${deadline}|20000|${channel.length}|0|${channel}dead-waiter`,
      );
      const released = performance.now();
      await held.release();
      const lease = await waiting;
      const waited = performance.now() - released;
      assert.ok(
        waited < 10_000,
        `the live waiter was handed the lock ${waited} ms after the release, TTL was 20 s`,
      );
      await lease.release();
    });

    // Fault suite, "workers paused at random": a queued waiter that took the free lock (its holder
    // expired) kept its queue entry, and a later release handed the lock to that finished call.
    test('a queued waiter that takes the lock when it finds it free leaves the queue', async () => {
      const { a, b } = redis;
      // Long enough for a busy machine to see the waiter queued before the lock expires (at 400 ms
      // the waiter could take the free lock before anyone saw its queue entry).
      const mutex = new Mutex(a.client, name(), { ttlMs: 2_000, autoExtend: false });
      await mutex.acquire();
      const waiting = awaitedLater(
        new Mutex(b.client, mutex.name, { ttlMs: 20_000 }).acquire({ timeoutMs: 15_000 }),
      );
      await until(async () => Number(await a.command('LLEN', mutex.keys.queue)) === 1, 'the waiter queues');
      // The holder never releases: the waiter wakes at its expiry and takes the free lock.
      const lease = await waiting;
      assert.equal((await mutex.inspect()).ownerToken, lease.token);
      assert.equal(
        Number(await a.command('LLEN', mutex.keys.queue)),
        0,
        'no entry left for a call that has the lock',
      );
      await lease.release();
    });

    test('a caller that finds the lock free takes it, whoever is queued; a release hands it on', async () => {
      const { a, b } = redis;
      // Every release hands over (handOffAfterMs 0): under the default window the live waiter may
      // take the quietly freed lock itself, and the unreachable entry stays until a hand-off.
      const mutex = new Mutex(a.client, name(), { ttlMs: 20_000, handOffAfterMs: 0 });
      // A queued waiter that is alive but not listening here: a FairMutex would hand it the free lock.
      const channel = `${mutex.keys.grantedChannelPrefix}elsewhere`;
      const deadline = Date.now() + 60_000;
      await a.command('HSET', mutex.keys.waiting, 'queued', String(deadline));
      await a.command(
        'RPUSH',
        mutex.keys.queue,
        `${Date.now()}|${deadline}|20000|${channel.length}|0|${channel}queued`,
      );
      const lease = await mutex.tryAcquire();
      assert.ok(lease, 'tryAcquire() takes a free lock although someone is queued');
      const next = awaitedLater(new Mutex(b.client, mutex.name).acquire({ timeoutMs: 15_000 }));
      await until(async () => Number(await a.command('LLEN', mutex.keys.queue)) === 2, 'the waiter queues');
      assert.equal(await lease.release(), true);
      // 'queued' reached nobody (its wake or its hand-off), so it is dropped and the live waiter
      // behind it gets the lock (handed over, or woken to take it free).
      const handed = await next;
      assert.equal(Number(await a.command('LLEN', mutex.keys.queue)), 0, 'the unreachable entry was dropped');
      assert.equal((await mutex.inspect()).ownerToken, handed.token);
      await handed.release();
    });
  });
}
