/**
 * The lock contract: what every exclusive lock kind (tools/lock-kinds/registry.ts) promises, written once and run
 * for every lock kind and every client library (clients.ts), each pair on a redis-server of its own.
 *
 * Tests use the public API and, of the keys, only `keys.lock` and `keys.fence`. Events are ordered
 * by observable state (a waiter is registered, a key is gone, a signal aborted), not by sleeping;
 * the few sleeps left are the scenario itself (time passes and nothing must happen). Time bounds
 * are generous (a loaded 2-core machine): they check "woken, not left to the TTL", not "fast".
 */
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  fencedWrite,
  type Lease,
  LockLostError,
  LockTimeoutError,
  NotHeldError,
  TooManyAttemptsError,
} from '../../src/index.js';
import type { ContractLock, LockKind } from '../../tools/lock-kinds/registry.js';
import type { ClientKind, TestClient } from '../fixtures/clients.js';
import { resetStats, scriptCalls } from '../fixtures/commandstats.js';
import {
  abortedWith,
  awaitedLater,
  type Deployment,
  nameMaker,
  redisForSuite,
  type SuiteRedis,
  until,
  within,
} from '../fixtures/helpers.js';
import { lockKeyIsFree } from '../fixtures/lock-value.js';

/**
 * The contract of `lockKind` on clients of `kind`: on a redis-server of the block's own, or on what
 * `deployment` sets up instead (a cluster: `clusterForSuite`).
 */
