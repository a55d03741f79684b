/**
 * A primary with a replica behind three Sentinels, reached through each client library's own
 * Sentinel support: ioredis `new Redis({ sentinels, name })` and node-redis `createSentinel()` (v6,
 * v5). Locks work as on one server (waiting, `minReplicaAcks`), and a Sentinel failover while a
 * lock is held and another caller waits reaches neither caller as an error: the waiter still gets
 * the lock and fencing tokens keep rising. What happens to the held lock depends on when the client
 * moves to the new primary:
 *
 * - ioredis stays on the old primary until the old primary drops its connections, when Sentinel
 *   demotes it (8 s or more after the promotion). The holder's extensions in between reach the old
 *   primary only, so on the new one the lock expires; the holder learns it from its lease's signal,
 *   not from a later call.
 * - node-redis moves when the Sentinels announce the new primary (`+switch-master`, one or two
 *   seconds after the promotion here), and re-sends what it had in flight there. A lock whose TTL
 *   outlasts that moment is kept: the holder's next extension finds it on the new primary.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createSentinel as createSentinelV6 } from 'redis';
import { createSentinel as createSentinelV5 } from 'redis5';
import {
  ClientClosedError,
  type Lease,
  LockLostError,
  Mutex,
  NotReplicatedError,
  type RedisClient,
  Semaphore,
} from '../../src/index.js';
import { abortedWith, awaitedLater, nameMaker, until, within } from '../fixtures/helpers.js';
import { type SentinelSetup, startSentinels } from '../fixtures/redis-sentinel.js';

interface SentinelClient {
  readonly client: RedisClient;
  /** A raw command, on the primary the client uses now. */
  command(...args: string[]): Promise<unknown>;
  close(): Promise<void>;
}

interface SentinelKind {
  readonly name: string;
  create(setup: SentinelSetup): Promise<SentinelClient>;
  /** node-redis only: a client that was never `connect()`ed (ioredis connects by itself). */
  createUnconnected?(setup: SentinelSetup): RedisClient;
  /** What a failover does to a lock held through this client (see the file's comment). */
  readonly failover: { readonly ttlMs: number; readonly holderKeepsLock: boolean };
}

const ioredisSentinels: SentinelKind = {
  name: 'ioredis with sentinels',
  async create(setup) {
    const { Redis } = await import('ioredis');
    const client = new Redis({
      sentinels: [...setup.sentinels],
      name: setup.name,
      // Sentinel kills the demoted primary's connections; ioredis asks the Sentinels again.
      sentinelRetryStrategy: () => 50,
      retryStrategy: () => 50,
    });
    client.on('error', () => {});
    return {
      client,
      command: (command, ...args) => client.call(command as string, ...args),
      close: async () => {
        await client.quit().catch(() => client.disconnect());
      },
    };
  },
  // Shorter than the window between the promotion and the demotion: the lock is lost.
  failover: { ttlMs: 3_000, holderKeepsLock: false },
};

/** What the test calls on a node-redis sentinel client (v5 and v6 alike). */
interface NodeRedisSentinel {
  connect(): Promise<unknown>;
  destroy(): Promise<void>;
  on(event: 'error', listener: () => void): unknown;
  sendCommand(isReadonly: boolean, args: string[]): Promise<unknown>;
}

function nodeRedisSentinel(
  name: string,
  createSentinel: (options: {
    name: string;
    sentinelRootNodes: { host: string; port: number }[];
  }) => NodeRedisSentinel,
): SentinelKind {
  return {
    name,
    async create(setup) {
      const client = createSentinel({ name: setup.name, sentinelRootNodes: [...setup.sentinels] });
      client.on('error', () => {});
      await client.connect();
      return {
        client: client as unknown as RedisClient,
        command: (...args) => client.sendCommand(false, args),
        close: () => client.destroy(),
      };
    },
    createUnconnected: (setup) =>
      createSentinel({
        name: setup.name,
        sentinelRootNodes: [...setup.sentinels],
      }) as unknown as RedisClient,
    // Longer than the client takes to move to the new primary: the lock is kept.
    failover: { ttlMs: 10_000, holderKeepsLock: true },
  };
}

const kinds: SentinelKind[] = [
  ioredisSentinels,
  nodeRedisSentinel(
    'node-redis v6 createSentinel()',
    (options) => createSentinelV6(options) as unknown as NodeRedisSentinel,
  ),
  nodeRedisSentinel(
    'node-redis v5 createSentinel()',
    (options) => createSentinelV5(options) as unknown as NodeRedisSentinel,
  ),
];

