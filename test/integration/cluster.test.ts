/**
 * Locksmith on a real Redis Cluster (test/fixtures/redis-cluster.ts: 3 primaries with a replica
 * each): the fixture itself, then what only a cluster has.
 */
import assert from 'node:assert/strict';
import { createConnection } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { contextFor } from '../../src/adapters/client-context.js';
import { runScript } from '../../src/adapters/run-script.js';
import {
  ClientClosedError,
  CrossSlotError,
  FairMutex,
  type Lease,
  MultiMutex,
  Mutex,
  NotReplicatedError,
  RedisCommandError,
  RedlockMutex,
  RedlockSemaphore,
  Semaphore,
  UnsupportedClientError,
} from '../../src/index.js';
import { handOffAcquire } from '../../src/protocol/hand-off.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import {
  type ClientKind,
  type ClusterClientKind,
  clusterClientKinds,
  glideKind,
  ioredisClusterKind6,
  ioredisKind,
  nodeRedisV6Kind,
  type TestClient,
} from '../fixtures/clients.js';
import { commandCalls } from '../fixtures/commandstats.js';
import { awaitedLater, clusterForSuite, nameMaker, until, within } from '../fixtures/helpers.js';
import { type RedisCluster, startCluster, startOneNodeCluster } from '../fixtures/redis-cluster.js';

/**
 * How long a grant that must be confirmed may wait for its replica's ack: generous, so a busy
 * machine does not turn a slow ack into a failed test (the refusals use short bounds of their own).
 */
const ACK_MS = 10_000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** One cluster for the whole file (started once: about 6 s), and a server for comparisons. */
let shared: RedisCluster;
let standalone: RedisServer;
before(async () => {
  [shared, standalone] = await Promise.all([startCluster(), startRedis()]);
});
after(async () => {
  const pids = shared?.nodes.map((node) => node.pid) ?? [];
  await Promise.all([shared?.stop(), standalone?.stop()]);
  assert.deepEqual(pids.filter(alive), [], 'stop() ended every node by its PID');
});

describe('the cluster fixture', () => {
  test('3 primaries with a replica each, on loopback ports other than 6379, every slot served', async () => {
    assert.equal(shared.nodes.length, 6);
    assert.ok(shared.nodes.every((node) => node.host === '127.0.0.1' && node.port !== 6379));
    const primaries = await shared.primaries();
    assert.equal(primaries.length, 3);
    const replicas = await Promise.all(primaries.map((primary) => shared.replicaOf(primary)));
    assert.equal(new Set(replicas.map((r) => r.port)).size, 3, 'one replica per primary');
    for (const node of shared.nodes) {
      const info = await node.command('CLUSTER', 'INFO');
      assert.match(info, /cluster_state:ok/);
      assert.match(info, /cluster_slots_ok:16384/);
    }
  });
});

/** The standalone client of the same library, for "the same error as on one server". */
const standaloneOf = (kind: ClusterClientKind): ClientKind =>
  kind.name.startsWith('ioredis')
    ? ioredisKind
    : kind.name.startsWith('valkey-glide')
      ? glideKind
      : nodeRedisV6Kind;

/** What a rejection looks like to a user: its class, code and the start of its cause's message. */
function shapeOf(error: unknown): [string, string, string] {
  assert.ok(error instanceof Error, String(error));
  const cause = (error as { cause?: unknown }).cause;
  return [
    error.constructor.name,
    String((error as { code?: unknown }).code),
    cause instanceof Error ? (cause.message.split(' ')[0] ?? '') : String(cause),
  ];
}