export function lockContract(
  lockKind: LockKind,
  kind: Pick<ClientKind, 'name'>,
  deployment: () => SuiteRedis<Deployment> = () => redisForSuite(kind as ClientKind),
): void {
  describe(`${lockKind.name} contract (${kind.name})`, () => {
    const redis = deployment();
    const name = nameMaker(`${lockKind.name}-${kind.name}`);
    const lock = (client: TestClient, lockName: string, options?: Parameters<LockKind['create']>[2]) =>
      lockKind.create(client.client, lockName, options);
    // The other party while \`lock\` is held: the same kind, or what a shared lock excludes.
    const contender = (client: TestClient, lockName: string, options?: Parameters<LockKind['create']>[2]) =>
      (lockKind.contender ?? lockKind.create)(client.client, lockName, options);
    const waitersAre = (subject: ContractLock, count: number) =>
      until(
        async () => (await lockKind.waiters(subject, redis.a)) === count,
        `${count} waiter(s) registered`,
      );
    const keyGone = (key: string) =>
      until(async () => Number(await redis.a.command('EXISTS', key)) === 0, `${key} is gone`);

    test('acquire, hold, release; lock and fence keys share one hash tag', async () => {
      const { a } = redis;
      const mutex = lock(a, name(), { ttlMs: 5_000 });
      const sent = performance.now();
      const lease = await mutex.acquire();
      // Validity counts from the send (the client's first call also checks the server, a few round
      // trips that a busy machine can stretch): bounded by the time since, not by a fixed margin,
      // plus 2 ms for the wall clock's and PTTL's whole milliseconds.
      const sinceSent = () => performance.now() - sent + 2;
      assert.match(lease.token, /^[0-9a-f]{32}$/, '128-bit random token');
      // Tokens start at the server's clock in µs (so they survive a restart without persistence).
      assert.ok(Number.isSafeInteger(lease.fencingToken) && lease.fencingToken > 1e15);
      assert.equal(lease.attempts, 1);
      assert.ok(lease.isHeld);
      const remaining = lease.remainingMs;
      assert.ok(remaining >= 5_000 - 52 - sinceSent() && remaining <= 5_000 - 52, `remaining ${remaining}`);
      assert.equal((await mutex.inspect()).ownerToken, lease.token);
      const pttl = Number(await a.command('PTTL', mutex.keys.lock));
      assert.ok(pttl >= 5_000 - sinceSent() && pttl <= 5_000, `server-side TTL ${pttl}`);
      for (const key of [mutex.keys.lock, mutex.keys.fence]) {
        assert.equal(key.match(/\{([^}]*)\}/)?.[1], mutex.name);
      }
      assert.equal(await lease.release(), true);
      assert.ok(await lockKeyIsFree(a, mutex.keys.lock));
      assert.equal(lease.isHeld, false);
    });

    test('fencing tokens strictly increase across holders and clients', async () => {
      const key = name();
      const tokens: number[] = [];
      for (let i = 0; i < 6; i += 1) {
        const lease = await lock(i % 2 ? redis.a : redis.b, key).acquire();
        tokens.push(lease.fencingToken);
        await lease.release();
      }
      for (let i = 1; i < tokens.length; i += 1) {
        assert.ok((tokens[i] as number) > (tokens[i - 1] as number), `tokens ${tokens.join(', ')}`);
      }
    });

    test('fencing tokens rise in grant order with many concurrent callers on each client', async () => {
      // Callers of one process may queue behind one waiter in Redis and get the lock passed on
      // among them (the Mutex's local batch): their tokens rise all the same, in the order held.
      const key = name();
      const tokens: number[] = [];
      let holding = 0;
      await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          const subject = contender(i % 2 ? redis.a : redis.b, key);
          for (let round = 0; round < 3; round += 1) {
            const lease = await subject.acquire();
            holding += 1;
            assert.equal(holding, 1, 'one holder at a time');
            tokens.push(lease.fencingToken);
            await new Promise<void>((resolve) => setImmediate(resolve));
            holding -= 1;
            assert.equal(await lease.release(), true);
          }
        }),
      );
      assert.equal(tokens.length, 24);
      for (let i = 1; i < tokens.length; i += 1) {
        assert.ok((tokens[i] as number) > (tokens[i - 1] as number), `tokens ${tokens.join(', ')}`);
      }
    });

    test('tryAcquire returns null when held, never throws for contention', async () => {
      const mutex = lock(redis.a, name());
      const held = await mutex.acquire();
      assert.equal(await contender(redis.b, mutex.name).tryAcquire(), null);
      await held.release();
      const next = await contender(redis.b, mutex.name).tryAcquire();
      assert.ok(next);
      assert.ok(next.fencingToken > held.fencingToken);
      await next.release();
    });

    test('a non-owner can neither release nor extend', async () => {
      const { a } = redis;
      const mutex = lock(a, name(), { ttlMs: 5_000 });
      const lease = await mutex.acquire();
      const other = contender(redis.b, mutex.name);
      assert.equal(await other.releaseToken('f'.repeat(32)), false);
      assert.equal((await mutex.inspect()).ownerToken, lease.token, 'still held by the owner');
      // A lease whose lock was taken over cannot extend it either.
      await a.command('SET', mutex.keys.lock, 'someone-else', 'PX', '5000');
      await assert.rejects(
        lease.extend(),
        (e: unknown) => e instanceof LockLostError && e.reason === 'not-owner',
      );
      assert.equal((await mutex.inspect()).ownerToken, 'someone-else');
      assert.equal(await lease.release(), false);
      assert.equal((await mutex.inspect()).ownerToken, 'someone-else', 'release did not delete it');
    });

    test('extend after expiry fails and does not re-acquire', async () => {
      const { a } = redis;
      // A TTL a reply beats on a loaded machine: one later than the TTL is a grant too late to use
      // (given back, and with 100 ms its give-back too could go unanswered: seen on a cluster in CI).
      const mutex = lock(a, name(), { ttlMs: 1_000, autoExtend: false });
      const lease = await mutex.acquire();
      await keyGone(mutex.keys.lock); // the TTL ran out
      await assert.rejects(lease.extend(1_000), LockLostError);
      assert.ok(
        await lockKeyIsFree(a, mutex.keys.lock),
        `not re-created: ${await describeKey(a, mutex.keys.lock)}, lease of ${lease.attempts} attempt(s)`,
      );
      assert.equal(await lease.release(), false, 'releasing an expired lock is reported, not thrown');
    });

    test('extend moves the server-side TTL', async () => {
      const mutex = lock(redis.a, name(), { ttlMs: 1_000, autoExtend: false });
      const lease = await mutex.acquire();
      await lease.extend(20_000);
      const pttl = Number(await redis.a.command('PTTL', mutex.keys.lock));
      assert.ok(pttl > 19_000, `PTTL ${pttl}`);
      assert.ok(lease.remainingMs > 19_000);
      await lease.release();
      await assert.rejects(lease.extend(), NotHeldError);
    });

    test('auto-extension keeps the lock past its TTL with the same fencing token', async () => {
      // 1.2 s: an extension is due every 400 ms, so a busy machine's stall of several hundred ms
      // (300 ms seen on two loaded cores; at 600 ms, four files at once under a load average of 15
      // lost the lease) does not lose the lease the test means to keep.
      const mutex = lock(redis.a, name(), { ttlMs: 1_200 });
      const lease = await mutex.acquire();
      await sleep(2_600); // the scenario: more than two TTLs pass while the lease is held
      assert.ok(lease.isHeld);
      assert.equal(await lease.isOwned(), true);
      assert.equal((await mutex.inspect()).lastFencingToken, lease.fencingToken);
      // Kept past two TTLs: shown above. Its release's answer is not this test's (the first test's):
      // beside two busy loops a GLIDE client's extensions ran past its 250 ms request timeout for
      // longer than the 1.2 s TTL after the checks above, and the release found the lock gone.
      await lease.release();
    });

    test('a lost lock aborts the signal with LockLostError, never an unhandled rejection', async () => {
      const mutex = lock(redis.a, name(), { ttlMs: 300 });
      const lease = await mutex.acquire();
      const aborted = abortedWith(lease.signal);
      await redis.a.command('DEL', mutex.keys.lock); // e.g. a failover that lost the key
      const reason = await within(aborted, 10_000, 'the signal aborts');
      assert.ok(reason instanceof LockLostError);
      assert.equal(reason.code, 'LOCK_LOST');
      assert.equal(lease.isHeld, false);
      assert.equal(await lease.release(), false);
    });

    test('without auto-extension the signal aborts when validity runs out', async () => {
      const lease = await lock(redis.a, name(), { ttlMs: 1_000, autoExtend: false }).acquire();
      const reason = await within(abortedWith(lease.signal), 10_000, 'the signal aborts');
      assert.ok(lease.signal.aborted);
      assert.equal((reason as LockLostError).reason, 'expired');
    });

    test('the holder label travels with the lease: host and PID by default, yours, or none', async () => {
      const key = name();
      const held = await lock(redis.a, key).acquire();
      assert.equal((await lock(redis.b, key).inspect()).holderLabel, `${hostname()}:${process.pid}`);
      await held.release();
      assert.equal((await lock(redis.b, key).inspect()).holderLabel, undefined, 'a free lock has none');
      const labelled = await lock(redis.a, key, { label: 'deploy #42 on web-1' }).acquire();
      assert.equal((await lock(redis.b, key).inspect()).holderLabel, 'deploy #42 on web-1');
      await labelled.release();
      const unlabelled = await lock(redis.a, key, { label: '' }).acquire();
      assert.equal((await lock(redis.b, key).inspect()).holderLabel, undefined);
      await unlabelled.release();
      assert.throws(() => lock(redis.a, key, { label: 'x'.repeat(101) }), TypeError);
    });

    test('a lock handed to a waiter carries the waiter’s label', async () => {
      const mutex = lock(redis.a, name(), { label: 'first' });
      const held = await mutex.acquire();
      const waiting = awaitedLater(contender(redis.b, mutex.name, { label: 'second' }).acquire());
      await waitersAre(mutex, 1);
      await held.release();
      const lease = await waiting;
      assert.equal((await mutex.inspect()).holderLabel, 'second');
      await lease.release();
    });

    test('a waiter wakes on release instead of waiting out the TTL', async () => {
      const mutex = lock(redis.a, name(), { ttlMs: 20_000 });
      const held = await mutex.acquire();
      const waiting = awaitedLater(contender(redis.b, mutex.name).acquire({ timeoutMs: 15_000 }));
      await waitersAre(mutex, 1);
      const released = performance.now();
      await held.release();
      const lease = await waiting;
      const waited = performance.now() - released;
      assert.ok(waited < 10_000, `woke ${waited} ms after the release, TTL was 20 s`);
      assert.ok(lease.fencingToken > held.fencingToken);
      await lease.release();
    });

    test('a waiter does not poll: script calls stay constant while it waits', async () => {
      const { server } = redis;
      const mutex = lock(redis.a, name(), { ttlMs: 30_000, ...lockKind.alone });
      const held = await mutex.acquire();
      // The waiters' client checks its server with a script on first use (when this test runs
      // alone): not a waiter's call.
      await contender(redis.b, mutex.name).inspect();
      await resetStats(server);
      const waiters = Array.from({ length: 5 }, () =>
        awaitedLater(
          contender(redis.b, mutex.name, lockKind.alone)
            .acquire({ timeoutMs: 20_000 })
            .then((l) => l.release()),
        ),
      );
      await waitersAre(mutex, 5);
      // Each waiter asks twice: once (queued), and once more when its subscription is live (a
      // release between the two is not missed). Only then is every waiter just waiting.
      await until(async () => (await scriptCalls(server)) >= 10, 'every waiter tried again once subscribed');
      const early = await scriptCalls(server);
      await sleep(1_500); // the scenario: time passes, and no waiter sends anything
      const late = await scriptCalls(server);
      assert.ok(early <= 10, `${early} script calls for 5 waiters (2 each at most)`);
      assert.equal(late, early, 'no calls while waiting');
      await held.release();
      await Promise.all(waiters);
    });

    test('a release wakes one waiter, not all of them (a kind that wakes every waiter: one takes it)', async () => {
      const { server } = redis;
      const mutex = lock(redis.a, name(), { ttlMs: 30_000, ...lockKind.alone });
      const held = await mutex.acquire();
      await resetStats(server);
      const leases: Lease[] = [];
      const waiters = Array.from({ length: 5 }, () =>
        awaitedLater(
          contender(redis.b, mutex.name, lockKind.alone)
            .acquire({ timeoutMs: 20_000 })
            .then((lease) => {
              leases.push(lease);
            }),
        ),
      );
      await waitersAre(mutex, 5); // every waiter has tried and registered
      // ... and tried again once its subscription was live (two script calls each), so is waiting.
      await until(async () => (await scriptCalls(server)) >= 10, 'every waiter tried again once subscribed');
      await resetStats(server);
      await held.release();
      await until(() => leases.length > 0, 'a waiter took the lock');
      await sleep(300); // the scenario: any other waiter a broadcast woke would show up now
      assert.equal(leases.length, 1, 'exactly one waiter woke and took the lock');
      const calls = await scriptCalls(server);
      if (lockKind.wakesEveryWaiter) {
        // Every waiter on what was freed is woken once and asks (one takes it, the others register
        // again): one call per waiter.
        assert.ok(calls <= 6, `${calls} script calls for one release and five wake-ups`);
      } else {
        assert.ok(
          calls <= 3,
          `${calls} script calls for one release and one wake-up (a broadcast would be 6)`,
        );
      }
      // Hand the lock down the line: each release wakes the next.
      for (let i = 1; i <= 5; i += 1) {
        await leases[i - 1]?.release();
        if (i < 5) await until(() => leases.length === i + 1, `waiter ${i + 1} took the lock`);
      }
      await Promise.all(waiters);
      assert.equal(await mutex.isLocked(), false);
      assert.equal(await lockKind.waiters(mutex, redis.a), 0, 'no waiter left behind');
    });

    test('a waiter that gives up leaves, so the next release wakes someone who waits', async () => {
      const mutex = lock(redis.a, name(), { ttlMs: 20_000 });
      const held = await mutex.acquire();
      // The impatient waiter registers first and has the earliest deadline: it would be woken first.
      const impatient = awaitedLater(contender(redis.b, mutex.name).acquire({ timeoutMs: 300 }));
      await waitersAre(mutex, 1);
      const patient = awaitedLater(contender(redis.b, mutex.name).acquire({ timeoutMs: 15_000 }));
      await assert.rejects(impatient, LockTimeoutError);
      await waitersAre(mutex, 1); // the impatient one left, the patient one is registered
      const released = performance.now();
      await held.release();
      const lease = await patient;
      const waited = performance.now() - released;
      assert.ok(waited < 10_000, `woken ${waited} ms after the release, not at the holder's TTL`);
      await lease.release();
    });

    test('a crashed holder is replaced after its TTL', async () => {
      const key = name();
      const mutex = lock(redis.b, key);
      // Timed from before the SET is sent: its reply may come late on a busy machine, and the TTL
      // runs from when the server applied it.
      const started = performance.now();
      await redis.a.command('SET', mutex.keys.lock, 'crashed-holder', 'PX', '400');
      const lease = await mutex.acquire({ timeoutMs: 5_000 });
      const waited = performance.now() - started;
      assert.ok(waited >= 300 && waited < 5_000, `waited ${waited} ms for a 400 ms TTL`);
      await lease.release();
    });

    test('timeoutMs: LockTimeoutError, and nothing left locked', async () => {
      const mutex = lock(redis.a, name(), { ttlMs: 10_000 });
      const held = await mutex.acquire();
      await assert.rejects(contender(redis.b, mutex.name).acquire({ timeoutMs: 200 }), (e: unknown) => {
        assert.ok(e instanceof LockTimeoutError);
        assert.equal(e.code, 'LOCK_TIMEOUT');
        assert.ok(e.attempts >= 1);
        return true;
      });
      assert.equal((await mutex.inspect()).ownerToken, held.token);
      await held.release();
    });

    test('retries: TooManyAttemptsError after retries + 1 attempts', async () => {
      const mutex = lock(redis.a, name());
      const held = await mutex.acquire();
      await assert.rejects(
        contender(redis.b, mutex.name).acquire({ retries: 2, retryDelayMs: 10 }),
        (e: unknown) => {
          assert.ok(e instanceof TooManyAttemptsError);
          assert.equal(e.attempts, 3);
          return true;
        },
      );
      await held.release();
    });

    test('an aborted wait rejects with the signal reason and leaves nothing behind', async () => {
      const mutex = lock(redis.a, name());
      const held = await mutex.acquire();
      const controller = new AbortController();
      const waiting = awaitedLater(contender(redis.b, mutex.name).acquire({ signal: controller.signal }));
      await waitersAre(mutex, 1);
      controller.abort(new Error('user gave up'));
      await assert.rejects(waiting, { message: 'user gave up' });
      await waitersAre(mutex, 0); // it left
      await held.release();
      assert.ok(await lockKeyIsFree(redis.a, mutex.keys.lock));
      // An already aborted signal: nothing is sent.
      await assert.rejects(mutex.acquire({ signal: AbortSignal.abort() }), { name: 'AbortError' });
      await assert.rejects(mutex.tryAcquire({ signal: AbortSignal.abort() }), { name: 'AbortError' });
    });

    test('an acquire aborted while its attempt is in flight releases what it got', async () => {
      const names: string[] = [];
      for (let i = 0; i < 20; i += 1) {
        const mutex = lock(redis.a, name());
        names.push(mutex.keys.lock);
        const controller = new AbortController();
        const attempt = mutex.acquire({ signal: controller.signal });
        queueMicrotask(() => controller.abort());
        const lease = await attempt.catch(() => undefined);
        await lease?.release();
      }
      // Give-backs of aborted attempts run in the background: wait for them, not for a guessed time.
      await until(
        async () => (await Promise.all(names.map((key) => lockKeyIsFree(redis.a, key)))).every(Boolean),
        'no lock is left behind',
      );
    });

    test('using() releases after success and after a throw, and returns the error thrown by work', async () => {
      const mutex = lock(redis.a, name());
      const result = await mutex.using(async (signal, lease) => {
        assert.equal(signal, lease.signal);
        assert.equal((await mutex.inspect()).ownerToken, lease.token);
        return 42;
      });
      assert.equal(result, 42);
      assert.equal(await mutex.isLocked(), false);
      const boom = new Error('boom');
      await assert.rejects(
        mutex.using(() => {
          throw boom;
        }),
        (e) => e === boom,
      );
      assert.equal(await mutex.isLocked(), false);
    });

    test('using() still surfaces the work error when the lock was lost meanwhile', async () => {
      // A TTL a busy machine's acquire cannot outlast (at 100 ms, the lease had run out before the
      // work began, and using() rightly refused to start it).
      const mutex = lock(redis.a, name(), { ttlMs: 1_000, autoExtend: false });
      const boom = new Error('work failed');
      await assert.rejects(
        mutex.using(async (signal) => {
          await within(abortedWith(signal), 10_000, 'the lock is lost'); // work outlives the lease
          throw boom;
        }),
        (e) => e === boom,
      );
    });

    test('await using releases at the end of the block', async () => {
      const mutex = lock(redis.a, name());
      {
        await using lease = await mutex.acquire();
        assert.ok(await lease.isOwned());
      }
      assert.equal(await mutex.isLocked(), false);
    });

    test('inspection: isLocked, isOwned, inspect, local isHeld', async () => {
      const mutex = lock(redis.a, name(), { ttlMs: 5_000 });
      assert.equal(await mutex.isLocked(), false);
      const { locked, ownerToken, remainingTtlMs, lastFencingToken } = await mutex.inspect();
      assert.deepEqual(
        { locked, ownerToken, remainingTtlMs, lastFencingToken },
        { locked: false, ownerToken: undefined, remainingTtlMs: undefined, lastFencingToken: 0 },
      );
      const lease = await mutex.acquire();
      const state = await contender(redis.b, mutex.name).inspect();
      assert.equal(state.locked, true);
      assert.equal(state.ownerToken, lease.token);
      assert.ok((state.remainingTtlMs ?? 0) > 4_000);
      assert.equal(state.lastFencingToken, lease.fencingToken);
      assert.equal(await lease.isOwned(), true);
      await lease.release();
      assert.equal(await lease.isOwned(), false);
      assert.equal(lease.isHeld, false);
    });

    test('SCRIPT FLUSH between calls is invisible', async () => {
      const { a } = redis;
      const mutex = lock(a, name(), { ttlMs: 5_000 });
      await a.command('SCRIPT', 'FLUSH');
      const lease = await mutex.acquire();
      await a.command('SCRIPT', 'FLUSH');
      await lease.extend();
      await a.command('SCRIPT', 'FLUSH');
      assert.equal((await mutex.inspect()).ownerToken, lease.token);
      await a.command('SCRIPT', 'FLUSH');
      assert.equal(await lease.release(), true);
    });

    test('a dropped connection while waiting recovers', async () => {
      const { server } = redis;
      const mutex = lock(redis.a, name(), { ttlMs: 20_000 });
      const held = await mutex.acquire();
      const started = performance.now();
      const waiting = awaitedLater(contender(redis.b, mutex.name).acquire({ timeoutMs: 25_000 }));
      await waitersAre(mutex, 1);
      // The channels this lock's waiters listen on (a waiter whose SUBSCRIBE the kill below cut off
      // would wait by polling instead: a different scenario): plain ones, or a cluster client's
      // sharded ones (asked of every node; before Redis 7, SHARDCHANNELS is an error reply).
      const channels = `${mutex.keys.lock}*`;
      const listening = async () =>
        (await server.command('PUBSUB', 'CHANNELS', channels)).includes(mutex.keys.lock) ||
        (await server.command('PUBSUB', 'SHARDCHANNELS', channels)).includes(mutex.keys.lock);
      await until(listening, 'the waiter listens');
      await server.command('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await server.command('CLIENT', 'KILL', 'TYPE', 'normal');
      // The clients reconnect and the waiter's client subscribes again to this lock's channels.
      await until(listening, 'the waiter listens again', 15_000);
      await held.release().catch(() => held.release());
      const lease = await waiting;
      const waited = performance.now() - started;
      assert.ok(waited < 15_000, `acquired ${waited} ms after start, before the 20 s TTL`);
      await lease.release();
    });

    test('fencing: a paused holder’s late write is refused', async () => {
      const { a, b } = redis;
      const key = name();
      const firstLock = lock(a, key, { ttlMs: 1_000, autoExtend: false }); // as in 'extend after expiry'
      const first = await firstLock.acquire();
      await keyGone(firstLock.keys.lock); // "paused" past its TTL
      const second = await lock(b, key).acquire();
      assert.equal((await fencedWrite(b.client, `res:{${key}}`, second.fencingToken, 'new')).written, true);
      const late = await fencedWrite(a.client, `res:{${key}}`, first.fencingToken, 'stale');
      assert.deepEqual(late, { written: false, highestToken: second.fencingToken });
      assert.equal(await a.command('GET', `res:{${key}}`), 'new');
      await second.release();
    });
  });
}

/** What a key holds, for a failure message: its type, PTTL and contents. */
async function describeKey(client: TestClient, key: string): Promise<string> {
  const type = String(await client.command('TYPE', key));
  const pttl = String(await client.command('PTTL', key));
  const read: Record<string, string[]> = {
    string: ['GET', key],
    zset: ['ZRANGE', key, '0', '-1', 'WITHSCORES'],
    hash: ['HGETALL', key],
  };
  const contents = read[type] ? await client.command(...(read[type] as [string, ...string[]])) : '';
  return `${type} ${JSON.stringify(contents)} PTTL ${pttl}`;
}
