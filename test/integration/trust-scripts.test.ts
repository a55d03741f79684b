/**
 * Regressions for the script side of the Trust issue (#7), on real Redis, for every client kind:
 * fencing across a restart without persistence (item 7), exact tokens in hand-off messages
 * (item 16), fencedWrite accepting the holder's own token again (item 17), wait bounds that follow
 * the current holder across hand-offs (item 10), releases that succeed for ACL users without channel
 * permissions (item 11) and a release re-sent after a lost reply (item 13).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis as IORedis } from 'ioredis';
import { FairMutex, fencedWrite, Mutex } from '../../src/index.js';
import { lockKeys } from '../../src/protocol/keys.js';
import { scripts } from '../../src/protocol/scripts.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { FencedResource } from '../faults/toolkit/resource.js';
import { clientKinds, type TestClient } from '../fixtures/clients.js';
import { until } from '../fixtures/helpers.js';

let lockNo = 0;
const freshName = () => `trust-${process.pid}-${++lockNo}`;

/** Runs one of our scripts by its source (EVAL), as a test client; returns the raw reply. */
function evalScript(
  client: TestClient,
  script: keyof typeof scripts,
  keys: string[],
  args: string[],
): Promise<unknown> {
  const { source } = scripts[script];
  return client.command('EVAL', source, String(keys.length), ...keys, ...args);
}

const fairKeys = (name: string) => {
  const keys = lockKeys('locksmith', name);
  return [keys.lock, keys.fence, keys.queue, keys.waiting];
};

/**
 * Queues a FairMutex waiter that nobody listens for: a waiter that crashed right after queueing.
 * Its entry lives `lifetimeMs`; the lock is handed to it with `ttlMs` when its turn comes.
 */
async function queuePhantomWaiter(client: TestClient, name: string, ttlMs: number, lifetimeMs = 60_000) {
  const token = `phantom-${++lockNo}`;
  const channel = `${lockKeys('locksmith', name).grantedChannelPrefix}nobody`;
  const reply = (await evalScript(client, 'handOffAcquire', fairKeys(name), [
    token,
    String(ttlMs),
    String(lifetimeMs),
    channel,
  ])) as number[];
  assert.equal(Number(reply[0]), 0, 'the phantom is queued, not granted');
  return token;
}