for (const kind of clusterClientKinds) {
  describe(`scripts on a cluster (${kind.name})`, () => {
    const clients = clusterForSuite(kind, () => shared);
    const name = nameMaker(`cluster-${kind.name}`);

    test('a MultiMutex over names in several slots is refused; over one hash tag it runs', async () => {
      const { a, b } = clients;
      const [x, y] = [name(), name()];
      assert.throws(() => new MultiMutex(a.client, [x, y]), CrossSlotError);
      const names = [`${x}}1`, `${x}}2`, x];
      const lease = await new MultiMutex(a.client, names).acquire();
      assert.deepEqual(Object.keys(lease.fencingTokens), names);
      assert.equal(await new Mutex(b.client, `${x}}2`).tryAcquire(), null, 'a Mutex on one name is excluded');
      const waiting = awaitedLater(
        new MultiMutex(b.client, [`${x}}2`, `${x}}3`]).acquire({ timeoutMs: 20_000 }),
      );
      await until(async () => {
        const key = `locksmith:{${x}}2}:multi-waiting`;
        // The node's reply is raw RESP (":1\r\n").
        return /^:1\r/.test(await (await shared.primaryFor(key)).command('HLEN', key));
      }, 'the waiter registers');
      assert.equal(await lease.release(), true);
      const next = await within(waiting, 15_000, 'the waiter, woken by the release');
      await next.release();
    });

    test('locks whose names fall on every primary: acquire, exclude, release, fencing tokens grow', async () => {
      const { a, b } = clients;
      await shared.command('CONFIG', 'RESETSTAT');
      const names = Array.from({ length: 24 }, () => name());
      for (const lockName of names) {
        const lease = await new Mutex(a.client, lockName).acquire();
        assert.equal(await new Mutex(b.client, lockName).tryAcquire(), null, 'held elsewhere');
        assert.equal(await lease.release(), true);
        const next = await new Mutex(b.client, lockName).tryAcquire();
        assert.ok(next && next.fencingToken > lease.fencingToken, 'the next holder has a higher token');
        await next.release();
      }
      const perPrimary = await Promise.all(
        (await shared.primaries()).map(async (node) => (await commandCalls(node)).evalsha ?? 0),
      );
      assert.ok(
        perPrimary.every((calls) => calls > 0),
        `every primary ran scripts: ${perPrimary}`,
      );
    });

    test('NOSCRIPT on every node falls back to EVAL', async () => {
      const { a } = clients;
      const semaphore = new Semaphore(a.client, name(), { limit: 2 });
      const first = await semaphore.acquire();
      await shared.command('SCRIPT', 'FLUSH');
      await shared.command('CONFIG', 'RESETSTAT');
      const second = await semaphore.acquire();
      assert.equal(await semaphore.tryAcquire(), null, 'both permits taken');
      assert.ok(((await commandCalls(await shared.primaryFor(semaphore.keys.lock))).eval ?? 0) > 0);
      await Promise.all([first.release(), second.release()]);
    });

    test('a refused script: the same typed error and cause as on one server', async () => {
      const { a } = clients;
      const single = await standaloneOf(kind).create(standalone.url);
      try {
        const shapes = [];
        for (const client of [a, single]) {
          const mutex = new Mutex(client.client, name());
          await client.command('HSET', mutex.keys.lock, 'not', 'a lock');
          const error = await mutex.acquire({ timeoutMs: 1_000 }).then(
            () => assert.fail('acquired a key of the wrong type'),
            (e: unknown) => e,
          );
          assert.ok(error instanceof RedisCommandError);
          shapes.push(shapeOf(error));
        }
        assert.deepEqual(shapes[0], ['RedisCommandError', 'REDIS_ERROR', 'WRONGTYPE']);
        assert.deepEqual(shapes[0], shapes[1]);
      } finally {
        await single.close();
      }
    });

    test('a closed cluster client: ClientClosedError before anything is sent', async () => {
      const closed = await kind.create(shared);
      const mutex = new Mutex(closed.client, name());
      await closed.close();
      await assert.rejects(mutex.acquire(), ClientClosedError);
    });

    test('RedlockMutex refuses a cluster client as a node', () => {
      const { a, b } = clients;
      assert.throws(
        () => new RedlockMutex([a.client, b.client], name()),
        (error: unknown) =>
          error instanceof UnsupportedClientError &&
          error.code === 'UNSUPPORTED_CLIENT' &&
          /RedlockMutex node/.test(error.message),
      );
    });

    test('RedlockSemaphore refuses a cluster client as a node', () => {
      const { a, b } = clients;
      assert.throws(
        () => new RedlockSemaphore([a.client, b.client], name(), { limit: 2 }),
        (error: unknown) =>
          error instanceof UnsupportedClientError &&
          error.code === 'UNSUPPORTED_CLIENT' &&
          /RedlockSemaphore node/.test(error.message),
      );
    });

    test("minReplicaAcks: each grant and extension waits on the primary of its lock's slot, on every shard", async () => {
      const { a } = clients;
      const primaries = await shared.primaries();
      // Two names per primary.
      const byPrimary = new Map<number, string[]>(primaries.map((node) => [node.port, []]));
      while ([...byPrimary.values()].some((names) => names.length < 2)) {
        const lockName = name();
        const primary = await shared.primaryFor(new Mutex(a.client, lockName).keys.lock);
        const names = byPrimary.get(primary.port);
        if (names && names.length < 2) names.push(lockName);
      }
      for (const primary of primaries) {
        for (const lockName of byPrimary.get(primary.port) ?? []) {
          const lock = new Mutex(a.client, lockName, { minReplicaAcks: 1, replicaAckTimeoutMs: ACK_MS });
          await shared.command('CONFIG', 'RESETSTAT');
          const lease = await lock.acquire();
          await lease.extend();
          const waits = await Promise.all(
            shared.nodes.map(async (node) => (await commandCalls(node)).wait ?? 0),
          );
          const expected = shared.nodes.map((node) => (node.port === primary.port ? 2 : 0));
          assert.deepEqual(waits, expected, `WAIT ran on the primary of ${lockName}'s slot only`);
          assert.equal(await lease.release(), true);
        }
      }
    });

    test("minReplicaAcks: the lock's shard's replica paused, the grant fails with NotReplicatedError and is given back; other shards are confirmed", async () => {
      const { a } = clients;
      const guarded = new Semaphore(a.client, name(), {
        limit: 1,
        minReplicaAcks: 1,
        replicaAckTimeoutMs: 100,
      });
      const primary = await shared.primaryFor(guarded.keys.lock);
      const replica = await shared.replicaOf(primary);
      let elsewhere = new Mutex(a.client, name(), { minReplicaAcks: 1, replicaAckTimeoutMs: ACK_MS });
      while ((await shared.primaryFor(elsewhere.keys.lock)).port === primary.port) {
        elsewhere = new Mutex(a.client, name(), { minReplicaAcks: 1, replicaAckTimeoutMs: ACK_MS });
      }
      replica.pause();
      try {
        await assert.rejects(guarded.acquire(), (error: unknown) => {
          assert.ok(error instanceof NotReplicatedError, String(error));
          assert.equal(error.acked, 0);
          assert.equal(error.required, 1);
          return true;
        });
        await assert.rejects(guarded.tryAcquire(), NotReplicatedError);
        // A lock on another shard, whose replica answers, is confirmed meanwhile.
        const other = await elsewhere.acquire();
        assert.equal(await other.release(), true);
      } finally {
        replica.resume();
      }
      const lease = await new Semaphore(a.client, guarded.name, { limit: 1 }).tryAcquire();
      assert.ok(lease, 'the refused grants were given back: nobody holds the lock');
      await lease.release();
    });
  });
}

