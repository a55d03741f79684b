/**
 * Leases against real Redis: what a lease claims must never outlast what Redis grants, and a lease
 * that lost its lock locally must not leave its token behind in Redis (issue 7, items 1 and 2).
 * Run for every client library.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  type Lease,
  type LockEvent,
  LockLostError,
  Mutex,
  RedisUnavailableError,
  subscribeLockEvents,
} from '../../src/index.js';
import { clientKinds, glideKind } from '../fixtures/clients.js';
import { awaitedLater, nameMaker, redisForSuite, sleep, until } from '../fixtures/helpers.js';
import { lockKeyIsFree, ownerTokenOf } from '../fixtures/lock-value.js';

/**
 * Monotonic time the test can move forward at once ("the reply to the request just sent arrives
 * two TTLs later") without waiting for it.
 */
class JumpClock {
  offset = 0;
  now(): number {
    return performance.now() + this.offset;
  }
}

/** Redis rounds PTTL to whole milliseconds; a lease may differ from it by that much. */
const ROUNDING_MS = 2;

const OWNER_AND_PTTL = "return {redis.call('get', KEYS[1]), redis.call('pttl', KEYS[1])}";

/** Lets promise chains run without letting any I/O (a reply) in. */
async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 10; i += 1) await Promise.resolve();
}

function collectEvents(): { events: LockEvent[]; stop(): void } {
  const events: LockEvent[] = [];
  const stop = subscribeLockEvents((event) => events.push(event));
  return { events, stop };
}

