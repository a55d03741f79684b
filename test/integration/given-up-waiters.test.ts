/**
 * A caller that gives up after a hand-off it could not use (issue 34, item 2), on real Redis, for
 * every client kind and every hand-off kind (Mutex, FairMutex, ReentrantMutex, RedlockMutex).
 *
 * One acquire call keeps its token across attempts. When a hand-off reaches it too late (its process
 * stalled), it gives the lock back while its token still holds, and the next holder records that
 * token as the one that handed the lock over (`prev`). The call then queues again with the same
 * token and gives up (timeout, abort): its give-back must take it out of the queue, or the next
 * release hands the lock to a call that is gone and the lock sits unused for a TTL while others wait.
 *
 * The late caller is driven through its kind's typed script calls (the state a stall leaves is then
 * made exactly, in order, with no timing); the other holder is the public API. Events are ordered by
 * what Redis shows (queue and line lengths), not by sleeps.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { contextFor } from '../../src/adapters/client-context.js';
import { runScript } from '../../src/adapters/run-script.js';
import type { RedisClient } from '../../src/index.js';
import { FairMutex, Mutex, RedlockMutex, ReentrantMutex, Semaphore } from '../../src/index.js';
import type { ScriptCall } from '../../src/protocol/call.js';
import { type HandOffAcquireResult, handOffAcquire, handOffRelease } from '../../src/protocol/hand-off.js';
import type { LockKeys } from '../../src/protocol/keys.js';
import { redlockAcquire, redlockRelease } from '../../src/protocol/redlock.js';
import { reentrantAcquire, reentrantRelease } from '../../src/protocol/reentrant-mutex.js';
import { semaphoreAcquire, semaphoreRelease } from '../../src/protocol/semaphore.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { clientKinds, type TestClient } from '../fixtures/clients.js';
import { nameMaker, until, watchUnhandledRejections } from '../fixtures/helpers.js';
import { ownerTokenOf } from '../fixtures/lock-value.js';

const TTL_MS = 10_000;
const NODES = 3;

/** The late caller's two moves on one server: attempt (take a free lock, or queue), and give back. */
interface LateCaller {
  attempt(client: RedisClient, token: string): ScriptCall<HandOffAcquireResult>;
  giveBack(token: string): ScriptCall<boolean>;
}

/** What a hand-off kind's scripts need to stand in for one of its acquire calls. */
interface HandOffKind {
  readonly name: string;
  create(client: RedisClient, name: string): Mutex | FairMutex | ReentrantMutex;
  late(lock: Mutex | FairMutex | ReentrantMutex): LateCaller;
  /** A token of this kind's shape for a caller other than the public one. */
  token(): string;
}

/** The channel a caller on `client` hears its hand-offs of the lock `keys` names on. */
const channelOf = (keys: LockKeys, client: RedisClient) =>
  `${keys.grantedChannelPrefix}${contextFor(client).clientId}`;

/**
 * Whether someone listens on `channel` (the waiter subscribes after its first attempt queued it; a
 * Mutex's or a Redlock node's release skips a waiter its hand-off reaches nobody on).
 */
async function listens(server: RedisServer, channel: string): Promise<boolean> {
  const reply = await server.command('PUBSUB', 'NUMSUB', channel);
  return Number(/:(\d+)\r\n$/.exec(reply)?.[1]) > 0;
}

const queued = (client: RedisClient, keys: LockKeys, token: string, barging: boolean) => ({
  token,
  ttlMs: TTL_MS,
  entryTtlMs: 60_000,
  // The public waiter on the same client keeps this channel subscribed: a hand-off reaches it, as
  // one reaches a live process whose call gave up.
  grantChannel: channelOf(keys, client),
  maybeQueued: true,
  barging,
  label: '',
});

/**
 * A Mutex or a FairMutex: the same scripts, with the Mutex's policy (`barging`: take a free lock
 * whoever waits; skip a waiter its hand-off reaches nobody) or the FairMutex's.
 */