test('minReplicaAcks with an ioredis Cluster keyPrefix: WAIT goes where the prefixed key lives', async () => {
  const { Cluster } = await import('ioredis');
  // The prefix's hash tag wins over the name's: every lock lands in the slot of `app`.
  const cluster = new Cluster([...shared.startupNodes], {
    keyPrefix: '{app}:',
    redisOptions: { maxRetriesPerRequest: null },
  });
  cluster.on('error', () => {});
  try {
    const primary = await shared.primaryFor('{app}');
    // A name whose own slot is on another primary.
    const nextName = nameMaker('cluster-prefix');
    let lock = new Mutex(cluster, nextName(), { minReplicaAcks: 1, replicaAckTimeoutMs: ACK_MS });
    while ((await shared.primaryFor(lock.keys.lock)).port === primary.port) {
      lock = new Mutex(cluster, nextName(), { minReplicaAcks: 1, replicaAckTimeoutMs: ACK_MS });
    }
    await shared.command('CONFIG', 'RESETSTAT');
    const lease = await lock.acquire();
    assert.equal(await primary.command('EXISTS', `{app}:${lock.keys.lock}`), ':1\r\n');
    assert.equal((await commandCalls(primary)).wait, 1, "WAIT ran on the primary of the prefix's slot");
    assert.equal(await lease.release(), true);
  } finally {
    cluster.disconnect();
  }
});

/** Calls of `command` on every node of the cluster since the last CONFIG RESETSTAT. */
async function callsOf(command: string): Promise<number> {
  const counts = await Promise.all(
    shared.nodes.map(async (node) => (await commandCalls(node))[command] ?? 0),
  );
  return counts.reduce((sum, n) => sum + n, 0);
}

/** Whether the lock's channels are sharded channels on the primary serving its slot. */
async function listensOnShard(lockKey: string): Promise<boolean> {
  const primary = await shared.primaryFor(lockKey);
  return (await primary.command('PUBSUB', 'SHARDCHANNELS', `${lockKey}*`)).includes(lockKey);
}