for (const kind of clientKinds) {
  describe(`trust: leases (${kind.name})`, () => {
    const redis = redisForSuite(kind, { clients: 1, unhandledRejections: 'end' });
    const name = nameMaker(`trust-lease-${kind.name}`);

    /**
     * The lease's claim, checked against Redis: the lease's remaining validity read at t0, then the
     * key's owner and PTTL read atomically at some server instant in [t0, t1]. The key then expires
     * no earlier than t0 + PTTL and no later than t1 + PTTL, so a sound check allows t1 − t0 of slack
     * (plus Redis' millisecond rounding); the bugs this guards against are off by seconds.
     */
    async function assertWithinKeyExpiry(lease: Lease, key: string, label: string): Promise<void> {
      const t0 = performance.now();
      const claimed = lease.remainingMs;
      const [owner, pttl] = (await redis.a.command('EVAL', OWNER_AND_PTTL, '1', key)) as [
        string | null,
        number,
      ];
      const slack = performance.now() - t0 + ROUNDING_MS;
      if (claimed === 0) return;
      if (ownerTokenOf(owner) !== lease.token) {
        assert.ok(claimed <= slack, `${label}: the lease claims ${claimed.toFixed(1)} ms, the key is gone`);
        return;
      }
      assert.ok(
        claimed <= Number(pttl) + slack,
        `${label}: the lease claims ${claimed.toFixed(1)} ms, the key lives ${pttl} ms`,
      );
    }

    // Item 1: a shorter extension used to keep the old, longer validity (Math.max).
    test('extend() with a shorter TTL shortens validity; the lock is lost when it runs out', async () => {
      const mutex = new Mutex(redis.a.client, name(), { ttlMs: 10_000, autoExtend: false });
      const lease = await mutex.acquire();
      await lease.extend(500);
      await assertWithinKeyExpiry(lease, mutex.keys.lock, 'after extend(500)');
      assert.ok(lease.remainingMs <= 500, `remaining ${lease.remainingMs} ms after extend(500)`);
      const started = performance.now();
      if (!lease.signal.aborted) await once(lease.signal, 'abort');
      assert.ok(performance.now() - started < 2_000, 'aborted when the 500 ms ran out, not after 10 s');
      assert.ok(lease.signal.reason instanceof LockLostError);
      assert.equal(lease.isHeld, false);
      // Wait for Redis' own expiry (the lease gives up a little before it), then another owner.
      const other = await new Mutex(redis.a.client, mutex.name, { autoExtend: false }).acquire({
        timeoutMs: 2_000,
      });
      assert.ok(other.fencingToken > lease.fencingToken);
      await other.release();
    });

    // Item 1, as a property: whatever the sequence, the lease never claims more than Redis grants.
    test('property: the lease deadline is never later than the key expiry in Redis', async () => {
      const step = fc.oneof(
        fc.record({ op: fc.constant('extend' as const), ttlMs: fc.integer({ min: 20, max: 3_000 }) }),
        fc.record({ op: fc.constant('jump' as const), ms: fc.integer({ min: 1, max: 400 }) }),
        fc.record({ op: fc.constant('sleep' as const), ms: fc.integer({ min: 1, max: 15 }) }),
        fc.record({ op: fc.constant('release' as const) }),
        fc.record({ op: fc.constant('acquire' as const), ttlMs: fc.integer({ min: 20, max: 3_000 }) }),
      );
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 20, max: 3_000 }),
          fc.array(step, { maxLength: 8 }),
          async (ttlMs, steps) => {
            const clock = new JumpClock();
            const mutex = new Mutex(redis.a.client, name(), {
              ttlMs,
              autoExtend: false,
              clock,
              timeoutMs: 5_000,
            });
            let lease: Lease | undefined = await mutex.acquire();
            try {
              await assertWithinKeyExpiry(lease, mutex.keys.lock, 'after acquire');
              for (const s of steps) {
                if (s.op === 'extend' && lease) {
                  await lease.extend(s.ttlMs).catch((error: unknown) => {
                    if (!(error instanceof LockLostError)) throw error;
                  });
                } else if (s.op === 'jump') {
                  clock.offset += s.ms;
                } else if (s.op === 'sleep') {
                  await sleep(s.ms);
                } else if (s.op === 'release' && lease) {
                  await lease.release();
                  // Item 2 as well: after release(), lost or not, our token is gone from Redis.
                  assert.notEqual((await mutex.inspect()).ownerToken, lease.token, 'token given back');
                  lease = undefined;
                } else if (s.op === 'acquire' && !lease) {
                  lease = await mutex.acquire({ ttlMs: s.ttlMs });
                }
                if (lease) await assertWithinKeyExpiry(lease, mutex.keys.lock, `after ${JSON.stringify(s)}`);
              }
            } finally {
              await lease?.release();
              await redis.a.command('DEL', mutex.keys.lock);
            }
          },
        ),
        { numRuns: 25 },
      );
    });

    // Item 2: release() of a lease its own clock declared lost sent nothing; the key stayed.
    test('release() of a lease lost by its clock still gives its token back, and reports false', async () => {
      const recorded = collectEvents();
      try {
        // driftFactor 0.5: the lease's validity (298 ms) ends 300 ms before the key does, the
        // drift window in which a lease lost by its own clock still owns its token in Redis.
        const mutex = new Mutex(redis.a.client, name(), { ttlMs: 600, autoExtend: false, driftFactor: 0.5 });
        const lease = await mutex.acquire();
        if (!lease.signal.aborted) await once(lease.signal, 'abort');
        assert.equal(
          ownerTokenOf(await redis.a.command('GET', mutex.keys.lock)),
          lease.token,
          'Redis still has the token',
        );
        // Reported at once (no round trip to wait for: the lease is lost), given back in the background.
        assert.equal(await lease.release(), false, 'reported as not held');
        assert.equal(await lease.release(), false, 'a second release sends nothing more');
        const giveBacksOf = () =>
          recorded.events.filter((e) => e.type === 'give-back' && e.lockName === mutex.name);
        await until(() => giveBacksOf().length > 0, 'the give-back is answered');
        assert.ok(await lockKeyIsFree(redis.a, mutex.keys.lock), 'the key is not left to its TTL');
        const giveBacks = giveBacksOf();
        assert.deepEqual(
          giveBacks.map((e) => e.type === 'give-back' && e.released),
          [true],
        );
      } finally {
        recorded.stop();
      }
    });

    // Item 2: an extension whose success reply arrives when validity is already over.
    test('an extension that succeeds after validity ran out gives the token back', async () => {
      const clock = new JumpClock();
      const mutex = new Mutex(redis.a.client, name(), { ttlMs: 1_000, autoExtend: false, clock });
      const lease = await mutex.acquire();
      const extending = lease.extend();
      await flushMicrotasks(); // the request is sent; its reply cannot arrive before I/O is polled
      clock.offset += 2_000; // the reply arrives two TTLs after the request was sent
      await assert.rejects(extending, LockLostError);
      assert.equal(lease.signal.aborted, true);
      assert.ok(await lockKeyIsFree(redis.a, mutex.keys.lock), 'given back at once');
      assert.equal(await lease.release(), false);
    });

    // Item 2: the lease is marked lost while its extension waits in a paused Redis, which then
    // applies it (the key had not expired yet): the token must not linger for a whole TTL.
    test('an extension that applies after the lease was marked lost gives the token back', async () => {
      // driftFactor 0.5: validity (298 ms) ends well before the key (600 ms), so a 420 ms pause
      // loses the lease locally while Redis still holds the token when the extension runs.
      const mutex = new Mutex(redis.a.client, name(), { ttlMs: 600, autoExtend: false, driftFactor: 0.5 });
      const lease = await mutex.acquire();
      await redis.server.pauseClients(420, 'ALL');
      const pauseEnds = performance.now() + 420;
      const extending = awaitedLater(lease.extend());
      await once(lease.signal, 'abort');
      // The reply comes after the loss, unless the client gave up on it first: Valkey GLIDE rejects
      // a command after its requestTimeout (250 ms by default), before this lease runs out, which
      // extend() reports as RedisUnavailableError with GLIDE's TimeoutError as its cause. Either
      // way the extension may have applied, and the token must not stay.
      await assert.rejects(
        extending,
        (error: unknown) =>
          error instanceof LockLostError ||
          (kind === glideKind &&
            error instanceof RedisUnavailableError &&
            error.cause instanceof Error &&
            error.cause.name === 'TimeoutError'),
      );
      // Read once the pause is over (the extension, applied then, would keep the key for another
      // 600 ms): a read sent during the pause waits behind it, and a loaded machine stretched that
      // past Valkey GLIDE's 250 ms request timeout.
      await sleep(Math.max(0, pauseEnds - performance.now()));
      assert.ok(await lockKeyIsFree(redis.a, mutex.keys.lock), 'given back at once');
    });
  });
}
