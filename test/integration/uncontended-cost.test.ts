/**
 * What an uncontended cycle (acquire, then release) runs on the server, by command (INFO
 * commandstats): the work that exists for waiters, queues and re-sent releases costs nothing while
 * nobody waits (docs/design.md, "What an uncontended cycle costs"), and comes back as soon as
 * someone does. Counts, not timings: they hold on a busy machine. One client (ioredis) suffices: the
 * scripts are the same on every client, and the contract suite runs every kind on every client.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FairMutex, Mutex, RedlockMutex, ReentrantMutex } from '../../src/index.js';
import { clientKinds } from '../fixtures/clients.js';
import { commandCalls, resetStats } from '../fixtures/commandstats.js';
import { nameMaker, redisForSuite, until } from '../fixtures/helpers.js';
import { lockKeyIsFree } from '../fixtures/lock-value.js';

const name = nameMaker('cost');
const kind = clientKinds[0] as (typeof clientKinds)[number];

/** Acquire, then release, as the one thing the server runs between two RESETSTATs. */
type Cycle = () => Promise<void>;

describe(`uncontended cycles pay only for what is used (${kind.name})`, () => {
  const redis = redisForSuite(kind);
  const measure = async (cycle: Cycle) => {
    await resetStats(redis.server);
    await cycle();
    return commandCalls(redis.server);
  };
  const cycleOf =
    (lock: { acquire(): Promise<{ release(): Promise<boolean> }> }): Cycle =>
    async () => {
      const lease = await lock.acquire();
      assert.equal(await lease.release(), true);
    };

  const hot = { evalsha: 2, get: 2, set: 3, time: 1 };
  for (const [label, make] of [
    ['Mutex', (n: string) => new Mutex(redis.a.client, n)],
    ['FairMutex', (n: string) => new FairMutex(redis.a.client, n)],
  ] as const) {
    test(`${label}: 8 commands once a release left the lock free, and no read of the counter or the queue`, async () => {
      const lock = make(name());
      // The first cycle on a name knows nothing of its queue: it reads the counter once, and a
      // FairMutex the queue (found empty, so its release has nothing to look at), a Mutex's
      // release the name's MultiMutex reservation (none).
      const first = await measure(cycleOf(lock));
      const gets = label === 'Mutex' ? 4 : 3;
      assert.equal(first.get, gets, `the first cycle reads the counter: ${JSON.stringify(first)}`);
      assert.deepEqual(await measure(cycleOf(lock)), hot);
      assert.ok(await lockKeyIsFree(redis.a, lock.keys.lock));
      assert.equal((await lock.inspect()).remainingTtlMs, undefined, 'a free lock has no lease time left');
    });

    test(`${label}: a waiter brings the queue back into the release, and a drained queue leaves it again`, async () => {
      const lock = make(name());
      const contender = make(lock.name);
      await measure(cycleOf(lock));
      const held = await lock.acquire();
      const waiting = new (label === 'Mutex' ? Mutex : FairMutex)(redis.b.client, lock.name).acquire();
      await until(
        async () => Number(await redis.a.command('LLEN', lock.keys.queue)) > 0,
        'the waiter queued',
      );
      await held.release(); // handed to the waiter
      const handedTo = await waiting;
      await handedTo.release(); // nobody left: the queue is popped once more, then known empty
      assert.deepEqual(await measure(cycleOf(contender)), hot);
    });
  }

  test('ReentrantMutex: 9 commands (its holds are read once, on the last release)', async () => {
    const lock = new ReentrantMutex(redis.a.client, name());
    await measure(cycleOf(lock));
    assert.deepEqual(await measure(cycleOf(lock)), { ...hot, hkeys: 1 });
  });

  // 11: the Mutex's 8, and the release's tombstone (a GET and a SET) and the attempt's read of it
  // (a GET): a client's re-sent attempt that reaches a server after its token's release takes
  // nothing there (issue 39).
  test('RedlockMutex (one server here): 11 commands per server', async () => {
    const lock = new RedlockMutex([redis.a.client], name());
    await measure(cycleOf(lock));
    assert.deepEqual(await measure(cycleOf(lock)), { ...hot, get: hot.get + 2, set: hot.set + 1 });
  });

  test('a release re-sent after the next caller took the lock still reports that it released', async () => {
    const lock = new Mutex(redis.a.client, name());
    const first = await lock.acquire();
    assert.equal(await first.release(), true);
    const next = await new Mutex(redis.b.client, lock.name).acquire();
    // The releaser is carried from the free lock's value into the next holder's ("prev").
    assert.equal(await lock.releaseToken(first.token), true);
    assert.equal((await lock.inspect()).ownerToken, next.token, 'the next holder keeps the lock');
    assert.equal(await next.release(), true);
  });
});
