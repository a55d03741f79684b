/**
 * The MultiMutex's own behaviour beyond the lock contract: all or none over its names, exclusion
 * with a Mutex on any one name (and the Mutex's queued waiters served by its release), each name's
 * fencing token, waiting woken by a release (no polling), and overlapping sets without deadlock.
 * Events are ordered by observable state (registrations in Redis), never by sleeping.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LockLostError, MultiMutex, Mutex } from '../../src/index.js';
import { FaultProxy } from '../faults/toolkit/proxy.js';
import { type ClientKind, ioredisKind, nodeRedisV6Kind } from '../fixtures/clients.js';
import { abortedWith, awaitedLater, nameMaker, redisForSuite, until, within } from '../fixtures/helpers.js';

function multiMutexSuite(kind: ClientKind): void {
  describe(`MultiMutex (${kind.name})`, () => {
    const redis = redisForSuite(kind);
    const name = nameMaker(`multi-${kind.name}`);
    const registered = async (lock: MultiMutex, index: number) =>
      Number(await redis.a.command('HLEN', lock.nameKeys[index]?.multiWaiting as string));

    test('bad names are refused before anything reaches Redis', () => {
      const { client } = redis.a;
      assert.throws(() => new MultiMutex(client, []), RangeError);
      assert.throws(() => new MultiMutex(client, ['a', 'a']), /duplicate/);
      assert.throws(() => new MultiMutex(client, ['a', 7 as unknown as string]), TypeError);
      assert.throws(() => new MultiMutex(client, 'a' as unknown as string[]), TypeError);
      assert.throws(() => new MultiMutex(client, ['}a']), RangeError);
    });

    test('takes every name, with each name’s fencing token; release frees them all', async () => {
      const names = [name(), name(), name()];
      const multi = new MultiMutex(redis.a.client, names, { ttlMs: 10_000 });
      const lease = await multi.acquire();
      assert.deepEqual(Object.keys(lease.fencingTokens), names);
      assert.equal(lease.fencingToken, lease.fencingTokens[names[0] as string]);
      for (const n of names) {
        assert.equal((await new Mutex(redis.b.client, n).inspect()).ownerToken, lease.token);
        assert.equal((await new Mutex(redis.b.client, n).inspect()).lastFencingToken, lease.fencingTokens[n]);
      }
      assert.equal(await lease.release(), true);
      for (const n of names) assert.equal(await new Mutex(redis.b.client, n).isLocked(), false);
      const again = await multi.acquire();
      for (const n of names)
        assert.ok((again.fencingTokens[n] as number) > (lease.fencingTokens[n] as number));
      await again.release();
    });

    test('all or none: one name held by a Mutex, none is taken', async () => {
      const [a, b] = [name(), name()];
      const mutex = await new Mutex(redis.b.client, b, { ttlMs: 10_000 }).acquire();
      const multi = new MultiMutex(redis.a.client, [a, b], { ttlMs: 10_000 });
      assert.equal(await multi.tryAcquire(), null);
      assert.equal(await new Mutex(redis.b.client, a).isLocked(), false);
      await mutex.release();
      const lease = await multi.tryAcquire();
      assert.ok(lease);
      assert.equal(await new Mutex(redis.b.client, b).tryAcquire(), null);
      await lease.release();
    });

    test('isLocked and inspect see every name: a Mutex holding the second name locks it', async () => {
      const [a, b] = [name(), name()];
      const multi = new MultiMutex(redis.a.client, [a, b], { ttlMs: 10_000 });
      assert.equal(await multi.isLocked(), false);
      const held = await new Mutex(redis.b.client, b, { ttlMs: 10_000 }).acquire();
      assert.equal(await multi.isLocked(), true, 'an acquire would wait: b is taken');
      const state = await multi.inspect();
      assert.equal(state.locked, true);
      assert.deepEqual(Object.keys(state.names), [a, b]);
      assert.equal(state.names[a]?.locked, false);
      assert.equal(state.names[b]?.ownerToken, held.token);
      assert.equal(state.names[b]?.lastFencingToken, held.fencingToken);
      // The top-level fields are the first name's.
      assert.equal(state.ownerToken, undefined);
      await held.release();
      const lease = await multi.acquire();
      const mine = await multi.inspect();
      for (const n of [a, b]) {
        assert.equal(mine.names[n]?.ownerToken, lease.token);
        assert.equal(mine.names[n]?.lastFencingToken, lease.fencingTokens[n]);
      }
      assert.equal(mine.ownerToken, lease.token);
      await lease.release();
    });

    test('a Mutex release wakes a MultiMutex waiter at once, not at the holder’s expiry', async () => {
      const [a, b] = [name(), name()];
      const held = await new Mutex(redis.b.client, b, { ttlMs: 30_000 }).acquire();
      const multi = new MultiMutex(redis.a.client, [a, b], { ttlMs: 10_000 });
      const waiting = awaitedLater(multi.acquire({ timeoutMs: 20_000 }));
      await until(async () => (await registered(multi, 1)) === 1, 'the waiter registers on b');
      const released = performance.now();
      await held.release();
      const lease = await within(waiting, 10_000, 'the waiter');
      assert.ok(performance.now() - released < 5_000, 'woken by the release');
      assert.equal(await registered(multi, 1), 0, 'its registration is gone');
      await lease.release();
    });

    test('a MultiMutex release wakes a waiter on an overlapping set', async () => {
      const [a, b, c] = [name(), name(), name()];
      const first = await new MultiMutex(redis.a.client, [a, b], { ttlMs: 30_000 }).acquire();
      const second = new MultiMutex(redis.b.client, [c, b], { ttlMs: 10_000 });
      const waiting = awaitedLater(second.acquire({ timeoutMs: 20_000 }));
      await until(async () => (await registered(second, 1)) === 1, 'the waiter registers on b');
      assert.equal(await new Mutex(redis.a.client, c).isLocked(), false, 'the waiter holds no part');
      await first.release();
      const lease = await within(waiting, 10_000, 'the waiter');
      assert.ok(lease.fencingTokens[b]);
      await lease.release();
    });

    test('a waiter stopped by two holders registers on the one that expires last', async () => {
      const [a, b] = [name(), name()];
      const early = await new Mutex(redis.b.client, a, { ttlMs: 20_000 }).acquire();
      const late = await new Mutex(redis.b.client, b, { ttlMs: 30_000 }).acquire();
      const multi = new MultiMutex(redis.a.client, [a, b], { ttlMs: 10_000 });
      const waiting = awaitedLater(multi.acquire({ timeoutMs: 20_000 }));
      await until(async () => (await registered(multi, 1)) === 1, 'the waiter registers on b');
      assert.equal(await registered(multi, 0), 0, 'a release of a alone would not let it in');
      await early.release();
      assert.equal(await registered(multi, 1), 1, 'still registered on b');
      const released = performance.now();
      await late.release();
      const lease = await within(waiting, 10_000, 'the waiter');
      assert.ok(performance.now() - released < 5_000, 'woken by the release of b');
      assert.equal(await registered(multi, 1), 0, 'its registration is gone');
      await lease.release();
    });

    test('a Mutex waiter queued on a name is handed it by the MultiMutex release', async () => {
      const [a, b] = [name(), name()];
      const multi = await new MultiMutex(redis.a.client, [a, b], { ttlMs: 30_000 }).acquire();
      const mutex = new Mutex(redis.b.client, a, { ttlMs: 10_000 });
      const waiting = awaitedLater(mutex.acquire({ timeoutMs: 20_000 }));
      await until(
        async () => Number(await redis.a.command('LLEN', mutex.keys.queue)) === 1,
        'the Mutex waiter queues',
      );
      await multi.release();
      const lease = await within(waiting, 10_000, 'the Mutex waiter');
      assert.ok(lease.fencingToken > (multi.fencingTokens[a] as number));
      assert.equal(await new Mutex(redis.a.client, b).isLocked(), false);
      await lease.release();
    });

    test('overlapping sets in opposite orders never deadlock, and never overlap', async () => {
      const names = [name(), name(), name(), name()];
      const sets = [
        [names[0], names[1], names[2]],
        [names[2], names[1], names[0]],
        [names[3], names[1]],
        [names[1], names[3], names[0]],
      ] as string[][];
      const inside = new Map<string, number>();
      const worker = async (set: string[], client: typeof redis.a.client) => {
        const lock = new MultiMutex(client, set, { ttlMs: 10_000 });
        for (let i = 0; i < 15; i += 1) {
          await lock.using(
            async () => {
              for (const n of set) {
                assert.equal(inside.get(n) ?? 0, 0, `${n} held twice`);
                inside.set(n, 1);
              }
              await new Promise((resolve) => setImmediate(resolve));
              for (const n of set) inside.set(n, 0);
            },
            { timeoutMs: 30_000 },
          );
        }
      };
      await within(
        Promise.all(sets.map((set, i) => worker(set, i % 2 ? redis.a.client : redis.b.client))),
        60_000,
        'the workers',
      );
    });

    test('the watchdog extends every name; losing one name is losing the lease', async () => {
      const [a, b] = [name(), name()];
      const multi = new MultiMutex(redis.a.client, [a, b], { ttlMs: 1_000 });
      const lease = await multi.acquire();
      // The holder's value records its expiry: an extension rewrites it, on every name.
      const values = () => Promise.all(multi.nameKeys.map((keys) => redis.a.command('GET', keys.lock)));
      const before = await values();
      await until(
        async () => (await values()).every((v, i) => v !== before[i]),
        'the watchdog extends every name',
      );
      for (const n of [a, b])
        assert.equal((await new Mutex(redis.a.client, n).inspect()).ownerToken, lease.token);
      // Someone else's value at b (what an expiry and a new holder would leave).
      await redis.a.command('SET', multi.nameKeys[1]?.lock as string, 'stranger', 'PX', '10000');
      const reason = await within(abortedWith(lease.signal), 5_000, 'the loss');
      assert.ok(reason instanceof LockLostError);
      assert.equal(await lease.release(), false);
    });

    test('isOwned() reads every name at once: one round trip, not one per name', async () => {
      const names = [name(), name(), name(), name()];
      const proxy = await FaultProxy.start({ port: redis.server.port });
      const slow = await kind.create(proxy.url);
      try {
        const lease = await new MultiMutex(slow.client, names, { ttlMs: 10_000 }).acquire();
        // Once first, so its script is loaded: no NOSCRIPT round trip below.
        assert.equal(await lease.isOwned(), true);
        // Every request and every reply 150 ms late: a round trip costs 300 ms, one per name 1.2 s.
        proxy.delay = 150;
        const asked = performance.now();
        assert.equal(await lease.isOwned(), true);
        const tookMs = performance.now() - asked;
        proxy.delay = 0;
        assert.ok(tookMs < 600, `isOwned() took ${tookMs.toFixed(0)} ms for 4 names (one round trip: 300)`);
        await lease.release();
      } finally {
        await slow.close();
        await proxy.close();
      }
    });
  });
}

for (const kind of [ioredisKind, nodeRedisV6Kind]) multiMutexSuite(kind);