/** The lock kinds whose scripts publish, one per family of Lua includes (grant-waiter, semaphore-queue). */
const waitingKinds = [
  {
    name: 'Mutex',
    create: (client: TestClient, lockName: string) => new Mutex(client.client, lockName, { ttlMs: 30_000 }),
    // One whose every release hands over (no barging window), where a test needs a hand-off: with
    // the default 50 ms window a release came before the waiter was due and freed the lock quietly,
    // and under load the waiter, due by then, took it before the releaser's wake: nothing published.
    handingOver: (client: TestClient, lockName: string) =>
      new Mutex(client.client, lockName, { ttlMs: 30_000, handOffAfterMs: 0 }),
  },
  {
    name: 'FairMutex',
    create: (client: TestClient, lockName: string) =>
      new FairMutex(client.client, lockName, { ttlMs: 30_000 }),
  },
  {
    name: 'Semaphore',
    create: (client: TestClient, lockName: string) =>
      new Semaphore(client.client, lockName, { ttlMs: 30_000, limit: 1 }),
  },
];

for (const kind of clusterClientKinds) {
  describe(`waiting with sharded pub/sub (${kind.name})`, () => {
    const clients = clusterForSuite(kind, () => shared);
    const name = nameMaker(`shard-${kind.name}`);

    for (const lockKind of waitingKinds) {
      test(`${lockKind.name}: a release wakes the waiter with SPUBLISH on the lock's shard, never PUBLISH`, async () => {
        const { a, b } = clients;
        // The holder's 30 s TTL is the only other bound on the wait (no retryDelayMs): a waiter
        // taken for gone (a hand-off counted as reaching nobody) would wait it out.
        await shared.command('CONFIG', 'RESETSTAT');
        const create = ('handingOver' in lockKind && lockKind.handingOver) || lockKind.create;
        const held = create(a, name());
        const lease = await held.acquire();
        const waiting = awaitedLater(create(b, held.name).acquire({ timeoutMs: 25_000 }));
        await until(() => listensOnShard(held.keys.lock), 'the waiter listens on the shard');
        assert.equal(
          await a.command('PUBSUB', 'CHANNELS', `${held.keys.lock}*`).then((r) => (r as unknown[]).length),
          0,
        );
        await lease.release();
        const next = await within(waiting, 10_000, 'the waiter is woken by the release');
        assert.ok(next.fencingToken > lease.fencingToken);
        await next.release();
        assert.ok((await callsOf('spublish')) >= 1, 'the hand-off was SPUBLISHed');
        assert.equal(await callsOf('publish'), 0, 'no plain PUBLISH in a cluster');
      });
    }
  });
}