for (const kind of kinds) {
  describe(`Sentinel: ${kind.name}`, () => {
    let setup: SentinelSetup;
    const clients: SentinelClient[] = [];
    const name = nameMaker(`sentinel-${kind.name}`);

    const client = async () => {
      const made = await kind.create(setup);
      clients.push(made);
      return made;
    };

    before(async () => {
      setup = await startSentinels();
    });
    after(async () => {
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
      await setup?.stop();
    });

    test('a Mutex through a client that finds its primary by Sentinel: held, waited for, handed on', async () => {
      const lockName = name();
      const a = new Mutex((await client()).client, lockName, { ttlMs: 5_000 });
      const b = new Mutex((await client()).client, lockName, { ttlMs: 5_000, maxLocalHolds: 1 });
      const first = await a.acquire();
      const waiting = b.acquire({ timeoutMs: 10_000 });
      assert.equal(await first.release(), true);
      const second = await waiting;
      assert.ok(second.fencingToken > first.fencingToken);
      assert.equal(await second.release(), true);
    });

    const { createUnconnected } = kind;
    if (createUnconnected) {
      test('a client never connected: ClientClosedError that says to connect, nothing sent', async () => {
        const before = await setup.primary().command('INFO', 'commandstats');
        await assert.rejects(new Mutex(createUnconnected(setup), name()).acquire(), (error: unknown) => {
          assert.ok(error instanceof ClientClosedError);
          assert.match(error.message, /connect\(\)/);
          return true;
        });
        const after = await setup.primary().command('INFO', 'commandstats');
        assert.equal(
          after.match(/cmdstat_eval\w*:calls=\d+/g)?.join(),
          before.match(/cmdstat_eval\w*:calls=\d+/g)?.join(),
        );
      });
    }

    test('minReplicaAcks: WAIT goes to the primary the client found, a paused replica fails the grant', async () => {
      const { client: locks } = await client();
      const guarded = new Semaphore(locks, name(), { limit: 1, minReplicaAcks: 1, replicaAckTimeoutMs: 100 });
      // The confirmed grant may wait long for its ack (a busy machine); the refused one below 100 ms.
      const confirmed = new Semaphore(locks, guarded.name, {
        limit: 1,
        minReplicaAcks: 1,
        replicaAckTimeoutMs: 10_000,
      });
      const lease = await confirmed.acquire();
      assert.equal(await setup.replica().command('EXISTS', guarded.keys.lock), ':1\r\n');
      assert.equal(await lease.release(), true);

      setup.replica().pause();
      try {
        await assert.rejects(guarded.acquire(), NotReplicatedError);
      } finally {
        setup.replica().resume();
      }
      const again = await new Semaphore(locks, guarded.name, { limit: 1 }).tryAcquire();
      assert.ok(again, 'the refused grant was given back');
      await again.release();
    });

    test('a failover while a lock is held and waited for: no error reaches either caller, tokens rise', async () => {
      const lockName = name();
      const { ttlMs, holderKeepsLock } = kind.failover;
      const holderClient = await client();
      const waiterClient = await client();
      const holderLock = new Mutex(holderClient.client, lockName, { ttlMs });
      const waiterLock = new Mutex(waiterClient.client, lockName, { ttlMs });
      const held = await holderLock.acquire();
      const lost = abortedWith(held.signal);
      const waiting = awaitedLater(waiterLock.acquire({ timeoutMs: 60_000 }));
      await until(
        async () => Number(await waiterClient.command('LLEN', waiterLock.keys.queue)) === 1,
        'the waiter is queued',
      );
      // The lock and the waiter's entry are on the replica before the failover starts (WAIT on the
      // waiter's own connection, which wrote the entry last).
      assert.equal(Number(await waiterClient.command('WAIT', '1', '5000')), 1);
      await setup.failover();

      let next: Lease;
      if (holderKeepsLock) {
        // The client moved to the new primary long before the lock's TTL ran out there; the
        // holder's extensions since went to it.
        assert.equal(held.signal.aborted, false, `the lease was kept: ${String(held.signal.reason)}`);
        assert.equal(await setup.primary().command('EXISTS', holderLock.keys.lock), ':1\r\n');
        // The waiter's subscription moved with it: it hears the release on the new primary at
        // once, not at the end of its timed wait (the holder's TTL).
        const channels = await setup.primary().command('PUBSUB', 'CHANNELS', `${waiterLock.keys.lock}*`);
        assert.match(channels, /granted/, 'the waiter listens on the new primary');
        const releasedAt = performance.now();
        assert.equal(await held.release(), true);
        next = await within(waiting, 60_000, 'the waiter');
        const wokenMs = performance.now() - releasedAt;
        assert.ok(wokenMs < ttlMs / 2, `the waiter was woken by the release (${Math.round(wokenMs)} ms)`);
      } else {
        // Sentinel demotes the old primary seconds after promoting the replica (8 s or more), and
        // the holder's extensions in between went to the old primary: on the new one the lock
        // expired a TTL after the promotion. The holder hears it from its signal once its client
        // reconnects.
        const reason = await within(lost, 30_000, "the holder's signal");
        assert.ok(reason instanceof LockLostError, `the lease's signal says why: ${String(reason)}`);
        assert.equal(await held.release(), false);
        next = await within(waiting, 60_000, 'the waiter');
      }
      assert.ok(
        next.fencingToken > held.fencingToken,
        `tokens rise across the failover: ${held.fencingToken} then ${next.fencingToken}`,
      );
      assert.equal(await next.release(), true);

      // And the lock works on the new primary from here on.
      const again = await holderLock.acquire();
      assert.ok(again.fencingToken > next.fencingToken);
      assert.equal(await again.release(), true);
    });
  });
}
