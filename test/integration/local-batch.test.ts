/**
 * A Mutex's callers in one process queue behind one waiter in Redis, and the process passes the
 * lock among them (src/batching/local-batch.ts): mutual exclusion and fencing hold across local and
 * Redis grants, a local holder's validity never exceeds the process's lease in Redis, a lost lease
 * ends the run, and the Redis calls per acquisition fall below one. Counts and order, not timings.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { existingLocalBatch } from '../../src/batching/local-batch.js';
import { type Lease, LockLostError, LockTimeoutError, Mutex, RedlockMutex } from '../../src/index.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { batchTimeBoundEndsRun } from '../fixtures/batch-bounds.js';
import { spawnChild } from '../fixtures/child.js';
import { clientKinds, type TestClient } from '../fixtures/clients.js';
import { commandCalls, resetStats, scriptCalls } from '../fixtures/commandstats.js';
import { contend as contendHolds } from '../fixtures/contend.js';
import { abortedWith, nameMaker, redisForSuite, until, within } from '../fixtures/helpers.js';
import { lockKeyIsFree, ownerTokenOf } from '../fixtures/lock-value.js';

const name = nameMaker('batch');
/** Runs bounded by holds alone: a busy machine must not end them early by time. */
const untimed = { maxLocalBatchMs: 60_000 };
const kind = clientKinds[0] as (typeof clientKinds)[number];

/** Runs `callers` loops of `rounds` holds each on `locks` (one per loop, or shared), one holder at a time: the grants' tokens in order. */
async function contend(
  lockFor: (i: number) => Mutex | RedlockMutex,
  callers: number,
  rounds: number,
  during?: (lease: Lease, lock: Mutex | RedlockMutex) => Promise<void>,
): Promise<number[]> {
  const { holds } = await contendHolds(lockFor, callers, rounds, 1, during);
  return holds.map((hold) => hold.fencingToken);
}

function assertIncreasing(tokens: readonly number[]): void {
  for (let i = 1; i < tokens.length; i++) {
    assert.ok(
      (tokens[i] as number) > (tokens[i - 1] as number),
      `fencing token ${tokens[i]} granted after ${tokens[i - 1]}`,
    );
  }
}

