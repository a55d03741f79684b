/**
 * A Semaphore's callers in one process share the permits it holds in Redis (src/batching/
 * local-batch.ts, a run per permit): a lone process still gets `limit` holders at once, then passes
 * its permits among its callers with under one Redis call per acquisition; at most `limit` holders
 * across processes; each local holder has its own fencing token, reserved in Redis above every one
 * granted before, and validity no longer than the permit's in Redis; the bounds end a run; a lost
 * permit revokes its local holder; a call taking several permits goes to Redis alone. Counts and
 * order, not timings.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Lease, LockLostError, Semaphore } from '../../src/index.js';
import { batchTimeBoundEndsRun } from '../fixtures/batch-bounds.js';
import { clientKinds } from '../fixtures/clients.js';
import { commandCalls, resetStats, scriptCalls } from '../fixtures/commandstats.js';
import { assertFencing, contend, permitPttl } from '../fixtures/contend.js';
import { abortedWith, nameMaker, redisForSuite, until } from '../fixtures/helpers.js';

const name = nameMaker('sem-batch');
/** Runs bounded by holds alone: a busy machine must not end them early by time. */
const untimed = { maxLocalBatchMs: 60_000 };
const kind = clientKinds[0] as (typeof clientKinds)[number];

describe(`a Semaphore's callers in one process share its permits in Redis (${kind.name})`, () => {
  const redis = redisForSuite(kind);

  test('one process, 20 callers, limit 3: three holders at once, under one Redis call per acquisition', async () => {
    const lock = new Semaphore(redis.a.client, name(), { limit: 3, ...untimed });
    await resetStats(redis.server);
    const { holds, peak } = await contend(() => lock, 20, 10, 3);
    const scripts = await scriptCalls(redis.server);
    assert.equal(holds.length, 200);
    assert.equal(peak, 3, 'a lone process holds every permit at once');
    assertFencing(holds);
    assert.ok(new Set(holds.map((hold) => hold.token)).size < 200, 'permits were passed on in the process');
    // A run costs an acquire, a reservation and a release, for up to 256 holds.
    assert.ok(scripts < 100, `${scripts} script calls for 200 acquisitions`);
  });

  test('two clients (two processes, as far as Redis can tell): at most limit holders, each its own fencing token', async () => {
    const lockName = name();
    const a = new Semaphore(redis.a.client, lockName, { limit: 3, maxLocalHolds: 4 });
    const b = new Semaphore(redis.b.client, lockName, { limit: 3, maxLocalHolds: 4 });
    let inRedis = 0;
    const { holds } = await contend(
      (i) => (i % 2 === 0 ? a : b),
      12,
      8,
      3,
      async () => {
        inRedis = Math.max(inRedis, (await a.inspect()).permitsHeld);
      },
    );
    assert.equal(holds.length, 96);
    assert.ok(inRedis <= 3, `${inRedis} permits held in Redis`);
    assertFencing(holds);
  });

  test("a local holder's fencing token is above every one granted before its turn, and its validity within the permit's", async () => {
    const lockName = name();
    const a = new Semaphore(redis.a.client, lockName, { limit: 2, ttlMs: 5_000, ...untimed });
    const b = new Semaphore(redis.b.client, lockName, { limit: 2 });
    const first = await a.acquire();
    const theirs = await b.acquire();
    // The process holds fewer permits than it may: its next caller asks Redis, and queues there (no
    // permit is free); the callers after it wait in the process.
    const asking = a.acquire();
    await until(async () => (await a.inspect()).queueLength === 1, 'the asking caller queued in Redis');
    const waiting = a.acquire();
    await first.release();
    const passed = await waiting;
    assert.equal(passed.token, first.token, 'passed on in the process');
    assert.ok(
      passed.fencingToken > theirs.fencingToken,
      `${passed.fencingToken} after ${theirs.fencingToken}`,
    );
    const pttl = await permitPttl(redis.a.command, a.keys.lock, passed.token);
    assert.ok(
      passed.remainingMs > 0 && passed.remainingMs <= pttl,
      `validity ${passed.remainingMs} ms, ${pttl} ms in Redis`,
    );
    // Nobody left behind it in the process: the run ends, and Redis hands the permit to the oldest
    // waiter there, the caller that asked.
    await passed.release();
    const granted = await asking;
    assert.notEqual(granted.token, first.token, 'a permit of its own from Redis');
    assert.ok(granted.fencingToken > passed.fencingToken);
    await granted.release();
    await theirs.release();
  });

  test('tryAcquire() while callers of this process hold every permit it may: null, without a round trip', async () => {
    const lock = new Semaphore(redis.a.client, name(), { limit: 2 });
    const held = [await lock.acquire(), await lock.acquire()];
    await resetStats(redis.server);
    assert.equal(await lock.tryAcquire(), null);
    assert.deepEqual(await commandCalls(redis.server), {});
    await (held[0] as Lease).release();
    const tried = await lock.tryAcquire();
    assert.ok(tried, 'a permit is free again');
    await tried.release();
    await (held[1] as Lease).release();
  });

  test('a call taking more than one permit is not batched: it asks Redis, beside the local holders', async () => {
    const lock = new Semaphore(redis.a.client, name(), { limit: 3, ...untimed });
    const one = await lock.acquire();
    // With one of three permits held by this process, two are free in Redis: granted at once.
    const two = await lock.acquire({ permits: 2, timeoutMs: 5_000 });
    assert.notEqual(two.token, one.token, 'its own acquisition in Redis');
    assert.equal((await lock.inspect()).permitsHeld, 3);
    // And behind the local holder with every permit held, it waits in Redis, not in the process.
    const waiting = lock.acquire({ permits: 2 });
    await until(async () => (await lock.inspect()).queueLength === 1, 'the two-permit call queued in Redis');
    const waitingOne = lock.acquire();
    await one.release();
    await two.release();
    const granted = await waiting;
    assert.notEqual(granted.token, one.token);
    assert.notEqual(granted.token, two.token);
    await granted.release();
    await (await waitingOne).release();
  });

  test('after maxLocalHolds holds the process releases the permit in Redis, and a waiter of another client gets it', async () => {
    const lockName = name();
    const a = new Semaphore(redis.a.client, lockName, { limit: 2, maxLocalHolds: 2, ...untimed });
    const b = new Semaphore(redis.b.client, lockName, { limit: 2 });
    const first = await a.acquire();
    const other = await a.acquire();
    const localWaiters = Array.from({ length: 3 }, () => a.acquire());
    const theirsWaiting = b.acquire();
    await until(
      async () => (await b.inspect()).queueLength === 1,
      "the other client's waiter queued in Redis",
    );
    await first.release();
    const passed = await (localWaiters[0] as Promise<Lease>);
    assert.equal(passed.token, first.token, 'passed on once: the run has its two holds');
    await passed.release();
    const theirs = await theirsWaiting;
    assert.notEqual(theirs.token, first.token);
    assert.notEqual(theirs.token, other.token);
    await theirs.release();
    await other.release();
    for (const waiting of localWaiters.slice(1)) await (await waiting).release();
  });

  test('after maxLocalBatchMs since its grant the process releases the permit in Redis', async () => {
    const lockName = name();
    const b = new Semaphore(redis.b.client, lockName, { limit: 1 });
    await batchTimeBoundEndsRun(
      (client, options) => new Semaphore(redis[client].client, lockName, { limit: 1, ...options }),
      () =>
        until(async () => (await b.inspect()).queueLength === 1, "the other client's waiter queued in Redis"),
    );
  });

  test("a permit lost in Redis revokes its local holder's lease, and the callers behind get permits from Redis", async () => {
    const lock = new Semaphore(redis.a.client, name(), { limit: 2, ttlMs: 900, ...untimed });
    const first = await lock.acquire();
    const kept = await lock.acquire();
    const passedWaiting = lock.acquire();
    const behind = lock.acquire();
    await first.release();
    const passed = await passedWaiting;
    assert.equal(passed.token, first.token, 'passed on in the process');
    const lost = abortedWith(passed.signal);
    // Someone removes that permit (an operator's `release --force`): the watchdog finds it gone.
    const members = (await redis.a.command('ZRANGE', lock.keys.lock, '0', '-1')) as string[];
    const member = members.find((m) => m.endsWith(passed.token)) as string;
    assert.equal(await redis.a.command('ZREM', lock.keys.lock, member), 1);
    assert.ok((await lost) instanceof LockLostError);
    assert.equal(kept.isHeld, true, 'the other permit is not touched');
    const next = await behind;
    assert.notEqual(next.token, first.token, 'a permit of its own from Redis');
    assert.ok(next.fencingToken > passed.fencingToken);
    assert.equal(await passed.release(), false);
    await next.release();
    await kept.release();
  });

  test('maxLocalHolds: 1 turns batching off: each acquisition is its own permit in Redis', async () => {
    const lock = new Semaphore(redis.a.client, name(), { limit: 2, maxLocalHolds: 1 });
    const { holds } = await contend(() => lock, 4, 3, 2);
    assert.equal(new Set(holds.map((hold) => hold.token)).size, 12);
  });
});
