/**
 * Semaphore on a real Redis, for every client kind: never more than `limit` permits held across
 * processes, a crashed holder's permits come back after its TTL, no client clock (fast, slow or
 * skewed) can let more holders in, FIFO order across processes, k permits all or nothing with no
 * overtaking, harmless double release, `setLimit` at run time, waiters that give up or die leave
 * the queue. (The lock contract runs for it with limit 1 in contract/semaphore.test.ts; bad input in
 * bad-input.test.ts.) Events are ordered by observable state; time bounds are generous on purpose.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { contextFor } from '../../src/adapters/client-context.js';
import { runScript } from '../../src/adapters/run-script.js';
import {
  type Clock,
  type Lease,
  LockLostError,
  LockTimeoutError,
  PermitsOverLimitError,
  Semaphore,
} from '../../src/index.js';
import { semaphoreAcquire } from '../../src/protocol/semaphore.js';
import { type Child, spawnChild } from '../fixtures/child.js';
import { type ClientKind, clientKinds } from '../fixtures/clients.js';
import { awaitedLater, nameMaker, redisForSuite, sleep, until, within } from '../fixtures/helpers.js';

const freshName = nameMaker('semaphore-test');
/**
 * Options of a Semaphore whose calls each deal with Redis alone (no local batch): the tests of what
 * Redis's queue does with several callers of one client (batching: semaphore-batch.test.ts).
 */
const alone = { maxLocalHolds: 1 };

const spawnSemaphoreChild = (kind: ClientKind, url: string, name: string, id: string, options: object) =>
  spawnChild('semaphore-child.ts', kind, url, name, id, options);

/** A clock whose time runs `rate` times as fast as the real one, and `offsetMs` ahead of it. */
function skewedClock(rate: number, offsetMs = 0): Clock {
  const mono0 = performance.now();
  const wall0 = Date.now();
  return {
    now: () => mono0 + offsetMs + (performance.now() - mono0) * rate,
    wallNow: () => wall0 + offsetMs + (Date.now() - wall0) * rate,
  };
}

