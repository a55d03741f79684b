/** The Redis in Action functions and the redis_exp_lock API behave as their originals document. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AlreadyAcquiredError,
  acquireLockWithTimeout,
  Mutex,
  RedisExpLock,
  releaseLock,
  TooManyAttemptsError,
} from '../../src/index.js';
import { clientKinds, type TestClient } from '../fixtures/clients.js';
import { type RedisServer, startRedis } from '../fixtures/redis-server.js';

for (const kind of clientKinds) {
  describe(`compatibility APIs (${kind.name})`, () => {
    let server: RedisServer;
    let a: TestClient;
    let b: TestClient;

    before(async () => {
      server = await startRedis();
      a = await kind.create(server.url);
      b = await kind.create(server.url);
    });

    after(async () => {
      await a.close();
      await b.close();
      await server.stop();
    });

    describe('Redis in Action', () => {
      test('acquire_lock_with_timeout / release_lock', async () => {
        const token = await acquireLockWithTimeout(a.client, 'market', 1, 10);
        assert.equal(typeof token, 'string');
        const pttl = Number(await a.command('PTTL', 'locksmith:{market}'));
        assert.ok(pttl > 9_000 && pttl <= 10_000, 'lock_timeout is in seconds');
        const started = performance.now();
        assert.equal(
          await acquireLockWithTimeout(b.client, 'market', 0.2, 10),
          false,
          'false when the wait runs out',
        );
        assert.ok(performance.now() - started >= 190);
        assert.equal(await releaseLock(b.client, 'market', 'not-the-token'), false);
        assert.equal(await releaseLock(a.client, 'market', token as string), true);
        // A repeated release of the same token reports that it released (a re-sent release whose
        // first reply was lost did release); another token still gets false.
        assert.equal(await releaseLock(a.client, 'market', token as string), true);
        assert.equal(await releaseLock(b.client, 'market', 'not-the-token'), false);
      });

      test('lock_timeout is rounded up to whole seconds, as in the book', async () => {
        const token = await acquireLockWithTimeout(a.client, 'rounded', 1, 0.2);
        const pttl = Number(await a.command('PTTL', 'locksmith:{rounded}'));
        assert.ok(pttl > 900, `PTTL ${pttl}`);
        await releaseLock(a.client, 'rounded', token as string);
      });

      test('shares keys and fencing with Mutex', async () => {
        const token = await acquireLockWithTimeout(a.client, 'shared');
        assert.equal(await new Mutex(b.client, 'shared').tryAcquire(), null);
        const first = Number(await a.command('GET', 'locksmith:{shared}:fence'));
        await releaseLock(a.client, 'shared', token as string);
        const lease = await new Mutex(b.client, 'shared').acquire();
        assert.ok(lease.fencingToken > first && first > 0);
        await lease.release();
      });
    });

    describe('redis_exp_lock', () => {
      test('lock / locked / key_locked / key_owned / unlock', async () => {
        const lock = new RedisExpLock('exp-1', { redis: a.client });
        const other = new RedisExpLock('exp-1', { redis: b.client });
        assert.equal(lock.locked(), false);
        assert.equal(await lock.keyLocked(), false);
        assert.equal(await lock.lock(), 1, 'lock resolves with the number of attempts');
        assert.equal(lock.locked(), true);
        assert.equal(await other.keyLocked(), true);
        assert.equal(await lock.keyOwned(), true);
        assert.equal(await other.keyOwned(), false);
        const pttl = Number(await a.command('PTTL', 'locksmith:{exp-1}'));
        assert.ok(pttl > 59_000, 'expiry defaults to 60 seconds');
        assert.equal(await lock.unlock(), true);
        assert.equal(lock.locked(), false);
        assert.equal(await lock.unlock(), false, 'unlock when not locked is false');
      });

      test('locking a locked object raises AlreadyAcquiredError (lock and try_lock)', async () => {
        const lock = new RedisExpLock('exp-2', { redis: a.client });
        await lock.lock();
        await assert.rejects(lock.lock(), AlreadyAcquiredError);
        await assert.rejects(lock.tryLock(), AlreadyAcquiredError);
        await lock.unlock();
      });

      test('try_lock returns false when taken; retries run out with TooManyAttemptsError', async () => {
        const holder = new RedisExpLock('exp-3', { redis: a.client });
        assert.equal(await holder.tryLock(), true);
        const waiter = new RedisExpLock('exp-3', { redis: b.client, retries: 3, interval: 0.02 });
        assert.equal(await waiter.tryLock(), false);
        const started = performance.now();
        await assert.rejects(
          waiter.lock(),
          (e: unknown) => e instanceof TooManyAttemptsError && e.attempts === 4,
        );
        assert.ok(performance.now() - started >= 55, 'waited `interval` between attempts');
        const impatient = new RedisExpLock('exp-3', { redis: b.client });
        await assert.rejects(impatient.lock(), TooManyAttemptsError, 'retries default to 0');
        await holder.unlock();
      });

      test('lock counts attempts when it had to wait', async () => {
        const holder = new RedisExpLock('exp-4', { redis: a.client });
        await holder.lock();
        const waiter = new RedisExpLock('exp-4', { redis: b.client, retries: 100, interval: 0.01 });
        setTimeout(() => void holder.unlock(), 100);
        const attempts = await waiter.lock();
        assert.ok(attempts >= 2, `${attempts} attempts`);
        await waiter.unlock();
      });

      test('unlock returns false when the lock expired meanwhile', async () => {
        const lock = new RedisExpLock('exp-5', { redis: a.client, expiry: 0.1 });
        await lock.lock();
        await sleep(200);
        assert.equal(lock.locked(), false, 'no longer locked once expired, locally too');
        assert.equal(await lock.unlock(), false);
      });

      test('synchronize yields the attempts, returns the result, always unlocks', async () => {
        const lock = new RedisExpLock('exp-6', { redis: a.client });
        assert.equal(await lock.synchronize((attempts) => attempts * 10), 10);
        assert.equal(await lock.keyLocked(), false);
        await assert.rejects(
          lock.synchronize(() => {
            throw new Error('inside');
          }),
          { message: 'inside' },
        );
        assert.equal(await lock.keyLocked(), false);
      });

      test('expiry: null keeps the lock alive while held', async () => {
        const lock = new RedisExpLock('exp-7', { redis: a.client, expiry: null });
        await lock.lock();
        const pttl = Number(await a.command('PTTL', 'locksmith:{exp-7}'));
        assert.ok(pttl > 0, 'still a TTL on the server, so a crash frees it');
        assert.equal(await lock.unlock(), true);
      });
    });
  });
}