for (const kind of clientKinds) {
  describe(`Trust: scripts and fencing (${kind.name})`, () => {
    let server: RedisServer;
    let redis: TestClient;

    before(async () => {
      server = await startRedis();
      redis = await kind.create(server.url);
    });

    after(async () => {
      await redis.close();
      await server.stop();
    });

    describe('item 7: fencing survives a restart without persistence', () => {
      test('Mutex and FairMutex tokens after a restart are above every token before it', async () => {
        const mutex = new Mutex(redis.client, freshName());
        const fair = new FairMutex(redis.client, freshName());
        const before: number[] = [];
        for (let i = 0; i < 3; i += 1) {
          for (const lock of [mutex, fair]) {
            const lease = await lock.acquire();
            before.push(lease.fencingToken);
            await lease.release();
          }
        }
        await server.kill();
        await server.restart();
        assert.equal(await redis.command('EXISTS', mutex.keys.fence), 0, 'the restart lost the counters');
        for (const lock of [mutex, fair]) {
          const lease = await lock.acquire({ timeoutMs: 10_000 });
          assert.ok(
            lease.fencingToken > Math.max(...before),
            `token ${lease.fencingToken} after the restart, ${Math.max(...before)} before it`,
          );
          await lease.release();
        }
      });

      test('fencedWrite refuses an old holder’s late write after a restart (README example)', async () => {
        const mutex = new Mutex(redis.client, freshName());
        const resource = `resource:{${mutex.name}}`;
        // Several holders before the restart: the old holder's token is well above 1.
        let old = await mutex.acquire({ ttlMs: 2_000 });
        for (let i = 0; i < 4; i += 1) {
          await old.release();
          old = await mutex.acquire({ ttlMs: 2_000 });
        }
        assert.equal((await fencedWrite(redis.client, resource, old.fencingToken, 'old-1')).written, true);
        // The old holder pauses; Redis restarts without its data (the lock, counter and resource).
        await server.kill();
        await server.restart();
        const next = await mutex.acquire({ timeoutMs: 10_000 });
        assert.equal((await fencedWrite(redis.client, resource, next.fencingToken, 'new')).written, true);
        const late = await fencedWrite(redis.client, resource, old.fencingToken, 'old-2 (stale)');
        assert.equal(late.written, false, 'the stale write is refused');
        assert.equal(late.highestToken, next.fencingToken);
        assert.equal(await redis.command('GET', resource), 'new');
        await next.release();
      });

      test('a token is max(counter + 1, server time in µs)', async () => {
        const mutex = new Mutex(redis.client, freshName());
        const [seconds, micros] = (await redis.command('TIME')) as string[];
        const serverMicros = Number(seconds) * 1_000_000 + Number(micros);
        const first = await mutex.acquire();
        assert.ok(first.fencingToken >= serverMicros, `${first.fencingToken} < ${serverMicros}`);
        assert.ok(Number.isSafeInteger(first.fencingToken));
        await first.release();
        // A counter ahead of the clock (tokens handed out in the same microsecond) still grows by one.
        // It is raised as an operator would, by the raise-fence script: the release left at the
        // lock key carries the counter too (holder.lua), and the script raises both.
        const ahead = serverMicros + 3_600_000_000;
        await evalScript(redis, 'raiseFence', [mutex.keys.fence, mutex.keys.lock], [String(ahead)]);
        const second = await mutex.acquire();
        assert.equal(second.fencingToken, ahead + 1);
        assert.equal(await redis.command('GET', mutex.keys.fence), String(ahead + 1));
        await second.release();
      });
    });

    describe('item 16: hand-off messages carry exact tokens', () => {
      for (const start of [9_007_199_254_740_000, 0]) {
        test(`the hand-off message names the token Redis holds (counter at ${start || 'server time'})`, async () => {
          const name = freshName();
          const mutex = new FairMutex(redis.client, name);
          if (start) await redis.command('SET', mutex.keys.fence, String(start));
          const listener = new IORedis(server.url);
          const channel = `${mutex.keys.grantedChannelPrefix}test-listener`;
          const heard = new Promise<string>((resolve) =>
            listener.on('message', (_, message) => resolve(message)),
          );
          await listener.subscribe(channel);
          try {
            const holder = await mutex.acquire();
            const reply = (await evalScript(redis, 'handOffAcquire', fairKeys(name), [
              'w',
              '5000',
              '5000',
              channel,
            ])) as number[];
            assert.equal(Number(reply[0]), 0);
            await holder.release();
            const [token, fence] = (await heard).split(':');
            assert.equal(token, 'w');
            assert.equal(fence, await redis.command('GET', mutex.keys.fence), 'the exact decimal digits');
            assert.ok(Number(fence) > holder.fencingToken);
            await evalScript(redis, 'handOffRelease', fairKeys(name), ['w']);
          } finally {
            listener.disconnect();
          }
        });
      }

      for (const start of [9_007_199_254_740_000, 0]) {
        test(`the waiter's token is what Redis holds (counter at ${start || 'server time'})`, async () => {
          const mutex = new FairMutex(redis.client, freshName());
          if (start) await redis.command('SET', mutex.keys.fence, String(start));
          const holder = await mutex.acquire();
          const waiting = mutex.acquire({ timeoutMs: 10_000 });
          await until(async () => (await mutex.inspect()).queueLength === 1, 'the waiter is queued');
          await holder.release();
          const lease = await waiting;
          const held = Number(await redis.command('GET', mutex.keys.fence));
          assert.ok(held > 1e14, `counter ${held}`);
          assert.equal(lease.fencingToken, held);
          assert.ok(lease.fencingToken > holder.fencingToken);
          await lease.release();
        });
      }
    });

    describe('item 17: fencedWrite accepts the holder’s own token again', () => {
      test('equal token written, lower refused', async () => {
        const key = `resource:{${freshName()}}`;
        assert.deepEqual(await fencedWrite(redis.client, key, 7, 'a'), { written: true, highestToken: 7 });
        assert.deepEqual(await fencedWrite(redis.client, key, 7, 'b'), { written: true, highestToken: 7 });
        assert.equal(await redis.command('GET', key), 'b');
        assert.deepEqual(await fencedWrite(redis.client, key, 6, 'c'), { written: false, highestToken: 7 });
        assert.equal(await redis.command('GET', key), 'b');
        assert.deepEqual(await fencedWrite(redis.client, key, 8, 'd'), { written: true, highestToken: 8 });
      });

      test("the fault suite's fenced resource accepts and refuses exactly what fencedWrite does", async () => {
        const key = `resource:{${freshName()}}`;
        const model = new FencedResource(true);
        for (const [i, fence] of [3, 3, 5, 4, 5, 9, 1, 9, 10].entries()) {
          const shipped = await fencedWrite(redis.client, key, fence, String(i));
          const modelled = model.handle({ op: 'write', lock: 'l', fence, w: 0, value: i, readVersion: 0 });
          assert.equal(modelled.ok, shipped.written, `token ${fence} after ${shipped.highestToken}`);
        }
      });
    });

    describe('item 10: a waiter wakes by the expiry of whoever may hold the lock next', () => {
      for (const [Kind, barging] of [
        [FairMutex, '0'],
        [Mutex, '1'],
      ] as const) {
        test(`${Kind.name}: the wait bound is the holder's time left, or the shortest TTL of the waiters`, async () => {
          const name = freshName();
          const holder = await new Kind(redis.client, name, { ttlMs: 30_000 }).acquire();
          const ask = async () =>
            (await evalScript(redis, 'handOffAcquire', fairKeys(name), [
              'me',
              '30000',
              '60000',
              'ch',
              '0',
              barging,
            ])) as [number, number, number];
          const alone = await ask();
          assert.ok(
            Number(alone[1]) > 20_000,
            `alone behind the holder: its time left (bound ${alone[1]} ms)`,
          );
          await evalScript(redis, 'handOffRelease', fairKeys(name), ['me', barging]);
          await queuePhantomWaiter(redis, name, 1_500);
          const behind = await ask();
          assert.equal(Number(behind[0]), 0);
          assert.ok(
            Number(behind[1]) <= 1_500,
            `wait bound ${behind[1]} ms, the waiter ahead has a 1500 ms TTL`,
          );
          await evalScript(redis, 'handOffRelease', fairKeys(name), ['me', barging]);
          await holder.release();
        });
      }

      test('FairMutex: a waiter behind one that crashed before its turn gets the lock within its TTL', async () => {
        const name = freshName();
        const mutex = new FairMutex(redis.client, name, { ttlMs: 30_000 });
        const holder = await mutex.acquire();
        const crashedTtlMs = 1_500;
        await queuePhantomWaiter(redis, name, crashedTtlMs);
        const next = mutex.acquire({ timeoutMs: 20_000 });
        await until(async () => (await mutex.inspect()).queueLength === 2, 'the second waiter is queued');
        const releasedAt = performance.now();
        await holder.release();
        assert.ok((await mutex.inspect()).ownerToken?.startsWith('phantom-'), 'handed to the crashed waiter');
        const lease = await next;
        const waitedMs = performance.now() - releasedAt;
        assert.ok(waitedMs < crashedTtlMs + 3_000, `waited ${waitedMs} ms, bound ${crashedTtlMs} ms`);
        await lease.release();
      });
    });

    describe('item 11: an ACL user without channel permissions', () => {
      let acl: TestClient;
      before(async () => {
        await redis.command('ACL', 'SETUSER', 'locker', 'on', '>pw', '~*', 'resetchannels', '+@all');
        acl = await kind.create(`redis://locker:pw@127.0.0.1:${server.port}`);
      });
      after(async () => {
        await acl.close();
      });

      test('Mutex release with a waiter queued resolves true and hands the lock on', async () => {
        // PUBLISH refused: nothing tells whether the waiter is there, so it is handed the lock
        // (handOffAfterMs 0: every release hands over).
        const name = freshName();
        const mutex = new Mutex(acl.client, name, { handOffAfterMs: 0 });
        const lease = await mutex.acquire();
        const phantom = await queuePhantomWaiter(redis, name, 5_000);
        assert.equal(await lease.release(), true);
        assert.equal((await mutex.inspect()).ownerToken, phantom);
        await evalScript(redis, 'handOffRelease', fairKeys(name), [phantom]);
      });

      test('Mutex release with a young waiter queued resolves true and frees the lock for it', async () => {
        // Its wake is refused too: the waiter finds the lock free when it next asks.
        const name = freshName();
        const mutex = new Mutex(acl.client, name, { handOffAfterMs: 60_000 });
        const lease = await mutex.acquire();
        const phantom = await queuePhantomWaiter(redis, name, 5_000);
        assert.equal(await lease.release(), true);
        assert.equal((await mutex.inspect()).locked, false);
        await evalScript(redis, 'handOffRelease', fairKeys(name), [phantom]);
      });

      test('FairMutex release that hands off resolves true and hands the lock on', async () => {
        const name = freshName();
        const mutex = new FairMutex(acl.client, name);
        const lease = await mutex.acquire();
        const phantom = await queuePhantomWaiter(redis, name, 5_000);
        assert.equal(await lease.release(), true);
        assert.equal((await mutex.inspect()).ownerToken, phantom);
        await evalScript(redis, 'handOffRelease', fairKeys(name), [phantom]);
      });

      test('FairMutex hand-off by an acquire attempt (holder expired) does not fail', async () => {
        const name = freshName();
        const mutex = new FairMutex(acl.client, name);
        const lease = await mutex.acquire({ ttlMs: 300, autoExtend: false });
        const phantom = await queuePhantomWaiter(redis, name, 5_000);
        await until(async () => !(await mutex.isLocked()), 'the holder expired');
        assert.equal(await mutex.tryAcquire(), null);
        assert.equal((await mutex.inspect()).ownerToken, phantom);
        assert.equal(await lease.release(), false);
        await evalScript(redis, 'handOffRelease', fairKeys(name), [phantom]);
      });
    });

    describe('item 13: a release re-sent after a lost reply', () => {
      test('Mutex: releasing the same token twice reports released both times; a stranger, not', async () => {
        const mutex = new Mutex(redis.client, freshName());
        const lease = await mutex.acquire();
        const keys = fairKeys(mutex.name);
        assert.equal(Number(await evalScript(redis, 'handOffRelease', keys, [lease.token, '1'])), 1);
        assert.equal(Number(await evalScript(redis, 'handOffRelease', keys, [lease.token, '1'])), 1);
        assert.equal(Number(await evalScript(redis, 'handOffRelease', keys, ['never-held', '1'])), 0);
        assert.equal(await mutex.releaseToken(lease.token), true, 'through the API too');
        const pttl = Number(await redis.command('PTTL', mutex.keys.lock));
        assert.ok(pttl > 0 && pttl <= 60_000, `the release left at the lock key expires (PTTL ${pttl})`);
      });

      test('FairMutex: releasing the same token twice reports released both times; a stranger, not', async () => {
        const mutex = new FairMutex(redis.client, freshName());
        const lease = await mutex.acquire();
        const keys = fairKeys(mutex.name);
        assert.equal(Number(await evalScript(redis, 'handOffRelease', keys, [lease.token])), 1);
        assert.equal(Number(await evalScript(redis, 'handOffRelease', keys, [lease.token])), 1);
        assert.equal(Number(await evalScript(redis, 'handOffRelease', keys, ['never-held'])), 0);
        assert.equal(await mutex.releaseToken(lease.token), true, 'through the API too');
      });
    });
  });
}