describe('a cluster without sharded pub/sub (SSUBSCRIBE and SPUBLISH renamed away, as before Redis 7)', () => {
  let server: RedisServer;
  before(async () => {
    server = await startOneNodeCluster({
      args: ['--rename-command', 'SSUBSCRIBE', '', '--rename-command', 'SPUBLISH', ''],
    });
  });
  after(async () => {
    await server?.stop();
  });

  for (const kind of clusterClientKinds) {
    test(`${kind.name}: waiters fall back to timed polling, and no error reaches the caller`, async () => {
      const [a, b] = await Promise.all([
        kind.create({ startupNodes: [server] }),
        kind.create({ startupNodes: [server] }),
      ]);
      try {
        for (const lockKind of waitingKinds) {
          const held = lockKind.create(a, `old-redis-${kind.name}-${lockKind.name}`);
          const lease = await held.acquire();
          const waiting = awaitedLater(lockKind.create(b, held.name).acquire({ timeoutMs: 20_000 }));
          // Its SSUBSCRIBE failed, so it polls (every 50 ms); a hand-off whose SPUBLISH the server
          // refuses is not taken for "nobody listens": the lock is handed over, found at the next poll.
          await until(
            async () => Number(await b.command('EXISTS', held.keys.queue)) === 1,
            'the waiter is queued',
          );
          await lease.release();
          const next = await within(waiting, 10_000, 'the polling waiter takes the lock');
          assert.ok(next.fencingToken > lease.fencingToken);
          await next.release();
        }
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });
  }
});

for (const kind of clusterClientKinds) {
  describe(`a primary failover while a lock is held and another caller waits (${kind.name})`, () => {
    const clients = clusterForSuite(kind, () => shared);
    const name = nameMaker(`failover-${kind.name}`);
    // Whether a waiter's sharded subscription follows its shard to the new primary is up to the
    // library (ioredis 6 and node-redis 6 subscribe again, not always at once; ioredis 5 and
    // node-redis 4 and 5 do not), and a hand-off published meanwhile is missed: the waiter then
    // asks again after its bound, here retryDelayMs (else the holder's 30 s TTL).
    const waitOptions = { timeoutMs: 25_000, retryDelayMs: 1_000 };

    test('no redirection or script error reaches the caller, each waiter gets its lock, tokens grow', async () => {
      const { a, b } = clients;
      // One lock of each kind, all in one slot (a name's hash tag ends at its first `}`), so one
      // failover moves them all.
      const slot = name();
      const locks = waitingKinds.map((lockKind) => ({
        held: lockKind.create(a, `${slot}}${lockKind.name}`),
        other: () => lockKind.create(b, `${slot}}${lockKind.name}`),
      }));
      const leases = await Promise.all(locks.map(({ held }) => held.acquire()));
      const waiting = locks.map(({ other }) => awaitedLater(other().acquire(waitOptions)));
      for (const { held } of locks) {
        await until(
          async () => Number(await b.command('EXISTS', held.keys.queue)) === 1,
          'the waiter is queued',
        );
      }
      const primary = await shared.primaryFor(locks[0]?.held.keys.lock as string);
      // CLUSTER FAILOVER: the replica catches up, then takes the slots over; the clients see
      // MOVED, and the new primary's script cache is empty (NOSCRIPT).
      const replica = await shared.replicaOf(primary);
      await shared.failover(replica);
      for (const [i, { held }] of locks.entries()) {
        const lease = leases[i] as Lease;
        assert.ok(
          !(await replica.command('EXISTS', held.keys.lock)).startsWith('-MOVED'),
          'the replica serves it',
        );
        await lease.extend();
        assert.ok(lease.isHeld, 'the holder still holds the lock on the new primary');
        assert.equal(await lease.release(), true);
        const next = await within(waiting[i] as Promise<Lease>, 15_000, 'the waiter is handed the lock');
        assert.ok(next.fencingToken > lease.fencingToken, 'fencing tokens grow across the failover');
        assert.equal(await next.release(), true);
        const later = await held.acquire();
        assert.ok(later.fencingToken > next.fencingToken);
        await later.release();
      }
    });
  });
}

/**
 * Listens on `channel` with SSUBSCRIBE on one node, over a plain connection (what a cluster client's
 * subscriber does once it is connected to that node); `messages()` is what it received so far.
 */
async function listenOn(node: RedisServer, channel: string): Promise<{ messages(): string; close(): void }> {
  const socket = createConnection({ host: node.host, port: node.port });
  let received = '';
  socket.on('data', (chunk) => {
    received += chunk.toString('utf8');
  });
  socket.write(`*2\r\n$10\r\nSSUBSCRIBE\r\n$${Buffer.byteLength(channel)}\r\n${channel}\r\n`);
  await until(() => received.includes('ssubscribe'), 'the subscription is confirmed');
  return { messages: () => received, close: () => socket.destroy() };
}

describe('a Mutex waiter whose subscriber listens through a replica of the shard', () => {
  // node-redis 4 and 5 keep a shard's subscriber connection on its address: after a failover it
  // may be a replica of the shard (a killed primary restarted, cluster-primary-killed.test.ts). A
  // replica hears what its primary SPUBLISHes, but SPUBLISH counts only the publishing node's own
  // subscribers: a count of 0 does not mean that nobody heard. The Mutex took it to mean so, and
  // skipped the waiter as gone (the lock freed, or handed to the next waiter) while the waiter,
  // hearing its hand-off, took the lock as its own: two holders.
  test('a hand-off it hears is its own: the lock is held by it, not freed', async () => {
    const client = await ioredisClusterKind6.create(shared);
    let listener: { messages(): string; close(): void } | undefined;
    try {
      const mutex = new Mutex(client.client, `replica-listener-${process.pid}`, { ttlMs: 30_000 });
      const lease = await mutex.acquire();
      const primary = await shared.primaryFor(mutex.keys.lock);
      const replica = await shared.replicaOf(primary);
      // A waiter of another cluster client (its channel's client id starts with the sharded mark).
      const token = 'a'.repeat(32);
      const channel = `${mutex.keys.grantedChannelPrefix}s0listens0on0a0replica`;
      listener = await listenOn(replica, channel);
      const queued = await runScript(
        contextFor(client.client),
        handOffAcquire(mutex.keys, {
          token,
          ttlMs: 30_000,
          entryTtlMs: 30_000,
          grantChannel: channel,
          maybeQueued: false,
          barging: true,
          label: '',
        }),
      );
      assert.equal(queued.acquired, false, 'the waiter is queued behind the holder');
      assert.equal(await lease.release(), true);
      const heard = listener;
      await until(
        () => heard.messages().includes(`${token}:`),
        'the waiter hears its hand-off through the replica',
      );
      const state = await mutex.inspect();
      assert.ok(
        state.locked && state.ownerToken === token,
        `the waiter heard a hand-off, so the lock is its own: ${JSON.stringify(state)}`,
      );
      assert.equal(await mutex.releaseToken(token), true);
    } finally {
      listener?.close();
      await client.close();
    }
  });
});