function scriptedHandOff(name: string, Kind: typeof Mutex | typeof FairMutex, barging: boolean): HandOffKind {
  return {
    name,
    create: (client, lockName) => new Kind(client, lockName, { ttlMs: TTL_MS }),
    late: (lock) => ({
      attempt: (client, token) => handOffAcquire(lock.keys, queued(client, lock.keys, token, barging)),
      giveBack: (token) => {
        const release = handOffRelease(lock.keys, {
          token,
          skipUnreached: barging,
          handOffAfterMs: 0,
          multiNames: barging,
        });
        return { ...release, decode: (reply) => release.decode(reply) !== 'not-held' };
      },
    }),
    token: () => `late-${randomBytes(8).toString('hex')}`,
  };
}

const handOffKinds: readonly HandOffKind[] = [
  scriptedHandOff('Mutex', Mutex, true),
  scriptedHandOff('FairMutex', FairMutex, false),
  {
    name: 'ReentrantMutex',
    create: (client, name) => new ReentrantMutex(client, name, { ttlMs: TTL_MS }),
    late: (lock) => {
      const keys = (lock as ReentrantMutex).reentrantKeys;
      return {
        attempt: (client, token) => reentrantAcquire(keys, queued(client, keys, token, false)),
        giveBack: (token) => reentrantRelease(keys, { token, skipUnreached: true }),
      };
    },
    // A hold token: another owner's 16 hex characters, then 16 more.
    token: () => randomBytes(16).toString('hex'),
  },
];