describe(`a Mutex's callers in one process share its lease in Redis (${kind.name})`, () => {
  const redis = redisForSuite(kind);
  // Queued in Redis and listening: a hand-off before it listens would skip it as gone (the Mutex).
  const otherClientWaits = (lockName: string) =>
    until(async () => {
      const channels = (await redis.a.command('PUBSUB', 'CHANNELS', `*{${lockName}}*`)) as unknown[];
      return (
        channels.length > 0 && Number(await redis.a.command('LLEN', `locksmith:{${lockName}}:queue`)) > 0
      );
    }, 'the other client waits in Redis');

  test('concurrent callers on one client: one holder at a time, tokens rising in grant order, under one Redis call per hold', async () => {
    const lock = new Mutex(redis.a.client, name(), untimed);
    await resetStats(redis.server);
    const grants = await contend(() => lock, 20, 10);
    const scripts = await scriptCalls(redis.server);
    assert.equal(grants.length, 200);
    assertIncreasing(grants);
    assert.ok(scripts < 200, `${scripts} script calls for 200 holds`);
    // A run costs an acquire, a reservation and a release (plus waits in Redis), for up to 256 holds.
    assert.ok(scripts <= (200 / 16) * 3 + 10, `${scripts} script calls for 200 holds`);
  });

  test('one lock object per call joins the same batch', async () => {
    const lockName = name();
    await resetStats(redis.server);
    const grants = await contend(() => new Mutex(redis.a.client, lockName, untimed), 10, 10);
    const calls = await commandCalls(redis.server);
    assertIncreasing(grants);
    assert.ok((calls.evalsha ?? 0) < 100, JSON.stringify(calls));
  });

  test("an idle batch leaves its client's table, and its lock object takes it up again on its next call", async () => {
    // White-box: the table is looked at by the batch's key (the Mutex's: lock key and window).
    const batchOf = (lock: Mutex) =>
      existingLocalBatch(
        (lock as unknown as { context: object }).context,
        `${lock.keys.lock} handOffAfterMs=${lock.options.handOffAfterMs}`,
      );
    const lock = new Mutex(redis.a.client, name(), untimed);
    const first = await lock.acquire();
    const batch = batchOf(lock);
    assert.ok(batch, 'a batch while the lock is held');
    await first.release();
    assert.equal(batchOf(lock), undefined, 'an idle batch is out of the table');
    const second = await lock.acquire();
    assert.equal(batchOf(lock), batch, 'the same batch, listed again');
    await second.release();
    // A process touching many names keeps no batch per name once they are idle.
    const many = Array.from({ length: 50 }, () => new Mutex(redis.a.client, name(), untimed));
    await Promise.all(many.map(async (m) => (await m.acquire()).release()));
    for (const m of many) assert.equal(batchOf(m), undefined);
  });

  test('two clients (two processes, as far as Redis can tell): tokens rise across local and Redis grants', async () => {
    const lockName = name();
    const a = new Mutex(redis.a.client, lockName, { maxLocalHolds: 4 });
    const b = new Mutex(redis.b.client, lockName, { maxLocalHolds: 4 });
    const grants = await contend((i) => (i % 2 === 0 ? a : b), 12, 8);
    assert.equal(grants.length, 96);
    assertIncreasing(grants);
  });

  test('maxLocalHolds: 1 turns batching off: each hold is its own Redis grant', async () => {
    const lock = new Mutex(redis.a.client, name(), { maxLocalHolds: 1 });
    const tokens = new Set<string>();
    await contend(
      () => lock,
      4,
      3,
      async () => {
        tokens.add(ownerTokenOf(await redis.a.command('GET', lock.keys.lock)));
      },
    );
    assert.equal(tokens.size, 12, 'every hold had its own owner token in Redis');
  });

  test("a local holder's validity never exceeds what is left of the process's lease in Redis", async () => {
    const lock = new Mutex(redis.a.client, name(), { ttlMs: 2_000, ...untimed });
    let passedOn = 0;
    let firstToken: string | undefined;
    await contend(
      () => lock,
      5,
      4,
      async (lease) => {
        // The server's PTTL first, then validity (which only shrinks meanwhile): the lease must not
        // believe in more than Redis has.
        const pttl = Number(await redis.a.command('PTTL', lock.keys.lock));
        const validity = lease.remainingMs;
        assert.ok(validity > 0 && validity <= pttl, `local validity ${validity} ms, Redis PTTL ${pttl} ms`);
        if (lease.token === firstToken) passedOn += 1;
        firstToken ??= lease.token;
      },
    );
    assert.ok(passedOn > 0, 'some holds were passed on inside the process');
    // And with a lease that is not extended: a waiter queued behind a holder whose validity is
    // nearly spent gets a lease no longer than what Redis has left.
    const short = new Mutex(redis.a.client, name(), { ttlMs: 600, autoExtend: false, ...untimed });
    const first = await short.acquire();
    const second = short.acquire({ ttlMs: 600, autoExtend: false });
    await until(async () => first.remainingMs < 400, 'the first holder used some of its lease');
    await first.release();
    const lease = await second;
    const pttl = Number(await redis.a.command('PTTL', short.keys.lock));
    assert.ok(lease.remainingMs <= pttl, `local validity ${lease.remainingMs} ms, Redis PTTL ${pttl} ms`);
    await lease.release();
  });

  test('a lease lost in Redis ends the run: its signal aborts, and the waiters get the lock from Redis', async () => {
    const lock = new Mutex(redis.a.client, name(), { ttlMs: 900 });
    const first = await lock.acquire();
    const lost = abortedWith(first.signal);
    const [secondWaiting, thirdWaiting] = [lock.acquire(), lock.acquire()];
    // Someone deletes the key (an operator's `release --force`): the watchdog's extension finds it gone.
    await redis.a.command('DEL', lock.keys.lock);
    assert.ok((await lost) instanceof LockLostError);
    const second = await secondWaiting;
    assert.notEqual(second.token, first.token, 'the next holder got its own lease from Redis');
    assert.ok(second.fencingToken > first.fencingToken);
    assert.equal(ownerTokenOf(await redis.a.command('GET', lock.keys.lock)), second.token);
    assert.equal(await first.release(), false);
    await second.release();
    const third = await thirdWaiting;
    assert.ok(third.fencingToken > second.fencingToken);
    await third.release();
  });

  test('tryAcquire() while a caller of this process holds the lock: null, without a round trip', async () => {
    const lock = new Mutex(redis.a.client, name());
    const held = await lock.acquire();
    await resetStats(redis.server);
    assert.equal(await new Mutex(redis.a.client, lock.name).tryAcquire(), null);
    assert.deepEqual(await commandCalls(redis.server), {});
    await held.release();
    const tried = await lock.tryAcquire();
    assert.ok(tried);
    await tried.release();
  });

  test('a local waiter times out, or leaves on its signal, and the run goes on without it', async () => {
    const lock = new Mutex(redis.a.client, name(), untimed);
    const held = await lock.acquire();
    // It never asked Redis: the message says whom it waited behind, not "(0 attempts)".
    await assert.rejects(lock.acquire({ timeoutMs: 50 }), (error: unknown) => {
      assert.ok(error instanceof LockTimeoutError);
      assert.equal(error.attempts, 0);
      assert.equal(
        error.message,
        `Timed out after 50 ms waiting for lock "${lock.name}" behind a holder in this process (queued in its local batch, so no attempt reached Redis)`,
      );
      return true;
    });
    const controller = new AbortController();
    const aborted = lock.acquire({ signal: controller.signal });
    const next = lock.acquire();
    controller.abort(new Error('stop'));
    await assert.rejects(aborted, /stop/);
    await held.release();
    const lease = await next;
    assert.equal(lease.token, held.token, 'passed on locally');
    assert.ok(lease.fencingToken > held.fencingToken);
    await lease.release();
  });

  test('after maxLocalHolds holds the process releases in Redis, and a waiter of another client gets it first', async () => {
    const lockName = name();
    const a = new Mutex(redis.a.client, lockName, { maxLocalHolds: 3, ...untimed });
    const b = new Mutex(redis.b.client, lockName);
    const first = await a.acquire();
    const localWaiters = Array.from({ length: 4 }, () => a.acquire());
    const other = b.acquire();
    await otherClientWaits(lockName);
    const order: string[] = [];
    await first.release();
    for (const [i, waiting] of localWaiters.slice(0, 2).entries()) {
      const lease = await waiting;
      order.push(`a${i}`);
      assert.equal(lease.token, first.token);
      await lease.release();
    }
    const theirs = await other;
    order.push('b');
    assert.notEqual(theirs.token, first.token);
    await theirs.release();
    for (const waiting of localWaiters.slice(2)) await (await waiting).release();
    assert.deepEqual(order, ['a0', 'a1', 'b']);
  });

  test('after maxLocalBatchMs since its grant the process releases in Redis, however many holds are left', async () => {
    const lockName = name();
    await batchTimeBoundEndsRun(
      (client, options) => new Mutex(redis[client].client, lockName, options),
      () => otherClientWaits(lockName),
    );
  });
  test('a lease that expired unreleased does not keep tryAcquire() from the free lock', async () => {
    const lock = new Mutex(redis.a.client, name());
    const lease = await lock.tryAcquire({ ttlMs: 300, autoExtend: false });
    assert.ok(lease);
    await until(async () => (await lock.inspect()).ownerToken === undefined, 'the lease expired in Redis');
    const again = await lock.tryAcquire();
    assert.ok(again, 'the free lock is taken');
    assert.notEqual(again.token, lease.token);
    await again.release();
  });

  test('releaseToken() of the run from outside its leases ends the run: the next caller asks Redis', async () => {
    const lock = new Mutex(redis.a.client, name());
    const held = await lock.acquire();
    const waiting = lock.acquire();
    assert.equal(await new Mutex(redis.a.client, lock.name).releaseToken(held.token), true);
    const next = await waiting;
    assert.notEqual(next.token, held.token, 'a lease of its own from Redis');
    assert.ok(next.fencingToken > held.fencingToken);
    // Its own release now is a re-sent one (Redis answers it as such) and leaves the new holder be.
    await held.release();
    assert.equal(ownerTokenOf(await redis.a.command('GET', lock.keys.lock)), next.token);
    await next.release();
  });

  test('a waiter with a longer TTL than the run gets its own TTL in Redis before its turn', async () => {
    const lock = new Mutex(redis.a.client, name(), untimed);
    const short = await lock.acquire({ ttlMs: 600 });
    const waiting = lock.acquire({ ttlMs: 30_000 });
    await short.release();
    const lease = await waiting;
    assert.equal(lease.token, short.token, 'passed on inside the process');
    const pttl = Number(await redis.a.command('PTTL', lock.keys.lock));
    assert.ok(pttl > 20_000, `Redis PTTL ${pttl} ms`);
    assert.ok(lease.remainingMs > 20_000, `validity ${lease.remainingMs} ms`);
    await lease.release();
  });

  test('an extension that shortens the lease counts at once for the next local holder', async () => {
    const lock = new Mutex(redis.a.client, name(), untimed);
    const first = await lock.acquire({ ttlMs: 30_000 });
    const waiting = lock.acquire({ ttlMs: 30_000 });
    const extending = first.extend(1_000);
    await first.release();
    await extending.catch(() => {});
    const second = await waiting;
    const pttl = Number(await redis.a.command('PTTL', lock.keys.lock));
    assert.ok(
      second.remainingMs <= Math.max(pttl, 0),
      `validity ${second.remainingMs} ms, Redis PTTL ${pttl} ms`,
    );
    await second.release();
  });

  test('a shorter extendToken() sent behind a reservation in flight bounds the next local holder', async () => {
    // The pass to the waiter reserves its fencing token with an extension to 30 s; extendToken()
    // shortens the run's lease to 1 s behind it. Redis applies both in that order: the reservation's
    // reply, answered first, must not give the next holder 30 s (found in review).
    const lock = new Mutex(redis.a.client, name(), untimed);
    const first = await lock.acquire({ ttlMs: 30_000 });
    const waiting = lock.acquire({ ttlMs: 30_000 });
    const releasing = first.release();
    const shortening = lock.extendToken(first.token, 1_000);
    await releasing;
    const second = await waiting;
    await shortening;
    const pttl = Number(await redis.a.command('PTTL', lock.keys.lock));
    assert.ok(
      second.remainingMs <= Math.max(pttl, 0),
      `validity ${second.remainingMs} ms, Redis PTTL ${pttl} ms`,
    );
    await second.release();
  });

  test('a process killed mid-batch loses nothing but its own leases: a waiter of another process gets the lock after its TTL, with a higher token', async () => {
    const lockName = name();
    const ttlMs = 1_000;
    const callers = 12;
    const holdAt = 3;
    const child = spawnChild('batch-child.ts', kind, redis.server.url, lockName, 'batch', {
      ttlMs,
      callers,
      holdAt,
    });
    const tokens: number[] = [];
    let queuedInChild = -1;
    child.process.on('message', (message) => {
      const [what, n] = String(message).split(' ');
      if (what === 'granted') tokens.push(Number(n));
      if (what === 'holding') queuedInChild = Number(n);
    });
    const mutex = new Mutex(redis.b.client, lockName, { ttlMs });
    try {
      await child.said(`holding ${callers - holdAt}`);
      // Its third holder holds the lock, passed on inside the process (the one owner token in Redis
      // is the first holder's), and nine callers wait in the process: none of them in Redis.
      assert.equal(queuedInChild, callers - holdAt);
      assert.equal(tokens.length, holdAt);
      assertIncreasing(tokens);
      assert.equal(Number(await redis.a.command('LLEN', mutex.keys.queue)), 0, 'nobody waits in Redis yet');
      const owner = ownerTokenOf(await redis.a.command('GET', mutex.keys.lock));
      assert.notEqual(owner, '');

      // A waiter of another client queues in Redis behind the child's lease.
      let killed = false;
      let grantedBeforeKill = false;
      const waiting = mutex.acquire({ timeoutMs: 30_000 }).then((lease) => {
        grantedBeforeKill = !killed;
        return lease;
      });
      await until(
        async () => Number(await redis.a.command('LLEN', mutex.keys.queue)) > 0,
        'the waiter queued in Redis',
      );
      killed = true;
      child.process.kill('SIGKILL');
      await child.exited;

      const lease = await within(waiting, 30_000, 'the waiter after the dead process lease ran out');
      assert.equal(grantedBeforeKill, false, 'the waiter got the lock while the child was alive');
      assert.notEqual(lease.token, owner);
      const highest = Math.max(...tokens);
      assert.ok(
        lease.fencingToken > highest,
        `the waiter's token ${lease.fencingToken} is not above the dead process's ${highest}`,
      );
      assert.equal(await lease.release(), true);

      // Nothing of the dead process's is left: the lock is free, nobody waits, and the only keys of
      // the lock are its own (no key of a run, no reservation, no local caller shows in Redis).
      assert.ok(await lockKeyIsFree(redis.a, mutex.keys.lock));
      assert.equal(Number(await redis.a.command('LLEN', mutex.keys.queue)), 0);
      const lockKeys = new Set<string>(Object.values(mutex.keys));
      const found = (await redis.a.command('KEYS', `*${lockName}*`)) as string[];
      assert.deepEqual(
        found.filter((key) => !lockKeys.has(key)),
        [],
        `keys of the lock: ${found.join(', ')}`,
      );
    } finally {
      child.process.kill('SIGKILL');
    }
  });
});

