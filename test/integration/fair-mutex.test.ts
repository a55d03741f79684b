/**
 * FairMutex on a real Redis, for every client kind: strict FIFO across processes, waiters that give
 * up or die leave the queue within their documented bound, a dead holder's lock is handed on after
 * its TTL, hand-offs are direct (one message, no extra round trip), and waiting does not poll.
 * Timing bounds are generous on purpose (a loaded 2-core machine): they check "bounded", not "fast".
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FairMutex, type Lease, LockTimeoutError } from '../../src/index.js';
import { scripts } from '../../src/protocol/scripts.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { type Child, spawnChild } from '../fixtures/child.js';
import { type ClientKind, clientKinds, type TestClient } from '../fixtures/clients.js';
import { commandCalls } from '../fixtures/commandstats.js';
import { awaitedLater, nameMaker, sleep, until } from '../fixtures/helpers.js';

const spawnFairChild = (kind: ClientKind, url: string, name: string, id: string, options: object) =>
  spawnChild('fair-mutex-child.ts', kind, url, name, id, options);

const freshName = nameMaker('fair-test');

for (const kind of clientKinds) {
  describe(`FairMutex (${kind.name})`, () => {
    let server: RedisServer;
    let redis: TestClient;
    const extraClients: TestClient[] = [];
    const children: Child[] = [];

    before(async () => {
      server = await startRedis();
      redis = await kind.create(server.url);
    });

    after(async () => {
      for (const c of children) c.process.kill('SIGKILL');
      for (const c of extraClients) await c.close();
      await redis.close();
      await server.stop();
    });

    test('serves waiters in exact arrival order across processes, each a direct hand-off', async () => {
      const name = freshName();
      const mutex = new FairMutex(redis.client, name);
      const holder = await mutex.acquire();
      const count = 5;
      // Processes start in parallel (start-up is most of this test's time), connected and idle.
      const started = Array.from({ length: count }, (_, i) =>
        spawnFairChild(kind, server.url, name, String(i), { holdMs: 20, waitForGo: true }),
      );
      children.push(...started);
      await Promise.all(started.map((child) => child.said('started')));
      for (const [i, child] of started.entries()) {
        // The next process asks only once this one is queued, so arrival order is known.
        child.process.send('go');
        await until(async () => (await mutex.inspect()).queueLength === i + 1, `child ${i} is queued`);
      }
      await holder.release();
      const codes = await Promise.all(started.map((c) => c.exited));
      assert.deepEqual(codes, Array(count).fill(0));
      const order = (await redis.command('LRANGE', `${name}:order`, '0', '-1')) as string[];
      assert.deepEqual(
        order.map((entry) => entry.split(':')[0]),
        ['0', '1', '2', '3', '4'],
      );
      // Each hand-off took a new, higher fencing token, and the last one is the counter's value.
      const fences = [holder.fencingToken, ...order.map((entry) => Number(entry.split(':')[1]))];
      for (let i = 1; i < fences.length; i += 1) {
        assert.ok((fences[i] as number) > (fences[i - 1] as number), `tokens ${fences.join(', ')}`);
      }
      assert.equal((await mutex.inspect()).lastFencingToken, fences[count]);
      const state = await mutex.inspect();
      assert.equal(state.locked, false);
      assert.equal(state.queueLength, 0);
    });

    test('a hand-off costs no round trip beyond the enqueue and the release', async () => {
      const name = freshName();
      const mutex = new FairMutex(redis.client, name);
      // Keep the grant channel subscribed (it lingers after a waiter leaves), as on a busy lock.
      const first = await mutex.acquire();
      const warm = mutex.acquire();
      await until(async () => (await mutex.inspect()).queueLength === 1, 'the warm-up waiter is queued');
      await first.release();
      await (await warm).release();

      const holder = await mutex.acquire();
      await server.command('CONFIG', 'RESETSTAT');
      const waiting = mutex.acquire();
      // Watch the queue with LLEN (not a script), so every EVALSHA counted is the lock's own.
      await until(async () => (await redis.command('LLEN', mutex.keys.queue)) === 1, 'the waiter is queued');
      await holder.release();
      const lease = await waiting;
      const info = await server.command('INFO', 'commandstats');
      const scriptCalls = (name: string) =>
        Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
      // One enqueue by the waiter, one release by the holder; the waiter learned of the hand-off
      // from the message alone.
      assert.equal(scriptCalls('evalsha') + scriptCalls('eval'), 2);
      assert.ok(lease.fencingToken > holder.fencingToken);
      await lease.release();
    });

    test('an aborted waiter leaves the queue and never receives the lock', async () => {
      const name = freshName();
      const mutex = new FairMutex(redis.client, name);
      const holder = await mutex.acquire();
      const controller = new AbortController();
      const aborted = mutex.acquire({ signal: controller.signal });
      await until(async () => (await mutex.inspect()).queueLength === 1, 'the first waiter is queued');
      const next = mutex.acquire();
      await until(async () => (await mutex.inspect()).queueLength === 2, 'the second waiter is queued');
      controller.abort(new Error('changed my mind'));
      await assert.rejects(aborted, /changed my mind/);
      assert.equal((await mutex.inspect()).queueLength, 1);
      await holder.release();
      const lease = await next;
      // The aborted waiter was skipped: the lock went straight to the next one.
      assert.ok(lease.fencingToken > holder.fencingToken);
      assert.equal((await mutex.inspect()).ownerToken, lease.token);
      await lease.release();
    });

    /**
     * One round of a hand-off raced against its waiter's abort, `abortAfterMs` after the release is
     * sent; with `holdUpMs`, the server holds every write up that long first (CLIENT PAUSE WRITE: the
     * release, and the waiter's give-back behind it), as a loaded machine can. Whichever way the race
     * goes, nobody holds the lock afterwards and the queue is empty.
     */
    const raceHandOffAndAbort = async (
      mutex: FairMutex,
      round: string,
      abortAfterMs: number,
      holdUpMs = 0,
    ) => {
      const holder = await mutex.acquire();
      const controller = new AbortController();
      // Handled at once: the waiter may give up (after its give-back's 50 ms grace) before the release
      // is answered, and a rejection with no handler by then fails the test as unhandled.
      const waiter = awaitedLater(mutex.acquire({ signal: controller.signal }));
      await until(async () => (await mutex.inspect()).queueLength === 1, 'the waiter is queued');
      if (holdUpMs > 0) await server.pauseClients(holdUpMs, 'WRITE');
      const releasing = holder.release();
      setTimeout(() => controller.abort(new Error('late abort')), abortAfterMs);
      await releasing;
      const outcome = await waiter.then(
        async (lease) => {
          await lease.release();
          return 'acquired';
        },
        () => 'aborted',
      );
      const state = await mutex.inspect();
      assert.equal(state.locked, false, `${round} (${outcome}): the lock is still held`);
      assert.equal(state.queueLength, 0, `${round} (${outcome}): the queue is not empty`);
      return outcome;
    };

    test('a waiter aborted while the lock is being handed to it hands it on', async () => {
      const mutex = new FairMutex(redis.client, freshName());
      // The abort lands at varying points of the hand-off.
      for (let round = 0; round < 20; round += 1)
        await raceHandOffAndAbort(mutex, `round ${round}`, round % 3);
    });

    test('a waiter aborted while the release handing it the lock is held up gives up and hands it on', async () => {
      const mutex = new FairMutex(redis.client, freshName());
      // The waiter gives up within its give-back's grace (50 ms), long before the release is answered:
      // the ordering a loaded machine gave the test above once, deterministic here.
      assert.equal(await raceHandOffAndAbort(mutex, 'held up', 0, 500), 'aborted');
    });

    test('a timed-out waiter leaves the queue and never receives the lock', async () => {
      const name = freshName();
      const mutex = new FairMutex(redis.client, name);
      const holder = await mutex.acquire();
      await assert.rejects(mutex.acquire({ timeoutMs: 200 }), LockTimeoutError);
      assert.equal((await mutex.inspect()).queueLength, 0);
      await holder.release();
      const state = await mutex.inspect();
      assert.equal(state.locked, false);
      assert.equal(state.lastFencingToken, holder.fencingToken);
    });

    test('a crashed waiter is skipped once its entry expired (waiterTtlMs)', async () => {
      const name = freshName();
      const mutex = new FairMutex(redis.client, name);
      const holder = await mutex.acquire();
      const child = spawnFairChild(kind, server.url, name, 'crashed', {
        waiterTtlMs: 600,
        timeoutMs: 60_000,
      });
      children.push(child);
      // Its start-up (seconds on a busy machine) is not part of the wait for it to queue.
      await child.said('started');
      await until(async () => (await mutex.inspect()).queueLength === 1, 'the child is queued');
      child.process.kill('SIGKILL');
      await child.exited;
      const next = mutex.acquire({ timeoutMs: 20_000 });
      await until(async () => (await mutex.inspect()).queueLength === 2, 'the second waiter is queued');
      await sleep(1_200); // well past the dead entry's 600 ms deadline
      const releasedAt = performance.now();
      await holder.release();
      const lease = await next;
      const waitedMs = performance.now() - releasedAt;
      // Handed over directly by the release: no TTL had to run out.
      assert.ok(lease.fencingToken > holder.fencingToken);
      assert.ok(waitedMs < 2_000, `waited ${waitedMs} ms after the release`);
      assert.equal((await redis.command('LLEN', `${name}:order`)) as number, 0);
      await lease.release();
    });

    test('a waiter that crashed just before its turn delays the queue by at most its ttlMs', async () => {
      const name = freshName();
      const mutex = new FairMutex(redis.client, name);
      const holder = await mutex.acquire();
      const crashedTtlMs = 1_500;
      const child = spawnFairChild(kind, server.url, name, 'crashed', {
        ttlMs: crashedTtlMs,
        timeoutMs: 60_000,
      });
      children.push(child);
      // Its start-up (seconds on a busy machine) is not part of the wait for it to queue.
      await child.said('started');
      await until(async () => (await mutex.inspect()).queueLength === 1, 'the child is queued');
      child.process.kill('SIGKILL');
      await child.exited;
      const next = mutex.acquire({ timeoutMs: 20_000 });
      await until(async () => (await mutex.inspect()).queueLength === 2, 'the second waiter is queued');
      const releasedAt = performance.now();
      await holder.release();
      // The dead waiter's entry had not expired: the lock was handed to it...
      const handedToken = (await mutex.inspect()).lastFencingToken;
      assert.ok(handedToken > holder.fencingToken);
      const lease = await next;
      const waitedMs = performance.now() - releasedAt;
      // ...and came back after its TTL (plus jitter and scheduling slack), not later.
      assert.ok(lease.fencingToken > handedToken);
      assert.ok(waitedMs >= crashedTtlMs - 100, `waited only ${waitedMs} ms`);
      assert.ok(waitedMs < crashedTtlMs + 3_000, `waited ${waitedMs} ms, bound ${crashedTtlMs} ms`);
      await lease.release();
    });

    test("a crashed holder's lock is handed on after its TTL", async () => {
      const name = freshName();
      const mutex = new FairMutex(redis.client, name);
      const ttlMs = 1_000;
      const child = spawnFairChild(kind, server.url, name, 'holder', { ttlMs, hang: true });
      children.push(child);
      await child.said('acquired');
      const waiting = mutex.acquire({ timeoutMs: 20_000 });
      await until(async () => (await mutex.inspect()).queueLength === 1, 'the waiter is queued');
      const killedAt = performance.now();
      child.process.kill('SIGKILL');
      await child.exited;
      const lease = await waiting;
      const waitedMs = performance.now() - killedAt;
      assert.ok(waitedMs < ttlMs + 3_000, `waited ${waitedMs} ms for a ${ttlMs} ms TTL`);
      assert.equal((await mutex.inspect()).ownerToken, lease.token);
      await lease.release();
    });

    test("a handed-off lease's validity ends no later than the lock's TTL in Redis", async () => {
      const name = freshName();
      const mutex = new FairMutex(redis.client, name, { ttlMs: 5_000, autoExtend: false });
      for (let round = 0; round < 5; round += 1) {
        const holder = await mutex.acquire();
        const waiting = mutex.acquire();
        await until(async () => (await mutex.inspect()).queueLength === 1, 'the waiter is queued');
        await sleep(300); // a long wait must not stretch the lease: its TTL starts at the hand-off
        await holder.release();
        const lease = await waiting;
        const state = await mutex.inspect();
        const checkedAt = performance.now();
        assert.equal(state.ownerToken, lease.token);
        // Validity is local and conservative: it must run out before the key expires in Redis.
        assert.ok(
          lease.validUntil - checkedAt <= (state.remainingTtlMs as number),
          `validity ${lease.validUntil - checkedAt} ms > PTTL ${state.remainingTtlMs} ms`,
        );
        assert.ok(lease.remainingMs > 4_000, `only ${lease.remainingMs} ms of validity left`);
        await lease.release();
      }
    });

    test('waiting does not poll: 10 queued waiters send no commands while the lock is held', async () => {
      const name = freshName();
      const mutex = new FairMutex(redis.client, name);
      const holder = await mutex.acquire();
      const waiters: Promise<Lease>[] = [];
      for (let i = 0; i < 10; i += 1) {
        const client = await kind.create(server.url);
        extraClients.push(client);
        waiters.push(new FairMutex(client.client, name).acquire({ timeoutMs: 30_000 }));
      }
      await until(async () => (await mutex.inspect()).queueLength === 10, 'all 10 waiters are queued');
      await sleep(200);
      await server.command('CONFIG', 'RESETSTAT');
      await sleep(2_000);
      const calls = Object.values(await commandCalls(server)).reduce((sum, count) => sum + count, 0);
      assert.ok(calls <= 5, `${calls} commands in 2 s of waiting`);
      await holder.release();
      // Each waiter releases as soon as it is served: their order in the queue is the order their
      // first attempts reached Redis, not the order of this array (ten clients, sent at once), so
      // awaiting them in array order could wait on one queued behind a holder not yet released.
      await Promise.all(waiters.map(async (waiter) => (await waiter).release()));
    });

    test('the scripts are the ones Redis loads, and the hand-off message names the waiter', async () => {
      for (const script of [scripts.handOffAcquire, scripts.handOffRelease, scripts.handOffInspect]) {
        assert.equal(await redis.command('SCRIPT', 'LOAD', script.source), script.sha1);
      }
      const name = freshName();
      const mutex = new FairMutex(redis.client, name);
      const keys = [mutex.keys.lock, mutex.keys.fence, mutex.keys.queue, mutex.keys.waiting];
      const evalsha = (sha: string, args: string[]) => {
        return redis.command('EVALSHA', sha, String(keys.length), ...keys, ...args) as Promise<unknown>;
      };
      const a = await evalsha(scripts.handOffAcquire.sha1, ['token-a', '10000', '5000', 'chan-a']);
      assert.equal((a as number[])[0], 1);
      const b = await evalsha(scripts.handOffAcquire.sha1, ['token-b', '7000', '5000', 'chan-b']);
      assert.equal((b as number[])[0], 0);
      assert.equal(await evalsha(scripts.handOffRelease.sha1, ['token-a']), 1);
      assert.equal((await mutex.inspect()).ownerToken, 'token-b');
      const pttl = (await redis.command('PTTL', mutex.keys.lock)) as number;
      assert.ok(pttl > 6_000 && pttl <= 7_000, `the hand-off used the waiter's TTL (PTTL ${pttl})`);
      assert.equal(await evalsha(scripts.handOffRelease.sha1, ['token-b']), 1);
      assert.equal((await mutex.inspect()).locked, false);
    });
  });
}