for (const kind of clientKinds) {
  describe(`A caller that gives up after a late hand-off (${kind.name})`, () => {
    const servers: RedisServer[] = [];
    const clients: TestClient[] = [];
    const freshName = nameMaker(`given-up-${kind.name}`);
    let unhandled: ReturnType<typeof watchUnhandledRejections>;

    before(async () => {
      for (let i = 0; i < NODES; i += 1) {
        const server = await startRedis();
        servers.push(server);
        clients.push(await kind.create(server.url));
      }
      unhandled = watchUnhandledRejections();
    });
    after(async () => {
      unhandled.stop();
      await Promise.all(clients.map((c) => c.close()));
      await Promise.all(servers.map((s) => s.stop()));
      assert.deepEqual(unhandled.reasons, [], 'no unhandled rejections');
    });

    for (const handOff of handOffKinds) {
      test(`${handOff.name}: its give-back leaves the queue, and the next release does not hand it the lock`, async () => {
        const redis = clients[0] as TestClient;
        const lock = handOff.create(redis.client, freshName());
        const late = handOff.late(lock);
        const run = <T>(call: ScriptCall<T>) => runScript(contextFor(redis.client), call);
        const waitingCount = async () => Number(await redis.command('HLEN', lock.keys.waiting));
        const late1 = handOff.token();

        // The late caller holds the lock (a hand-off that reached it); another caller waits.
        assert.equal((await run(late.attempt(redis.client, late1))).acquired, true);
        const waiting = lock.acquire({ timeoutMs: 30_000 });
        await until(async () => (await waitingCount()) === 1, 'the other caller is queued');
        await until(
          async () => await listens(servers[0] as RedisServer, channelOf(lock.keys, redis.client)),
          'it listens',
        );
        // Its process stalled: it gives the hand-off back while its token still holds, so the other
        // caller is handed the lock with that token as `prev`.
        assert.equal(await run(late.giveBack(late1)), true);
        const other = await waiting;
        // The same call queues again with the same token, then gives up.
        assert.equal((await run(late.attempt(redis.client, late1))).acquired, false);
        assert.equal(await waitingCount(), 1, 'queued again');
        await run(late.giveBack(late1));
        assert.equal(await waitingCount(), 0, 'its give-back took it out of the queue');

        assert.equal(await other.release(), true);
        const owner = ownerTokenOf(await redis.command('GET', lock.keys.lock));
        assert.notEqual(owner, late1, 'the release handed the lock to a caller that gave up');
        assert.equal(await lock.isLocked(), false, 'nobody waits: the lock is free');
      });
    }

    test('Semaphore: its give-back leaves the queue, and the next release does not hand it the permits', async () => {
      // The Semaphore's release records the token that released last (a release re-sent after its
      // reply was lost then still says it released). A release by that token that found it not
      // holding answered so at once, without taking it out of the queue: the call that queued again
      // with the same token stayed there, and the next release handed it the permit (a permit held
      // by nobody until its TTL: the fault suite's key-left-behind in "redlock: lost replies on one
      // node", where the RedlockSemaphore runs these scripts on each node).
      const redis = clients[0] as TestClient;
      const lock = new Semaphore(redis.client, freshName(), { limit: 1, ttlMs: TTL_MS });
      const keys = lock.semaphoreKeys;
      const run = <T>(call: ScriptCall<T>) => runScript(contextFor(redis.client), call);
      const queueLength = async () => Number(await redis.command('LLEN', keys.queue));
      const late1 = `late-${randomBytes(8).toString('hex')}`;
      const attempt = () =>
        semaphoreAcquire(keys, {
          token: late1,
          ttlMs: TTL_MS,
          permits: 1,
          limit: 1,
          entryTtlMs: 60_000,
          grantChannel: channelOf(lock.keys, redis.client),
          label: '',
        });
      const giveBack = () => semaphoreRelease(keys, { token: late1, limit: 1 });

      assert.equal((await run(attempt())).acquired, true);
      const waiting = lock.acquire({ timeoutMs: 30_000 });
      await until(async () => (await queueLength()) === 1, 'the other caller is queued');
      // Too late to use: given back while it holds, so the other caller is handed the permit.
      assert.equal(await run(giveBack()), true);
      const other = await waiting;
      // The same call queues again with the same token, then gives up.
      assert.equal((await run(attempt())).acquired, false);
      assert.equal(await queueLength(), 1, 'queued again');
      await run(giveBack());
      assert.equal(await queueLength(), 0, 'its give-back took it out of the queue');

      assert.equal(await other.release(), true);
      const holders = await redis.command('ZRANGE', keys.lock, '0', '-1');
      assert.ok(!String(holders).includes(late1), 'the release handed the permit to a caller that gave up');
      assert.equal(await lock.isLocked(), false, 'nobody waits: the semaphore is free');
    });

    test('RedlockMutex: its give-back leaves every line, and the next release does not hand it the lock', async () => {
      const name = freshName();
      const lock = new RedlockMutex(
        clients.map((c) => c.client),
        name,
        { ttlMs: TTL_MS },
      );
      const { keys } = lock;
      const place = Date.now();
      const onEvery = <T>(call: (client: RedisClient) => ScriptCall<T>) =>
        Promise.all(clients.map((c) => runScript(contextFor(c.client), call(c.client))));
      const attempt = (token: string) => (client: RedisClient) =>
        redlockAcquire(keys, {
          ...queued(client, keys, token, false),
          place,
          placeAgeMs: Date.now() - place,
          handOffAfterMs: 0,
          nowMs: Date.now(),
        });
      const giveBack = (token: string) => () =>
        redlockRelease(keys, { token, skipUnreached: true, handOffAfterMs: 0, nowMs: Date.now() });
      const inLines = async () =>
        (await Promise.all(clients.map((c) => c.command('HLEN', keys.waiting)))).map(Number);
      const late1 = `late-${randomBytes(8).toString('hex')}`;

      // The late caller holds every node; the other caller waits in every line.
      assert.deepEqual(
        (await onEvery(attempt(late1))).map((r) => r.acquired),
        [true, true, true],
      );
      const waiting = lock.acquire({ timeoutMs: 30_000 });
      await until(async () => (await inLines()).every((n) => n === 1), 'the other caller is in every line');
      for (const [i, c] of clients.entries()) {
        const server = servers[i] as RedisServer;
        await until(async () => await listens(server, channelOf(keys, c.client)), 'it listens on every node');
      }
      // Too late to use (or a minority given back, line-place.ts' moveToBack): given back everywhere.
      assert.deepEqual(await onEvery(giveBack(late1)), [true, true, true]);
      const other = await waiting;
      // The same call joins the lines again with the same token, then gives up.
      assert.deepEqual(
        (await onEvery(attempt(late1))).map((r) => r.acquired),
        [false, false, false],
      );
      await onEvery(giveBack(late1));
      assert.deepEqual(await inLines(), [0, 0, 0], 'its give-back took it out of every line');

      assert.equal(await other.release(), true);
      for (const c of clients) {
        const owner = ownerTokenOf(await c.command('GET', keys.lock));
        assert.notEqual(owner, late1, 'the release handed the lock to a caller that gave up');
      }
      assert.equal(await lock.isLocked(), false, 'nobody waits: the lock is free');
    });
  });
}