describe(`a RedlockMutex's callers in one process share its lease on the quorum (${kind.name})`, () => {
  const servers: RedisServer[] = [];
  const processA: TestClient[] = [];
  const processB: TestClient[] = [];
  before(async () => {
    for (let i = 0; i < 3; i++) servers.push(await startRedis());
    for (const server of servers) {
      processA.push(await kind.create(server.url));
      processB.push(await kind.create(server.url));
    }
  });
  after(async () => {
    for (const client of [...processA, ...processB]) await client.close();
    for (const server of servers) await server.stop();
  });

  test("tokens rise in grant order across two processes when the nodes' counters disagree", async () => {
    const lockName = name();
    // Counters far above the clock, one node ahead of the others: a run's reserved tokens reach a
    // top that fewer than a quorum of nodes hold, so it must be written back before it is used.
    const start = 6_000_000_000_000_000;
    for (const [i, server] of servers.entries()) {
      await server.command('SET', `locksmith:{${lockName}}:fence`, String(start + (i === 0 ? 5_000 : 0)));
    }
    const a = new RedlockMutex(
      processA.map((c) => c.client),
      lockName,
      { ttlMs: 5_000, maxLocalHolds: 8 },
    );
    const b = new RedlockMutex(
      processB.map((c) => c.client),
      lockName,
      { ttlMs: 5_000, maxLocalHolds: 8 },
    );
    const leaseTokens = new Set<string>();
    const grants = await contend(
      (i) => (i % 2 === 0 ? a : b),
      8,
      6,
      async (lease) => {
        leaseTokens.add(lease.token);
      },
    );
    assert.equal(grants.length, 48);
    assert.ok(leaseTokens.size < 48, 'some holds were passed on inside a process');
    assertIncreasing(grants);
    assert.ok((grants[0] as number) > start, 'tokens come from the counters');
    // Whoever comes next, on any quorum, starts above every token handed out.
    const next = await new RedlockMutex(
      processB.map((c) => c.client),
      lockName,
      { maxLocalHolds: 1 },
    ).acquire();
    assert.ok(next.fencingToken > Math.max(...grants));
    await next.release();
  });
});
