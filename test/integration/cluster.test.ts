/**
 * Locksmith on a real Redis Cluster (test/fixtures/redis-cluster.ts: 3 primaries with a replica
 * each): the fixture itself, then what only a cluster has.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  ClientClosedError,
  Mutex,
  RedisCommandError,
  RedlockMutex,
  Semaphore,
  UnsupportedClientError,
} from '../../src/index.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import {
  type ClientKind,
  type ClusterClientKind,
  clusterClientKinds,
  ioredisKind,
  nodeRedisV6Kind,
  type TestClient,
} from '../fixtures/clients.js';
import { commandCalls } from '../fixtures/commandstats.js';
import { nameMaker } from '../fixtures/helpers.js';
import { type RedisCluster, startCluster } from '../fixtures/redis-cluster.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('the cluster fixture', () => {
  let cluster: RedisCluster;
  before(async () => {
    cluster = await startCluster();
  });
  after(async () => {
    const pids = cluster?.nodes.map((node) => node.pid) ?? [];
    await cluster?.stop();
    assert.deepEqual(pids.filter(alive), [], 'stop() ended every node by its PID');
  });

  test('3 primaries with a replica each, on loopback ports other than 6379, every slot served', async () => {
    assert.equal(cluster.nodes.length, 6);
    assert.ok(cluster.nodes.every((node) => node.host === '127.0.0.1' && node.port !== 6379));
    const primaries = await cluster.primaries();
    assert.equal(primaries.length, 3);
    const replicas = await Promise.all(primaries.map((primary) => cluster.replicaOf(primary)));
    assert.equal(new Set(replicas.map((r) => r.port)).size, 3, 'one replica per primary');
    for (const node of cluster.nodes) {
      const info = await node.command('CLUSTER', 'INFO');
      assert.match(info, /cluster_state:ok/);
      assert.match(info, /cluster_slots_ok:16384/);
    }
  });
});

/** A cluster for the rest of this file (the fixture's own checks above use one of their own). */
let shared: RedisCluster;
let standalone: RedisServer;
before(async () => {
  [shared, standalone] = await Promise.all([startCluster(), startRedis()]);
});
after(async () => {
  await Promise.all([shared?.stop(), standalone?.stop()]);
});

/** The standalone client of the same library, for "the same error as on one server". */
const standaloneOf = (kind: ClusterClientKind): ClientKind =>
  kind.name.startsWith('ioredis') ? ioredisKind : nodeRedisV6Kind;

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
    let a: TestClient;
    let b: TestClient;
    const name = nameMaker(`cluster-${kind.name}`);
    before(async () => {
      [a, b] = await Promise.all([kind.create(shared), kind.create(shared)]);
    });
    after(async () => {
      await Promise.all([a?.close(), b?.close()]);
    });

    test('locks whose names fall on every primary: acquire, exclude, release, fencing tokens grow', async () => {
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
      assert.throws(
        () => new RedlockMutex([a.client, b.client], name()),
        (error: unknown) =>
          error instanceof UnsupportedClientError &&
          error.code === 'UNSUPPORTED_CLIENT' &&
          /RedlockMutex node/.test(error.message),
      );
    });
  });
}
