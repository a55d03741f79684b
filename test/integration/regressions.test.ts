/**
 * Regression tests for bugs the fault-injection suite (test/faults) found, one `describe` per bug,
 * run for every client library against a real redis-server. Each names the scenario that found it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FairMutex, Lease, Mutex } from '../../src/index.js';
import { defaultLockOptions } from '../../src/options.js';
import type { LockBackend } from '../../src/plan.js';
import { FaultProxy } from '../faults/toolkit/proxy.js';
import { clientKinds } from '../fixtures/clients.js';
import { nameMaker, redisForSuite } from '../fixtures/helpers.js';
import { lockKeyIsFree } from '../fixtures/lock-value.js';

/**
 * Monotonic time that the test can move forward at once: "the reply to the request just sent
 * arrives two TTLs later" without waiting for it (what a paused Redis did in the fault suite).
 */
class JumpClock {
  offset = 0;
  now(): number {
    return performance.now() + this.offset;
  }
}

const TTL = 1_000;

for (const kind of clientKinds) {
  describe(`regressions (${kind.name})`, () => {
    const redis = redisForSuite(kind, { clients: 1, unhandledRejections: 'end' });
    const name = nameMaker(`regression-${kind.name}`);

    // Found by "redis paused past TTL" and "redis killed and restarted": an acquire sent just
    // before the pause got its reply after the lease's validity had run out, and acquire() resolved
    // with that lease, signal not aborted, so the caller started work the lock no longer covered.
    describe('a grant that arrives after its validity ran out', () => {
      test('Mutex.acquire() gives it back and acquires again with a fresh TTL', async () => {
        const clock = new JumpClock();
        const mutex = new Mutex(redis.a.client, name(), { ttlMs: TTL, clock });
        const pending = mutex.acquire();
        clock.offset += 2 * TTL;
        const lease = await pending;
        assert.equal(lease.signal.aborted, false);
        assert.equal(lease.isHeld, true, 'the lease handed out is valid');
        assert.ok(lease.remainingMs > TTL / 2, `remaining ${lease.remainingMs} ms`);
        assert.equal(lease.attempts, 2, 'the late grant cost one more attempt');
        assert.equal((await mutex.inspect()).ownerToken, lease.token);
        assert.equal(await lease.release(), true);
      });

      test('Mutex.tryAcquire() gives it back and returns null, leaving the lock free', async () => {
        const clock = new JumpClock();
        const mutex = new Mutex(redis.a.client, name(), { ttlMs: TTL, clock });
        const pending = mutex.tryAcquire();
        clock.offset += 2 * TTL;
        assert.equal(await pending, null);
        assert.ok(await lockKeyIsFree(redis.a, mutex.keys.lock), 'not left locked until its TTL');
        const next = await mutex.tryAcquire();
        assert.ok(next?.isHeld, 'the next caller gets the lock at once');
        await next?.release();
      });

      test('FairMutex never hands it out as held', async () => {
        const clock = new JumpClock();
        const mutex = new FairMutex(redis.a.client, name(), { ttlMs: TTL, clock });
        for (const take of [() => mutex.acquire(), () => mutex.tryAcquire()]) {
          const pending = take();
          clock.offset += 2 * TTL;
          const lease = await pending;
          if (lease === null) continue;
          // Whatever the primitive chooses (retry or a lost lease), never "valid: no, signal: live".
          assert.equal(lease.signal.aborted, !lease.isHeld, 'a lease is either valid or visibly lost');
          await lease.release();
          await mutex.releaseToken(lease.token);
        }
      });
    });

    // Found by "redis paused past TTL" after the waiting loop began bounding each attempt by the
    // TTL: attempt #1's reply came late, the loop had already sent #2 (same owner token), #2 won —
    // and #1, seeing its own grant stale, sent a compare-and-delete with that shared token, deleting
    // the lock #2 had just taken while its lease said held (a 0.1–0.7 ms overlap in the checker).
    // Fixed: only the waiting loop gives a stale grant back, and only for its current attempt.
    for (const [label, make] of [
      ['Mutex', (lockName: string) => new Mutex(redis.a.client, lockName, { ttlMs: 300 })],
      ['FairMutex', (lockName: string) => new FairMutex(redis.a.client, lockName, { ttlMs: 300 })],
    ] as const) {
      test(`${label}: a stale grant from an abandoned attempt never gives back a later attempt's lock`, async () => {
        const proxy = await FaultProxy.start({ port: redis.server.port });
        const p = await kind.create(proxy.url);
        try {
          const lockName = name();
          const lock = make(lockName);
          const viaProxy =
            label === 'Mutex'
              ? new Mutex(p.client, lockName, { ttlMs: 300 })
              : new FairMutex(p.client, lockName, { ttlMs: 300 });
          await viaProxy.inspect(); // the once-per-client server check is done: the next reply is the acquire's
          let delayed = false;
          proxy.delay = ({ toClient, pubsub }) => {
            if (!toClient || pubsub || delayed) return 0;
            delayed = true;
            return 450; // attempt #1's reply: past its validity and past the 300 ms attempt bound
          };
          const lease = await viaProxy.acquire({ timeoutMs: 5_000 });
          proxy.delay = 0;
          assert.ok(lease.isHeld, 'the lease handed out is valid');
          // Held long from here, so that a stall of this process past the 300 ms TTL (a loaded
          // machine; its watchdog extends at a third of it) cannot free the lock by expiry, which
          // the checks below could not tell from a wrongful give-back. A give-back of the lock
          // before this extension fails it; one after it frees the key, which the checks see.
          await lease.extend(30_000);
          // Whatever #1 does with its late reply has been sent by now (it came in with #2's).
          await new Promise((r) => setTimeout(r, 50));
          assert.equal((await lock.inspect()).ownerToken, lease.token, 'Redis still holds the lease token');
          assert.equal(
            await lock.tryAcquire(),
            null,
            'nobody else can take the lock while the lease is valid',
          );
          await lease.release();
        } finally {
          proxy.delay = 0;
          await p.close();
          await proxy.close();
        }
      });
    }

    // Found by "workers paused at random (SIGSTOP)" and the soak: a FairMutex waiter that hears its
    // hand-off only after the handed-off lease expired, and after a newer "queued" reply, takes it
    // as a fresh grant (Waiter.handOff floors its start at that newer request) and holds the lock
    // alongside the next owner. Reproduced here by delaying only the waiter's pub/sub messages.
    // Fixed in Waiter.handOff(): a hand-off whose server time is older than the latest queued
    // reply is stale (the server saw us not holding after it) and is dropped.
    test('FairMutex: a hand-off heard after a newer queued reply is not taken as a grant', async () => {
      const proxy = await FaultProxy.start({ port: redis.server.port });
      const w = await kind.create(proxy.url);
      try {
        const lockName = name();
        const holder = await new FairMutex(redis.a.client, lockName, { ttlMs: 10_000 }).acquire();
        const started = performance.now();
        const at = (ms: number) =>
          new Promise((r) => setTimeout(r, Math.max(0, started + ms - performance.now())));
        // W queues at once, then polls every 1.5 s; its lease TTL is 1 s.
        const waiter = new FairMutex(w.client, lockName, { ttlMs: 1_000, retryDelayMs: 1_500 }).acquire({
          timeoutMs: 8_000,
        });
        const settled = waiter.then(
          (lease) => lease,
          () => null,
        );
        await at(300); // subscribed by now: from here on W's messages take 1.35 s
        proxy.delay = ({ toClient, pubsub }) => (toClient && pubsub ? 1_350 : 0);
        await at(350);
        await holder.release(); // hand-off to W at ~350, expiring at ~1,350; W hears of it at ~1,700
        // W wakes by its wait bound (its own 1 s TTL) at ~1,000 to check on the lock: that attempt
        // is held up until ~1,600, so it reaches Redis after the next caller took the lock.
        await at(900);
        proxy.delay = ({ toClient, pubsub }) => (toClient ? (pubsub ? 1_350 : 0) : 600);
        await at(1_400);
        // The next caller takes the lock once W's handed-off lease expired; W's attempt at ~1,600
        // then finds it taken and W is queued again; then W hears the old hand-off.
        const next = await new FairMutex(redis.a.client, lockName, { ttlMs: 10_000 }).acquire({
          timeoutMs: 2_000,
        });
        const lease = await Promise.race([settled, at(2_300).then(() => undefined)]);
        if (lease) {
          const owner = (await new FairMutex(redis.a.client, lockName).inspect()).ownerToken;
          assert.ok(
            !lease.isHeld || owner === lease.token,
            `W believes it holds the lock; Redis says ${owner}`,
          );
          await lease.release();
        }
        await next.release();
        proxy.delay = 0;
        const late = await settled;
        await late?.release();
      } finally {
        await w.close();
        await proxy.close();
      }
    });
  });
}