for (const kind of clientKinds) {
  describe(`Semaphore (${kind.name})`, () => {
    const redis = redisForSuite(kind);
    const children: Child[] = [];
    const sem = (name: string, limit: number, options: object = {}) =>
      new Semaphore(redis.a.client, name, { limit, ...options });
    const queued = (semaphore: Semaphore, count: number) =>
      until(async () => (await semaphore.inspect()).queueLength === count, `${count} queued`);

    test('never more than `limit` permits held at once, across processes', async (t) => {
      t.after(() => {
        for (const c of children) c.process.kill('SIGKILL');
      });
      const name = freshName();
      const limit = 3;
      const rounds = 6;
      // Six processes, two of which take 2 permits per acquisition.
      const started = Array.from({ length: 6 }, (_, i) =>
        spawnSemaphoreChild(kind, redis.server.url, name, String(i), {
          limit,
          rounds,
          holdMs: 15,
          permits: i % 3 === 0 ? 2 : 1,
          waitForGo: true,
        }),
      );
      children.push(...started);
      await Promise.all(started.map((child) => child.said('started')));
      for (const child of started) child.process.send('go');
      // Meanwhile Redis itself never shows more than `limit` permits held.
      const observer = sem(name, limit);
      let running = true;
      let maxSeen = 0;
      const sampling = (async () => {
        while (running) {
          maxSeen = Math.max(maxSeen, (await observer.inspect()).permitsHeld);
          await sleep(5);
        }
      })();
      const codes = await Promise.all(started.map((c) => c.exited));
      running = false;
      await sampling;
      assert.deepEqual(codes, Array(6).fill(0));
      const max = Number(await redis.a.command('GET', `${name}:max`));
      assert.ok(max <= limit, `${max} permits were inside at once (limit ${limit})`);
      assert.ok(max >= 2, `the holders did run concurrently (at most ${max} at once)`);
      assert.ok(maxSeen <= limit, `Redis showed ${maxSeen} permits held (limit ${limit})`);
      const order = (await redis.a.command('LRANGE', `${name}:order`, '0', '-1')) as string[];
      const fences = order.map((entry) => Number(entry.split(':')[1]));
      assert.equal(new Set(fences).size, 6 * rounds, 'every acquisition had its own fencing token');
      const state = await observer.inspect();
      assert.deepEqual([state.permitsHeld, state.queueLength], [0, 0]);
    });

    test("a crashed holder's permits come back after its TTL", async () => {
      const name = freshName();
      const ttlMs = 1_000;
      const child = spawnSemaphoreChild(kind, redis.server.url, name, 'holder', {
        limit: 2,
        permits: 2,
        ttlMs,
        hang: true,
      });
      children.push(child);
      await child.said('acquired');
      const semaphore = sem(name, 2);
      const waiting = awaitedLater(semaphore.acquire({ timeoutMs: 20_000 }));
      await queued(semaphore, 1);
      const killedAt = performance.now();
      child.process.kill('SIGKILL');
      await child.exited;
      const lease = await waiting;
      const waitedMs = performance.now() - killedAt;
      assert.ok(waitedMs < ttlMs + 3_000, `waited ${waitedMs} ms for a ${ttlMs} ms TTL`);
      const state = await semaphore.inspect();
      assert.deepEqual(
        state.holders.map((h) => h.token),
        [lease.token],
      );
      await lease.release();
    });

    test('serves waiters in arrival order across processes', async () => {
      const name = freshName();
      const semaphore = sem(name, 2);
      const holder = await semaphore.acquire({ permits: 2 });
      const count = 5;
      const started = Array.from({ length: count }, (_, i) =>
        spawnSemaphoreChild(kind, redis.server.url, name, String(i), {
          limit: 2,
          holdMs: 20,
          waitForGo: true,
        }),
      );
      children.push(...started);
      await Promise.all(started.map((child) => child.said('started')));
      for (const [i, child] of started.entries()) {
        // The next process asks only once this one is queued, so arrival order is known.
        child.process.send('go');
        await queued(semaphore, i + 1);
      }
      await holder.release();
      assert.deepEqual(await Promise.all(started.map((c) => c.exited)), Array(count).fill(0));
      const order = (await redis.a.command('LRANGE', `${name}:order`, '0', '-1')) as string[];
      // Granted in queue order: fencing tokens, taken at each hand-off, rank the children 0..4.
      const byFence = order
        .map((entry) => entry.split(':').map(Number) as [number, number])
        .sort((x, y) => x[1] - y[1])
        .map(([id]) => id);
      assert.deepEqual(byFence, [0, 1, 2, 3, 4]);
      assert.ok(Number(await redis.a.command('GET', `${name}:max`)) <= 2);
    });

    test('k permits are taken all or none, and a large request at the head is not overtaken', async () => {
      const name = freshName();
      const semaphore = sem(name, 3);
      const first = await semaphore.acquire({ permits: 2 });
      const big = awaitedLater(semaphore.acquire({ permits: 2 }));
      await queued(semaphore, 1);
      // One permit is free, but the request for two takes none of it.
      let state = await semaphore.inspect();
      assert.deepEqual([state.permitsHeld, state.holders.length], [2, 1]);
      const small = awaitedLater(new Semaphore(redis.b.client, name, { limit: 3 }).acquire());
      await queued(semaphore, 2);
      // The free permit is not given to the small request behind the big one, nor to a try.
      assert.equal(await semaphore.tryAcquire(), null);
      assert.equal((await semaphore.inspect()).permitsHeld, 2);
      await first.release();
      const [bigLease, smallLease] = await Promise.all([big, small]);
      assert.ok(bigLease.fencingToken < smallLease.fencingToken, 'the big request was served first');
      state = await semaphore.inspect();
      assert.equal(state.permitsHeld, 3);
      assert.deepEqual(state.holders.map((h) => h.permits).sort(), [1, 2]);
      await Promise.all([bigLease.release(), smallLease.release()]);
      assert.equal((await semaphore.inspect()).permitsHeld, 0);
    });

    test('double release is harmless', async () => {
      const name = freshName();
      const semaphore = sem(name, 2);
      const x = await semaphore.acquire();
      const y = await semaphore.acquire();
      assert.equal(await x.release(), true);
      assert.equal(await x.release(), false);
      // A release re-sent by token (its reply was lost) reports that it did release, and frees nothing more.
      assert.equal(await semaphore.releaseToken(x.token), true);
      const z = await semaphore.acquire();
      assert.equal(await semaphore.releaseToken(x.token), true);
      const state = await semaphore.inspect();
      assert.equal(state.permitsHeld, 2);
      assert.deepEqual(state.holders.map((h) => h.token).sort(), [y.token, z.token].sort());
      assert.ok(await y.isOwned());
      await Promise.all([y.release(), z.release()]);
    });

    test("permits a release hands to a waiter with a shorter TTL expire with the waiter's lease", async () => {
      // The release removes its holder, the last one: the sorted set goes away, and the waiter's
      // permits make a new one. Its expiry was set only when it was later than the latest holder's
      // as read before the release (the releaser's, longer): the new key had no TTL, and a waiter
      // gone meanwhile left it for good (the fault suite's key-without-expiry, issue 39). The waiter
      // is a queue entry here (its attempt's script call): nothing of it runs after the hand-off.
      const name = freshName();
      const semaphore = sem(name, 1);
      const holder = await semaphore.acquire({ ttlMs: 60_000 });
      const waiter = semaphoreAcquire(semaphore.semaphoreKeys, {
        token: 'waiter-token',
        ttlMs: 2_000,
        permits: 1,
        limit: 1,
        entryTtlMs: 60_000,
        grantChannel: `${semaphore.keys.grantedChannelPrefix}nobody`,
        label: '',
      });
      assert.equal((await runScript(contextFor(redis.a.client), waiter)).acquired, false);
      assert.equal(await holder.release(), true);
      assert.equal((await semaphore.inspect()).holders[0]?.token, 'waiter-token', 'handed the permit');
      const pttl = Number(await redis.a.command('PTTL', semaphore.keys.lock));
      assert.ok(pttl > 0 && pttl <= 2_000, `the key expires with the waiter's lease (PTTL ${pttl})`);
    });

    test('setLimit: a raised limit serves the queue, holders above a lowered one keep their permits', async () => {
      const name = freshName();
      const semaphore = sem(name, 1, alone);
      const holder = await semaphore.acquire();
      const w1 = awaitedLater(semaphore.acquire());
      await queued(semaphore, 1);
      const w2 = awaitedLater(semaphore.acquire());
      await queued(semaphore, 2);
      assert.equal(await semaphore.setLimit(3), 3, 'both waiters were handed a permit');
      const [l1, l2] = await Promise.all([w1, w2]);
      // Lowered to 1 with 3 held: nobody loses a permit, and nobody new gets one...
      assert.equal(await semaphore.setLimit(1), 3);
      for (const lease of [holder, l1, l2]) assert.equal(await lease.isOwned(), true);
      // ...whatever its own `limit` option says: the stored limit is in force for the name.
      const other = new Semaphore(redis.b.client, name, { limit: 5 });
      assert.equal((await other.inspect()).limit, 1);
      const w3 = awaitedLater(other.acquire());
      await queued(semaphore, 1);
      await holder.release();
      await l1.release();
      assert.equal((await semaphore.inspect()).queueLength, 1, 'still 1 held: the waiter waits');
      await l2.release();
      const l3 = await w3;
      assert.deepEqual(
        (await semaphore.inspect()).holders.map((h) => h.token),
        [l3.token],
      );
      // More permits than the limit now in force can never be granted: a typed error, not a wait.
      await assert.rejects(other.acquire({ permits: 2 }), PermitsOverLimitError);
      assert.equal((await semaphore.inspect()).queueLength, 0);
      await l3.release();
    });

    // Issue 20 item 4: a queued request above a lowered limit was dropped without a word, and its
    // waiter learnt it only at its next timed attempt, a TTL later.
    test('setLimit: a queued request above the lowered limit rejects at once, wherever it is in the queue', async () => {
      const name = freshName();
      const semaphore = new Semaphore(redis.a.client, name, { limit: 2, ttlMs: 30_000 });
      const holder = await semaphore.acquire({ permits: 2 });
      const small = awaitedLater(semaphore.acquire({ permits: 1, timeoutMs: 25_000 }));
      await queued(semaphore, 1);
      const large = semaphore.acquire({ permits: 2, timeoutMs: 25_000 });
      await queued(semaphore, 2);
      assert.equal(await semaphore.setLimit(1), 2);
      const refused = await within(
        large.then(
          () => assert.fail('granted above the limit'),
          (error: unknown) => error,
        ),
        10_000,
        'the refusal (without it: the next timed attempt, 30 s on)',
      );
      assert.ok(refused instanceof PermitsOverLimitError, String(refused));
      assert.equal(refused.limit, 1);
      assert.equal(refused.permits, 2);
      assert.equal((await semaphore.inspect()).queueLength, 1, 'the request that fits still waits');
      await holder.release();
      const lease = await small;
      await lease.release();
    });

    test('no client clock, fast, slow or skewed by 10× the TTL, lets more than `limit` holders in', async () => {
      const name = freshName();
      const ttlMs = 600;
      const limit = 2;
      const clocks = {
        fast: skewedClock(10),
        slow: skewedClock(0.1),
        ahead: skewedClock(1, 10 * ttlMs),
        behind: skewedClock(1, -10 * ttlMs),
      };
      const full = [await sem(name, limit).acquire(), await sem(name, limit).acquire()];
      for (const [label, clock] of Object.entries(clocks)) {
        const skewed = new Semaphore(redis.b.client, name, { limit, ttlMs, clock });
        assert.equal(await skewed.tryAcquire(), null, `${label}: tryAcquire`);
        await assert.rejects(skewed.acquire({ timeoutMs: 300 }), LockTimeoutError, `${label}: acquire`);
      }
      await Promise.all(full.map((lease) => lease.release()));

      // A holder whose clock runs slow believes it holds long after the server expired it: the
      // server's clock alone decides, so the permit goes to the next caller and the limit holds.
      const slow = await new Semaphore(redis.b.client, name, {
        limit: 1,
        ttlMs,
        autoExtend: false,
        clock: clocks.slow,
      }).acquire();
      const next = await sem(name, 1).acquire({ timeoutMs: 10_000 });
      assert.ok(slow.isHeld, 'the slow clock still counts the first lease valid');
      await assert.rejects(
        slow.extend(),
        (e: unknown) => e instanceof LockLostError && e.reason === 'not-owner',
      );
      assert.deepEqual(
        (await sem(name, 1).inspect()).holders.map((h) => h.token),
        [next.token],
      );
      await next.release();

      // Every clock at once, acquiring and releasing: Redis never shows more than `limit` held.
      let running = true;
      let maxSeen = 0;
      const workers = Object.values(clocks).map(async (clock) => {
        const semaphore = new Semaphore(redis.b.client, name, { limit, ttlMs, clock, timeoutMs: 2_000 });
        while (running) {
          const lease: Lease | undefined = await semaphore.acquire().catch(() => undefined);
          await sleep(5);
          await lease?.release();
        }
      });
      const deadline = performance.now() + 1_500;
      while (performance.now() < deadline) {
        maxSeen = Math.max(maxSeen, (await sem(name, limit).inspect()).permitsHeld);
        await sleep(2);
      }
      running = false;
      await Promise.all(workers);
      assert.ok(maxSeen <= limit, `Redis showed ${maxSeen} permits held (limit ${limit})`);
      assert.ok(maxSeen >= 1);
    });

    test('a key of another kind at the name holds every permit, and a waiter that gives up still leaves', async () => {
      const name = freshName();
      const semaphore = sem(name, 3);
      await redis.a.command('SET', semaphore.keys.lock, 'a-mutex-owner', 'PX', '10000');
      assert.equal(await semaphore.tryAcquire(), null);
      await assert.rejects(semaphore.acquire({ timeoutMs: 200 }), LockTimeoutError);
      const state = await semaphore.inspect();
      assert.deepEqual([state.locked, state.ownerToken, state.queueLength], [true, 'a-mutex-owner', 0]);
      assert.equal(await semaphore.releaseToken('a-mutex-owner'), false);
      assert.equal(await redis.a.command('GET', semaphore.keys.lock), 'a-mutex-owner', 'never changed');
      await redis.a.command('DEL', semaphore.keys.lock);
    });

    test("the queue's keys outlive every waiter's entry, whichever queued first, by one lifetime at most", async () => {
      const pttl = async (key: string) => Number((await redis.server.command('PTTL', key)).slice(1));
      for (const order of [
        [20_000, 1_000],
        [1_000, 20_000],
      ]) {
        const name = freshName();
        const holder = await sem(name, 1, alone).acquire();
        const waiting: Promise<Lease>[] = [];
        for (const [i, waiterTtlMs] of order.entries()) {
          const waiter = sem(name, 1, { waiterTtlMs, ...alone });
          waiting.push(awaitedLater(waiter.acquire({ timeoutMs: 60_000 })));
          await queued(waiter, i + 1);
        }
        const { queue, waiters } = sem(name, 1).semaphoreKeys;
        for (const key of [queue, waiters]) {
          const left = await pttl(key);
          assert.ok(left > 15_000 && left <= 40_000, `${key}: ${left} ms left (order ${order})`);
        }
        await holder.release();
        for (const lease of waiting) await (await lease).release();
      }
    });

    test('a waiter that times out or is aborted leaves the queue, one that crashed is skipped', async () => {
      const name = freshName();
      const semaphore = sem(name, 1, alone);
      const holder = await semaphore.acquire();
      await assert.rejects(semaphore.acquire({ timeoutMs: 200 }), LockTimeoutError);
      assert.equal((await semaphore.inspect()).queueLength, 0);
      const controller = new AbortController();
      const aborted = awaitedLater(semaphore.acquire({ signal: controller.signal }));
      await queued(semaphore, 1);
      controller.abort(new Error('changed my mind'));
      await assert.rejects(aborted, /changed my mind/);
      assert.equal((await semaphore.inspect()).queueLength, 0);
      // A crashed waiter keeps its place until its entry's deadline (waiterTtlMs), then is skipped.
      const child = spawnSemaphoreChild(kind, redis.server.url, name, 'crashed', {
        limit: 1,
        waiterTtlMs: 600,
        timeoutMs: 60_000,
      });
      children.push(child);
      // Its start-up (seconds on a busy machine) is not part of the wait for it to queue.
      await child.said('started');
      await queued(semaphore, 1);
      child.process.kill('SIGKILL');
      await child.exited;
      const next = awaitedLater(semaphore.acquire({ timeoutMs: 20_000 }));
      await queued(semaphore, 2);
      await sleep(1_200); // the scenario: well past the dead entry's 600 ms deadline
      const releasedAt = performance.now();
      await holder.release();
      const lease = await next;
      assert.ok(performance.now() - releasedAt < 2_000, 'handed over by the release, not by a TTL');
      assert.equal((await semaphore.inspect()).queueLength, 0);
      await lease.release();
      for (const c of children) c.process.kill('SIGKILL');
    });
  });
}
