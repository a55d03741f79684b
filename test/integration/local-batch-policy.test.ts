/**
 * What a process's batch (src/batching/local-batch.ts) owes the calls outside it and the policy
 * around it (issue 34, items 1, 4 and 12): a lease never trusts more than Redis holds after its
 * token was extended from outside; a local caller that gives up hands its age in Redis's queue to
 * the next, so the Mutex's wait bound counts from the first; two Mutex objects with other release
 * policies never share a batch. Ordered by what Redis shows, not by sleeping.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Lease, LockTimeoutError, Mutex } from '../../src/index.js';
import { clientKinds } from '../fixtures/clients.js';
import { nameMaker, redisForSuite, until } from '../fixtures/helpers.js';

const freshName = nameMaker('batch-policy');
const untimed = { maxLocalBatchMs: 60_000 };

/** The arrival (server ms) of each entry of a hand-off lock's queue, oldest first. */
async function queuedArrivals(command: (...args: string[]) => Promise<unknown>, queueKey: string) {
  const entries = (await command('LRANGE', queueKey, '0', '-1')) as string[];
  return entries.map((entry) => Number(entry.split('|')[0]));
}

for (const kind of clientKinds) {
  describe(`a token extended from outside its run (${kind.name})`, () => {
    const redis = redisForSuite(kind);

    // Item 1: extendToken(runToken, 100) made the key's PTTL 100 ms, yet the next local holder
    // reported remainingMs 2964, and another client took the lock 150 ms later.
    test('neither the holder nor the next local holder trusts more than the key holds in Redis', async () => {
      const name = freshName();
      const mutex = new Mutex(redis.a.client, name, { ttlMs: 3_000, ...untimed });
      const holder = await mutex.acquire();
      const next = mutex.acquire();
      assert.equal(await mutex.extendToken(holder.token, 100), true);
      assert.ok(holder.remainingMs <= 100, `the holder trusts ${holder.remainingMs} ms of a 100 ms key`);
      await holder.release();
      const lease = await next;
      const pttl = Number(await redis.a.command('PTTL', mutex.keys.lock));
      assert.ok(
        lease.remainingMs <= pttl,
        `the next holder trusts ${lease.remainingMs} ms, Redis holds ${pttl}`,
      );
      await lease.release();
    });

    test('a token released from outside ends the run: its holder is lost, the next asks Redis', async () => {
      const name = freshName();
      const mutex = new Mutex(redis.a.client, name, { ttlMs: 3_000, ...untimed });
      const holder = await mutex.acquire();
      const next = mutex.acquire();
      assert.equal(await mutex.releaseToken(holder.token), true);
      assert.equal(holder.isHeld, false, 'its token is gone from Redis');
      const lease = await next;
      assert.notEqual(lease.token, holder.token, 'granted by Redis, not passed on');
      assert.equal(await lease.isOwned(), true);
      await lease.release();
    });
  });
}

const kind = clientKinds[0] as (typeof clientKinds)[number];

describe(`the Mutex's wait bound and policy inside a batch (${kind.name})`, () => {
  const redis = redisForSuite(kind);

  // Item 4: only the caller that asks Redis has a queue entry; when it gave up, the next local
  // caller queued with a fresh arrival, its age restarted, and the patient caller waited 1,062 ms
  // for a bound of 300 (315-359 ms without the batch).
  test('a local caller that gives up hands its arrival in Redis to the next', async () => {
    const name = freshName();
    const held = await new Mutex(redis.b.client, name, { ttlMs: 10_000, maxLocalHolds: 1 }).acquire();
    const mutex = new Mutex(redis.a.client, name, { ttlMs: 10_000, handOffAfterMs: 300, ...untimed });
    const impatient = mutex.acquire({ timeoutMs: 200 });
    await until(
      async () => (await queuedArrivals(redis.a.command, mutex.keys.queue)).length === 1,
      'the first caller is queued in Redis',
    );
    const [first] = await queuedArrivals(redis.a.command, mutex.keys.queue);
    const patient = mutex.acquire({ timeoutMs: 10_000 });
    await assert.rejects(impatient, LockTimeoutError);
    // The patient caller asks Redis now, and its entry keeps the first one's age.
    let arrivals: number[] = [];
    await until(async () => {
      arrivals = await queuedArrivals(redis.a.command, mutex.keys.queue);
      return arrivals.length === 1 && Number(await redis.a.command('HLEN', mutex.keys.waiting)) === 1;
    }, 'the patient caller is queued in Redis');
    assert.deepEqual(arrivals, [first]);
    await held.release();
    await (await patient).release();
  });

  // Item 12: two Mutex objects on one client and name shared a batch made with the first object's
  // options: B (handOffAfterMs 0) released with A's policy (60 s).
  test('Mutex objects of one name with other handOffAfterMs batch apart', async () => {
    const name = freshName();
    const a = new Mutex(redis.a.client, name, { ttlMs: 10_000, handOffAfterMs: 60_000, ...untimed });
    const b = new Mutex(redis.a.client, name, { ttlMs: 10_000, handOffAfterMs: 0, ...untimed });
    const held: Lease = await a.acquire();
    // In its own batch, B's call asks Redis and queues there; in A's it would wait in the process.
    const waiting = b.acquire();
    await until(
      async () => Number(await redis.a.command('LLEN', b.keys.queue)) === 1,
      "B's call queued in Redis",
      5_000,
    );
    await held.release();
    const lease = await waiting;
    assert.equal(await lease.release(), true);
  });
});