describe('regressions (no Redis involved)', () => {
  // The library-wide safety net of the same bug: whatever primitive builds a lease, one whose
  // validity is already over is lost from the start, its signal aborted before anyone can look.
  test('a lease built after its validity ran out is born lost', async () => {
    let released = 0;
    const backend: LockBackend = {
      extend: async () => true,
      release: async () => {
        released += 1;
        return true;
      },
      isHeldBy: async () => true,
      disconnected: () => undefined,
    };
    const now = performance.now();
    const plan = {
      name: 'late',
      token: 't',
      mode: 'wait' as const,
      deadline: Number.POSITIVE_INFINITY,
      options: { ...defaultLockOptions, ttlMs: TTL, clock: { now: () => now }, signal: undefined },
    };
    const lease = Lease.grant(
      plan,
      { grant: { fencingToken: 1, sentAt: now - 2 * TTL }, attempts: 1 },
      backend,
    );
    assert.equal(lease.isHeld, false);
    assert.equal(lease.signal.aborted, true);
    assert.equal((lease.signal.reason as { code?: string }).code, 'LOCK_LOST');
    await assert.rejects(lease.extend(), { code: 'LOCK_LOST' });
    assert.equal(await lease.release(), false);
    // Issue 7, item 2: a lease lost by its own clock may still own its token in Redis, so release()
    // still sends the compare-and-delete (it reports false all the same).
    assert.equal(released, 1);
  });
});
