/**
 * ReentrantMutex on a real Redis, for every client kind: what only a reentrant lock does (the lock
 * contract, run for it from tools/lock-kinds/registry.ts, covers the rest). Nested holds by one
 * owner (through the async context and through an explicit `LockOwner`), the same fencing token for
 * every hold, another owner excluded until the last hold is released, releases beyond the holds
 * reported, the hold count kept by extensions, and a crashed holder's holds expiring with its lock.
 * Events are ordered by observable state (a waiter queued, a hold count, a key gone).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LockLostError, LockOwner, LockTimeoutError, Mutex, ReentrantMutex } from '../../src/index.js';
import { type Child, spawnChild } from '../fixtures/child.js';
import { clientKinds } from '../fixtures/clients.js';
import { awaitedLater, nameMaker, redisForSuite, sleep, until, within } from '../fixtures/helpers.js';

const freshName = nameMaker('reentrant-test');

for (const kind of clientKinds) {
  describe(`ReentrantMutex (${kind.name})`, () => {
    const redis = redisForSuite(kind);
    const holdsOf = async (mutex: ReentrantMutex) => (await mutex.inspect()).holdCount;
    const queued = (mutex: ReentrantMutex, count: number) =>
      until(async () => (await mutex.inspect()).queueLength === count, `${count} waiter(s) queued`);

    test('a function that takes the lock, called by one holding it, re-enters (a Mutex waits for itself)', async () => {
      const name = freshName();
      const mutex = new ReentrantMutex(redis.a.client, name);
      // The failure mode: an async function holding the lock calls another that takes it too.
      const debit = (lock: { using<T>(work: () => Promise<T>): Promise<T> }) =>
        lock.using(async () => (await redis.a.command('INCR', `${name}:debits`)) as number);
      const result = await mutex.using(async (_signal, outer) => {
        const inner = await debit({
          using: (work) =>
            mutex.using(async (_s, lease) => {
              assert.equal(lease.fencingToken, outer.fencingToken, 'one holder, one fencing token');
              assert.notEqual(lease.token, outer.token, 'each hold has its own token');
              assert.equal(await holdsOf(mutex), 2);
              return work();
            }),
        });
        assert.equal(await holdsOf(mutex), 1, 'the inner hold is released, the outer kept');
        assert.ok(await mutex.isLocked());
        return inner;
      });
      assert.equal(result, 1);
      assert.equal(await mutex.isLocked(), false, 'the last release frees it');
      assert.equal(await redis.a.command('EXISTS', mutex.reentrantKeys.holds), 0);

      // The same code with a plain Mutex deadlocks on itself until its timeout.
      const plain = new Mutex(redis.a.client, freshName(), { timeoutMs: 300 });
      await assert.rejects(
        plain.using(() => debit(plain)),
        LockTimeoutError,
      );
    });

    test('an explicit owner re-enters across calls; holds may be released in any order', async () => {
      const owner = new LockOwner();
      const mutex = new ReentrantMutex(redis.a.client, freshName());
      const first = await mutex.acquire({ owner });
      const second = await mutex.acquire({ owner });
      const third = await mutex.tryAcquire({ owner });
      assert.ok(third, 'tryAcquire re-enters too');
      assert.deepEqual([second.fencingToken, third.fencingToken], [first.fencingToken, first.fencingToken]);
      const state = await mutex.inspect();
      assert.equal(state.holdCount, 3);
      assert.deepEqual([...state.holdTokens].sort(), [first.token, second.token, third.token].sort());
      // The first hold (the one in the lock key's value) goes first: another takes its place.
      assert.equal(await first.release(), true);
      assert.equal(await holdsOf(mutex), 2);
      assert.ok(await second.isOwned());
      assert.equal(await third.release(), true);
      assert.equal(await holdsOf(mutex), 1);
      assert.equal(await second.release(), true);
      assert.equal(await mutex.isLocked(), false);
      // The lock's own owner option: every call of this object is the same holder.
      const mine = new ReentrantMutex(redis.b.client, freshName(), { owner: new LockOwner() });
      const a = await mine.acquire();
      const b = await mine.tryAcquire();
      assert.ok(b, 'a re-entry never waits');
      assert.equal(b.fencingToken, a.fencingToken);
      await b.release();
      await a.release();
    });

    test('another holder is excluded until the last hold is released, then served', async () => {
      const mutex = new ReentrantMutex(redis.a.client, freshName());
      const other = new ReentrantMutex(redis.b.client, mutex.name);
      const owner = new LockOwner();
      const outer = await mutex.acquire({ owner });
      const inner = await mutex.acquire({ owner });
      assert.equal(await other.tryAcquire(), null, 'another owner does not re-enter');
      const waiting = awaitedLater(other.acquire({ timeoutMs: 20_000 }));
      await queued(mutex, 1);
      await inner.release();
      // Still held by the outer hold: the waiter is still queued and the lock is the owner's.
      assert.equal(await holdsOf(mutex), 1);
      assert.equal((await mutex.inspect()).ownerToken, outer.token);
      assert.equal((await mutex.inspect()).queueLength, 1);
      await outer.release();
      const next = await within(waiting, 5_000, 'the waiter is handed the lock by the last release');
      assert.ok(next.fencingToken > outer.fencingToken);
      assert.equal(await holdsOf(mutex), 1);
      // Calls outside any using() of the waiter's are new owners: they wait too.
      assert.equal(await other.tryAcquire(), null);
      await next.release();
    });

    test('releasing more than was acquired is reported, and takes nothing from the other holds', async () => {
      const owner = new LockOwner();
      const mutex = new ReentrantMutex(redis.a.client, freshName());
      const outer = await mutex.acquire({ owner });
      const inner = await mutex.acquire({ owner });
      assert.equal(await inner.release(), true);
      assert.equal(await inner.release(), false, 'a second release of the same hold');
      assert.equal(await mutex.releaseToken(inner.token), false, 'its token is no hold any more');
      // A hold token of the owner that was never granted (a re-entry whose reply was lost and never
      // applied is given back like this): nothing to release, the outer hold stays.
      assert.equal(await mutex.releaseToken(owner.holdToken()), false);
      assert.equal(await holdsOf(mutex), 1);
      assert.ok(outer.isHeld && (await outer.isOwned()));
      assert.equal(await outer.release(), true);
      assert.equal(await outer.release(), false);
      assert.equal(
        await mutex.releaseToken(outer.token),
        true,
        'a re-sent release of the last hold says it released',
      );
      assert.equal(await mutex.isLocked(), false);
    });

    test('extensions keep every hold and never shorten the lock under another hold', async () => {
      const owner = new LockOwner();
      const mutex = new ReentrantMutex(redis.a.client, freshName(), { ttlMs: 5_000, autoExtend: false });
      const outer = await mutex.acquire({ owner });
      const inner = await mutex.acquire({ owner, ttlMs: 1_000 });
      const pttl = async (key: string) => Number(await redis.a.command('PTTL', key));
      assert.ok((await pttl(mutex.keys.lock)) > 4_000, 'a shorter re-entry does not shorten the lock');
      await inner.extend(8_000);
      assert.equal(await holdsOf(mutex), 2);
      assert.ok((await pttl(mutex.keys.lock)) > 7_000);
      assert.ok((await pttl(mutex.reentrantKeys.holds)) > 7_000, 'the holds live as long as the lock');
      await outer.extend(1_000);
      assert.ok(
        (await pttl(mutex.keys.lock)) > 6_000,
        'the outer lease asked for less; the inner keeps its 8 s',
      );
      assert.equal(await holdsOf(mutex), 2);
      await inner.release();
      await outer.release();

      // With the watchdog: holds with a 1 s TTL outlive two TTLs, their count intact (at 300 ms, a
      // stall of 200 ms on a loaded machine lost the lease the test means to keep).
      const watched = new ReentrantMutex(redis.a.client, freshName(), { ttlMs: 1_000 });
      await watched.using(async (signal) => {
        await watched.using(async () => {
          await sleep(2_200);
          assert.equal(await holdsOf(watched), 2);
        });
        assert.equal(await holdsOf(watched), 1);
        assert.equal(signal.aborted, false);
      });
    });

    test('the async context decides the holder: separate calls wait, concurrent branches of one using() share it', async () => {
      const mutex = new ReentrantMutex(redis.a.client, freshName());
      const outer = await mutex.acquire();
      // Not inside a using(): a new owner, which waits.
      assert.equal(await mutex.tryAcquire(), null);
      await outer.release();
      await mutex.using(async (_signal, lease) => {
        // Two branches running at once in one holder's context are that holder (as two tasks of one
        // Java thread cannot be, but one async context can fork): they do not exclude each other.
        const fences = await Promise.all([
          mutex.using(async (_s, a) => a.fencingToken),
          mutex.using(async (_s, b) => b.fencingToken),
        ]);
        assert.deepEqual(fences, [lease.fencingToken, lease.fencingToken]);
        // A branch that must be a holder of its own names a new owner.
        assert.equal(await mutex.tryAcquire({ owner: new LockOwner() }), null);
      });
      // Another lock's using() does not make this one's calls re-enter.
      const other = new ReentrantMutex(redis.a.client, freshName());
      const held = await mutex.acquire();
      await other.using(async () => {
        assert.equal(await mutex.tryAcquire(), null);
      });
      await held.release();
    });

    test('a callback scheduled inside using() that runs after it returned is a new caller, not the holder', async () => {
      const mutex = new ReentrantMutex(redis.a.client, freshName());
      let resume!: () => void;
      const gate = new Promise<void>((resolve) => {
        resume = resolve;
      });
      let later!: Promise<[unknown, unknown]>;
      await mutex.using(async () => {
        // A continuation keeps the async context of the `using()` it was scheduled in.
        later = gate.then(() => Promise.all([mutex.tryAcquire(), mutex.tryAcquire()]));
      });
      assert.equal(await mutex.isLocked(), false);
      resume();
      const [first, second] = await later;
      assert.ok(first, 'the first call takes the free lock');
      assert.equal(second, null, 'the second is another caller: the lock is held');
      assert.equal(await holdsOf(mutex), 1);
      await (first as { release(): Promise<boolean> }).release();
    });

    test('a nested call after the outer hold was lost rejects with LockLostError, taking nothing', async () => {
      const mutex = new ReentrantMutex(redis.a.client, freshName(), { autoExtend: false });
      const fences: number[] = [];
      await mutex.using(async (signal, outer) => {
        fences.push(outer.fencingToken);
        // Lost as by a pause past the TTL: Redis no longer holds it, and the lease learns so.
        await redis.a.command('DEL', mutex.keys.lock, mutex.reentrantKeys.holds);
        await assert.rejects(outer.extend(), LockLostError);
        assert.ok(signal.aborted);
        await assert.rejects(
          mutex.using(async (_s, inner) => {
            fences.push(inner.fencingToken);
          }),
          LockLostError,
        );
        await assert.rejects(mutex.acquire(), LockLostError);
        await assert.rejects(mutex.tryAcquire(), LockLostError);
      });
      assert.deepEqual(fences.length, 1, 'no second hold, so no second fencing token');
      assert.equal(await mutex.isLocked(), false);
    });

    test('a hold its caller released early no longer counts: a nested call is a new caller', async () => {
      const mutex = new ReentrantMutex(redis.a.client, freshName());
      const other = await mutex.using(async (_s, outer) => {
        await outer.release();
        return mutex.tryAcquire();
      });
      assert.ok(other, 'the lock was free');
      assert.equal(await holdsOf(mutex), 1);
      await other.release();
    });

    test('a crashed holder (killed with two holds) frees the lock after its TTL, holds and all', async () => {
      const name = freshName();
      const mutex = new ReentrantMutex(redis.a.client, name);
      const child: Child = spawnChild('reentrant-child.ts', kind, redis.server.url, name, 'crash', {
        ttlMs: 1_000,
      });
      try {
        await child.said('held');
        assert.equal(await holdsOf(mutex), 2);
        child.process.kill('SIGKILL');
        await child.exited;
        const lease = await within(mutex.acquire({ timeoutMs: 10_000 }), 10_000, 'acquired after the TTL');
        assert.equal(await holdsOf(mutex), 1, "the dead holder's holds are gone");
        await lease.release();
      } finally {
        child.process.kill('SIGKILL');
      }
    });
  });
}
