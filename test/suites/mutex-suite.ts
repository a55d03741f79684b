/**
 * The Mutex's behaviour, written once and run for every client library (see clients.ts).
 * Everything here talks to a real redis-server started for the suite.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  fencedWrite,
  type Lease,
  LockLostError,
  LockTimeoutError,
  Mutex,
  NotHeldError,
  TooManyAttemptsError,
} from '../../src/index.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import type { ClientKind, TestClient } from '../fixtures/clients.js';
import { resetStats, scriptCalls } from '../fixtures/commandstats.js';
import { watchUnhandledRejections } from '../fixtures/unhandled.js';

async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await sleep(10);
  }
}

export function mutexSuite(kind: ClientKind): void {
  describe(`Mutex (${kind.name})`, () => {
    let server: RedisServer;
    let a: TestClient;
    let b: TestClient;
    let unhandled: ReturnType<typeof watchUnhandledRejections>;
    let n = 0;
    const name = () => {
      n += 1;
      return `job-${kind.name.replace(/\W/g, '')}-${n}`;
    };

    before(async () => {
      server = await startRedis();
      a = await kind.create(server.url);
      b = await kind.create(server.url);
      unhandled = watchUnhandledRejections();
    });

    after(async () => {
      unhandled.stop();
      await a.close();
      await b.close();
      await server.stop();
    });

    afterEach(() => {
      assert.deepEqual(unhandled.reasons, [], 'no unhandled rejections');
    });

    test('acquire, hold, release; keys share one hash tag', async () => {
      const mutex = new Mutex(a.client, name(), { ttlMs: 5_000 });
      const lease = await mutex.acquire();
      assert.match(lease.token, /^[0-9a-f]{32}$/, '128-bit random token');
      // Tokens start at the server's clock in µs (so they survive a restart without persistence).
      assert.ok(Number.isSafeInteger(lease.fencingToken) && lease.fencingToken > 1e15);
      assert.equal(lease.attempts, 1);
      assert.ok(lease.isHeld);
      assert.ok(lease.remainingMs > 4_800 && lease.remainingMs <= 5_000 - 52);
      assert.equal(await a.command('GET', mutex.keys.lock), lease.token);
      const pttl = Number(await a.command('PTTL', mutex.keys.lock));
      assert.ok(pttl > 4_000 && pttl <= 5_000, `server-side TTL ${pttl}`);
      for (const key of [
        mutex.keys.lock,
        mutex.keys.fence,
        mutex.keys.releasedChannel,
        mutex.keys.sleepers,
      ]) {
        assert.equal(key.match(/\{([^}]*)\}/)?.[1], mutex.name);
      }
      assert.equal(await lease.release(), true);
      assert.equal(await a.command('EXISTS', mutex.keys.lock), 0);
      assert.equal(lease.isHeld, false);
    });

    test('fencing tokens strictly increase across holders and clients', async () => {
      const key = name();
      const tokens: number[] = [];
      for (let i = 0; i < 6; i += 1) {
        const lease = await new Mutex(i % 2 ? a.client : b.client, key).acquire();
        tokens.push(lease.fencingToken);
        await lease.release();
      }
      for (let i = 1; i < tokens.length; i += 1) {
        assert.ok((tokens[i] as number) > (tokens[i - 1] as number), `tokens ${tokens.join(', ')}`);
      }
    });

    test('tryAcquire returns null when held, never throws for contention', async () => {
      const mutex = new Mutex(a.client, name());
      const held = await mutex.acquire();
      assert.equal(await new Mutex(b.client, mutex.name).tryAcquire(), null);
      await held.release();
      const next = await new Mutex(b.client, mutex.name).tryAcquire();
      assert.ok(next);
      assert.ok(next.fencingToken > held.fencingToken);
      await next.release();
    });

    test('a non-owner can neither release nor extend', async () => {
      const mutex = new Mutex(a.client, name(), { ttlMs: 5_000 });
      const lease = await mutex.acquire();
      const other = new Mutex(b.client, mutex.name);
      assert.equal(await other.releaseToken('f'.repeat(32)), false);
      assert.equal(await a.command('GET', mutex.keys.lock), lease.token, 'still held by the owner');
      // A lease whose lock was taken over cannot extend it either.
      await a.command('SET', mutex.keys.lock, 'someone-else', 'PX', '5000');
      await assert.rejects(
        lease.extend(),
        (e: unknown) => e instanceof LockLostError && e.reason === 'not-owner',
      );
      assert.equal(await a.command('GET', mutex.keys.lock), 'someone-else');
      assert.equal(await lease.release(), false);
      assert.equal(await a.command('GET', mutex.keys.lock), 'someone-else', 'release did not delete it');
    });

    test('extend after expiry fails and does not re-acquire', async () => {
      const mutex = new Mutex(a.client, name(), { ttlMs: 100, autoExtend: false });
      const lease = await mutex.acquire();
      await sleep(200);
      assert.equal(await a.command('EXISTS', mutex.keys.lock), 0);
      await assert.rejects(lease.extend(1_000), LockLostError);
      assert.equal(await a.command('EXISTS', mutex.keys.lock), 0, 'not re-created');
      assert.equal(await lease.release(), false, 'releasing an expired lock is reported, not thrown');
    });

    test('extend moves the server-side TTL', async () => {
      const mutex = new Mutex(a.client, name(), { ttlMs: 1_000, autoExtend: false });
      const lease = await mutex.acquire();
      await lease.extend(20_000);
      const pttl = Number(await a.command('PTTL', mutex.keys.lock));
      assert.ok(pttl > 19_000, `PTTL ${pttl}`);
      assert.ok(lease.remainingMs > 19_000);
      await lease.release();
      await assert.rejects(lease.extend(), NotHeldError);
    });

    test('auto-extension keeps the lock past its TTL with the same fencing token', async () => {
      const mutex = new Mutex(a.client, name(), { ttlMs: 300 });
      const lease = await mutex.acquire();
      await sleep(1_000);
      assert.ok(lease.isHeld);
      assert.equal(await lease.isOwned(), true);
      assert.equal((await mutex.inspect()).lastFencingToken, lease.fencingToken);
      assert.equal(await lease.release(), true);
    });

    test('a lost lock aborts the signal with LockLostError, never an unhandled rejection', async () => {
      const mutex = new Mutex(a.client, name(), { ttlMs: 300 });
      const lease = await mutex.acquire();
      const aborted = new Promise<unknown>((resolve) =>
        lease.signal.addEventListener('abort', () => resolve(lease.signal.reason)),
      );
      await a.command('DEL', mutex.keys.lock); // e.g. a failover that lost the key
      const reason = await aborted;
      assert.ok(reason instanceof LockLostError);
      assert.equal(reason.code, 'LOCK_LOST');
      assert.equal(lease.isHeld, false);
      assert.equal(await lease.release(), false);
    });

    test('without auto-extension the signal aborts when validity runs out', async () => {
      const lease = await new Mutex(a.client, name(), { ttlMs: 150, autoExtend: false }).acquire();
      await sleep(300);
      assert.ok(lease.signal.aborted);
      assert.equal((lease.signal.reason as LockLostError).reason, 'expired');
    });

    test('a waiter wakes on release instead of waiting out the TTL', async () => {
      const mutex = new Mutex(a.client, name(), { ttlMs: 20_000 });
      const held = await mutex.acquire();
      const started = performance.now();
      const waiting = new Mutex(b.client, mutex.name).acquire({ timeoutMs: 15_000 });
      await sleep(300);
      await held.release();
      const lease = await waiting;
      const waited = performance.now() - started;
      assert.ok(waited < 5_000, `woke after ${waited} ms, TTL was 20 s`);
      assert.ok(lease.fencingToken > held.fencingToken);
      await lease.release();
    });

    test('a waiter does not poll: script calls stay constant while it waits', async () => {
      const mutex = new Mutex(a.client, name(), { ttlMs: 30_000 });
      const held = await mutex.acquire();
      await resetStats(server);
      const waiters = Array.from({ length: 5 }, () =>
        new Mutex(b.client, mutex.name).acquire({ timeoutMs: 20_000 }).then((l) => l.release()),
      );
      await sleep(300);
      const early = await scriptCalls(server);
      await sleep(1_500);
      const late = await scriptCalls(server);
      assert.ok(early <= 10, `${early} script calls for 5 waiters (2 each at most)`);
      assert.equal(late, early, 'no calls while waiting');
      await held.release();
      await Promise.all(waiters);
    });

    test('a release wakes one waiter, not all of them', async () => {
      const mutex = new Mutex(a.client, name(), { ttlMs: 30_000 });
      const held = await mutex.acquire();
      const leases: Lease[] = [];
      const waiters = Array.from({ length: 5 }, () =>
        new Mutex(b.client, mutex.name).acquire({ timeoutMs: 20_000 }).then((lease) => {
          leases.push(lease);
        }),
      );
      await sleep(300); // every waiter has tried, registered and subscribed
      await resetStats(server);
      await held.release();
      await sleep(500);
      assert.equal(leases.length, 1, 'exactly one waiter woke and took the lock');
      const calls = await scriptCalls(server);
      assert.ok(calls <= 3, `${calls} script calls for one release and one wake-up (a broadcast would be 6)`);
      // Hand the lock down the line: each release wakes the next.
      for (let i = 1; i <= 5; i += 1) {
        await leases[i - 1]?.release();
        if (i < 5) await waitFor(() => leases.length === i + 1);
      }
      await Promise.all(waiters);
      assert.equal(await mutex.isLocked(), false);
      assert.equal(Number(await a.command('EXISTS', mutex.keys.sleepers)), 0, 'no sleeper left behind');
    });

    test('a waiter that gives up leaves the sleepers, so the next release wakes someone who waits', async () => {
      const mutex = new Mutex(a.client, name(), { ttlMs: 20_000 });
      const held = await mutex.acquire();
      // The impatient waiter registers first and has the earliest deadline: it would be woken first.
      const impatient = new Mutex(b.client, mutex.name).acquire({ timeoutMs: 300 });
      await sleep(50);
      const patient = new Mutex(b.client, mutex.name).acquire({ timeoutMs: 15_000 });
      await assert.rejects(impatient, LockTimeoutError);
      await sleep(100);
      const started = performance.now();
      await held.release();
      const lease = await patient;
      const waited = performance.now() - started;
      assert.ok(waited < 3_000, `woken ${waited} ms after the release, not at the holder's TTL`);
      await lease.release();
    });

    test('a sleeper whose process is gone is skipped (PUBLISH reached nobody)', async () => {
      const mutex = new Mutex(a.client, name(), { ttlMs: 20_000 });
      const held = await mutex.acquire();
      const waiting = new Mutex(b.client, mutex.name).acquire({ timeoutMs: 15_000 });
      await sleep(200);
      // A dead process's entry, on a channel nobody listens to: still within its deadline (server
      // time; same machine) and due before the live waiter's (15 s), so it is popped first and only
      // PUBLISH's receiver count can tell that nobody is there.
      await a.command(
        'ZADD',
        mutex.keys.sleepers,
        String(Date.now() + 5_000),
        `dead-waiter|${mutex.keys.releasedChannel}:gone`,
      );
      const started = performance.now();
      await held.release();
      const lease = await waiting;
      assert.ok(performance.now() - started < 3_000, 'the live waiter was woken');
      await lease.release();
    });

    test('a crashed holder is replaced after its TTL', async () => {
      const key = name();
      await a.command('SET', `locksmith:{${key}}`, 'crashed-holder', 'PX', '400');
      const started = performance.now();
      const lease = await new Mutex(b.client, key).acquire({ timeoutMs: 5_000 });
      const waited = performance.now() - started;
      assert.ok(waited >= 300 && waited < 3_000, `waited ${waited} ms for a 400 ms TTL`);
      await lease.release();
    });

    test('timeoutMs: LockTimeoutError, and nothing left locked', async () => {
      const mutex = new Mutex(a.client, name(), { ttlMs: 10_000 });
      const held = await mutex.acquire();
      await assert.rejects(new Mutex(b.client, mutex.name).acquire({ timeoutMs: 200 }), (e: unknown) => {
        assert.ok(e instanceof LockTimeoutError);
        assert.equal(e.code, 'LOCK_TIMEOUT');
        assert.ok(e.attempts >= 1);
        return true;
      });
      assert.equal(await a.command('GET', mutex.keys.lock), held.token);
      await held.release();
    });

    test('retries: TooManyAttemptsError after retries + 1 attempts', async () => {
      const mutex = new Mutex(a.client, name());
      const held = await mutex.acquire();
      await assert.rejects(
        new Mutex(b.client, mutex.name).acquire({ retries: 2, retryDelayMs: 10 }),
        (e: unknown) => {
          assert.ok(e instanceof TooManyAttemptsError);
          assert.equal(e.attempts, 3);
          return true;
        },
      );
      await held.release();
    });

    test('an aborted wait rejects with the signal reason and leaves nothing behind', async () => {
      const mutex = new Mutex(a.client, name());
      const held = await mutex.acquire();
      const controller = new AbortController();
      const waiting = new Mutex(b.client, mutex.name).acquire({ signal: controller.signal });
      await sleep(100);
      controller.abort(new Error('user gave up'));
      await assert.rejects(waiting, { message: 'user gave up' });
      await held.release();
      await sleep(100);
      assert.equal(await a.command('EXISTS', mutex.keys.lock), 0);
      // An already aborted signal: nothing is sent.
      await assert.rejects(mutex.acquire({ signal: AbortSignal.abort() }), { name: 'AbortError' });
      await assert.rejects(mutex.tryAcquire({ signal: AbortSignal.abort() }), { name: 'AbortError' });
    });

    test('an acquire aborted while its attempt is in flight releases what it got', async () => {
      const names: string[] = [];
      for (let i = 0; i < 20; i += 1) {
        const mutex = new Mutex(a.client, name());
        names.push(mutex.keys.lock);
        const controller = new AbortController();
        const attempt = mutex.acquire({ signal: controller.signal });
        queueMicrotask(() => controller.abort());
        const lease = await attempt.catch(() => undefined);
        await lease?.release();
      }
      await sleep(200);
      const left = Number(await a.command('EXISTS', ...names));
      assert.equal(left, 0, 'no lock left behind');
    });

    test('using() releases after success and after a throw, and returns the error thrown by work', async () => {
      const mutex = new Mutex(a.client, name());
      const result = await mutex.using(async (signal, lease) => {
        assert.equal(signal, lease.signal);
        assert.equal(await a.command('GET', mutex.keys.lock), lease.token);
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
      const mutex = new Mutex(a.client, name(), { ttlMs: 100, autoExtend: false });
      const boom = new Error('work failed');
      await assert.rejects(
        mutex.using(async () => {
          await sleep(250);
          throw boom;
        }),
        (e) => e === boom,
      );
    });

    test('await using releases at the end of the block', async () => {
      const mutex = new Mutex(a.client, name());
      {
        await using lease = await mutex.acquire();
        assert.ok(await lease.isOwned());
      }
      assert.equal(await mutex.isLocked(), false);
    });

    test('inspection: isLocked, isOwned, inspect, local isHeld', async () => {
      const mutex = new Mutex(a.client, name(), { ttlMs: 5_000 });
      assert.equal(await mutex.isLocked(), false);
      assert.deepEqual(await mutex.inspect(), {
        locked: false,
        ownerToken: undefined,
        remainingTtlMs: undefined,
        lastFencingToken: 0,
      });
      const lease = await mutex.acquire();
      const state = await new Mutex(b.client, mutex.name).inspect();
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
      const mutex = new Mutex(a.client, name(), { ttlMs: 5_000 });
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
      const mutex = new Mutex(a.client, name(), { ttlMs: 20_000 });
      const held = await mutex.acquire();
      const started = performance.now();
      const waiting = new Mutex(b.client, mutex.name).acquire({ timeoutMs: 25_000 });
      await sleep(200);
      await server.command('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await server.command('CLIENT', 'KILL', 'TYPE', 'normal');
      await sleep(1_000); // clients reconnect and re-subscribe
      await held.release().catch(() => held.release());
      const lease = await waiting;
      const waited = performance.now() - started;
      assert.ok(waited < 10_000, `acquired ${waited} ms after start, long before the 20 s TTL`);
      await lease.release();
    });

    test('fencing: a paused holder’s late write is refused', async () => {
      const key = name();
      const first = await new Mutex(a.client, key, { ttlMs: 100, autoExtend: false }).acquire();
      await sleep(200); // "paused" past its TTL
      const second = await new Mutex(b.client, key).acquire();
      assert.equal((await fencedWrite(b.client, `res:{${key}}`, second.fencingToken, 'new')).written, true);
      const late = await fencedWrite(a.client, `res:{${key}}`, first.fencingToken, 'stale');
      assert.deepEqual(late, { written: false, highestToken: second.fencingToken });
      assert.equal(await a.command('GET', `res:{${key}}`), 'new');
      await second.release();
    });
  });
}
