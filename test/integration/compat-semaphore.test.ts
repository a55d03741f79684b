/**
 * The book's semaphores (Redis in Action 6.3) on the Semaphore's scripts, for every client kind:
 * the book's return conventions (identifier or null, booleans), one attempt that never waits,
 * holders that expire after `timeoutMs` by the server's clock, refresh, and sharing a name with
 * `Semaphore` users.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  acquireFairSemaphore,
  acquireSemaphore,
  acquireSemaphoreWithLock,
  refreshFairSemaphore,
  releaseFairSemaphore,
  releaseSemaphore,
  Semaphore,
} from '../../src/index.js';
import { clientKinds } from '../fixtures/clients.js';
import { awaitedLater, nameMaker, redisForSuite, until } from '../fixtures/helpers.js';

const freshName = nameMaker('book-semaphore');

for (const kind of clientKinds) {
  describe(`Redis in Action semaphores (${kind.name})`, () => {
    const redis = redisForSuite(kind);

    test('acquire_semaphore / release_semaphore: identifier or null, at most `limit`, no waiting', async () => {
      const name = freshName();
      const { a, b } = redis;
      for (const acquire of [acquireSemaphore, acquireFairSemaphore, acquireSemaphoreWithLock]) {
        const first = await acquire(a.client, name, 2);
        const second = await acquire(b.client, name, 2);
        assert.equal(typeof first, 'string');
        assert.equal(typeof second, 'string');
        const started = performance.now();
        assert.equal(await acquire(a.client, name, 2), null, 'no permit left: None');
        assert.ok(performance.now() - started < 1_000, 'one attempt, no waiting');
        assert.equal(await releaseSemaphore(a.client, name, 'not-an-identifier'), false);
        assert.equal(await releaseSemaphore(a.client, name, first as string), true);
        const third = await acquire(b.client, name, 2);
        assert.equal(typeof third, 'string');
        assert.equal(await releaseFairSemaphore(b.client, name, second as string), true);
        assert.equal(await releaseFairSemaphore(b.client, name, third as string), true);
      }
      assert.equal((await new Semaphore(a.client, name, { limit: 2 }).inspect()).permitsHeld, 0);
    });

    test('a holder lasts `timeoutMs` by the server clock; refresh_fair_semaphore extends it until it timed out', async () => {
      const name = freshName();
      const { a } = redis;
      const observer = new Semaphore(a.client, name, { limit: 1 });
      const identifier = (await acquireSemaphore(a.client, name, 1, 300)) as string;
      const [holder] = (await observer.inspect()).holders;
      assert.ok(holder && holder.remainingTtlMs <= 300 && holder.remainingTtlMs > 0);
      assert.equal(await refreshFairSemaphore(a.client, name, identifier, 5_000), true);
      const refreshed = (await observer.inspect()).holders[0]?.remainingTtlMs ?? 0;
      assert.ok(refreshed > 4_000, `refreshed to ${refreshed} ms`);
      assert.equal(await refreshFairSemaphore(a.client, name, identifier, 300), true);
      await until(async () => (await observer.inspect()).permitsHeld === 0, 'the permit timed out');
      assert.equal(await refreshFairSemaphore(a.client, name, identifier), false, 'timed out: False');
      assert.equal((await acquireSemaphore(a.client, name, 1)) !== null, true, 'the permit came back');
    });

    test('a book release hands its permit to a queued Semaphore waiter', async () => {
      const name = freshName();
      const { a, b } = redis;
      const identifier = (await acquireSemaphore(a.client, name, 1)) as string;
      const semaphore = new Semaphore(b.client, name, { limit: 1 });
      const waiting = awaitedLater(semaphore.acquire());
      await until(async () => (await semaphore.inspect()).queueLength === 1, 'the waiter is queued');
      assert.equal(await releaseSemaphore(a.client, name, identifier), true);
      const lease = await waiting;
      assert.deepEqual(
        (await semaphore.inspect()).holders.map((h) => h.token),
        [lease.token],
      );
      await lease.release();
    });

    test('bad input is refused before Redis', async () => {
      const { a } = redis;
      await assert.rejects(acquireSemaphore(a.client, 'x', 0), RangeError);
      await assert.rejects(acquireSemaphore(a.client, 'x', 2, -1), RangeError);
      await assert.rejects(releaseSemaphore(a.client, 'x', ''), RangeError);
      await assert.rejects(refreshFairSemaphore(a.client, 'x', 'id', 0), RangeError);
    });
  });
}
