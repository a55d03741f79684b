/**
 * The Mutex's own behaviour beyond the lock contract (lock-contract.ts runs that for every lock
 * kind): its sleepers set and wake-up channel, and the exact shape of its state.
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

    test('its sleepers set and released channel share the lock’s hash tag', () => {
      const mutex = new Mutex(redis.a.client, name());
      for (const key of [
        mutex.keys.lock,
        mutex.keys.fence,
        mutex.keys.releasedChannel,
        mutex.keys.sleepers,
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
      });
    });

    test('a sleeper whose process is gone is skipped (PUBLISH reached nobody)', async () => {
      const { a, b } = redis;
      const mutex = new Mutex(a.client, name(), { ttlMs: 20_000 });
      const held = await mutex.acquire();
      const waiting = awaitedLater(new Mutex(b.client, mutex.name).acquire({ timeoutMs: 15_000 }));
      await until(
        async () => Number(await a.command('ZCARD', mutex.keys.sleepers)) === 1,
        'the waiter sleeps',
      );
      // A dead process's entry, on a channel nobody listens to: still within its deadline (server
      // time; same machine) and due before the live waiter's (15 s), so it is popped first and only
      // PUBLISH's receiver count can tell that nobody is there.
      await a.command(
        'ZADD',
        mutex.keys.sleepers,
        String(Date.now() + 5_000),
        `dead-waiter|${mutex.keys.releasedChannel}:gone`,
      );
      const released = performance.now();
      await held.release();
      const lease = await waiting;
      const waited = performance.now() - released;
      assert.ok(waited < 10_000, `the live waiter was woken ${waited} ms after the release, TTL was 20 s`);
      await lease.release();
    });
  });
}
