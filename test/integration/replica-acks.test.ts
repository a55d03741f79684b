/**
 * `minReplicaAcks`: a grant and each extension wait (Redis `WAIT`) until that many replicas have
 * them. A primary and a real replica on loopback; the replica is paused (SIGSTOP) to withhold its
 * acknowledgements. Every client library.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  FairMutex,
  LockLostError,
  Mutex,
  NotReplicatedError,
  RedlockMutex,
  Semaphore,
} from '../../src/index.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { clientKinds, type TestClient } from '../fixtures/clients.js';
import { abortedWith, nameMaker, until } from '../fixtures/helpers.js';

const nextName = nameMaker('replica-acks');

/** How many WAIT calls the primary has served (INFO commandstats). */
async function waitCalls(primary: RedisServer): Promise<number> {
  const stats = await primary.command('INFO', 'commandstats');
  return Number(stats.match(/cmdstat_wait:calls=(\d+)/)?.[1] ?? 0);
}

describe('minReplicaAcks', () => {
  let primary: RedisServer;
  let replica: RedisServer;

  before(async () => {
    primary = await startRedis();
    replica = await startRedis({ args: ['--replicaof', primary.host, String(primary.port)] });
    await until(
      async () => (await replica.command('INFO', 'replication')).includes('master_link_status:up'),
      'the replica is in sync',
    );
  });
  after(async () => {
    replica?.resume();
    await Promise.all([primary?.stop(), replica?.stop()]);
  });

  test('bad values are refused before anything is sent; a RedlockMutex refuses it', () => {
    const client = { evalsha() {}, duplicate() {}, status: 'ready' } as never;
    assert.throws(() => new Mutex(client, 'x', { minReplicaAcks: -1 }), RangeError);
    assert.throws(() => new Mutex(client, 'x', { minReplicaAcks: 1.5 }), RangeError);
    assert.throws(() => new Mutex(client, 'x', { replicaAckTimeoutMs: 0 }), RangeError);
    assert.throws(() => new RedlockMutex([client], 'x', { minReplicaAcks: 1 }), /independent primaries/);
  });

  for (const kind of clientKinds) {
    describe(kind.name, () => {
      let test_: TestClient;
      before(async () => {
        test_ = await kind.create(primary.url);
      });
      after(async () => {
        await test_?.close();
      });

      test('a grant counts once the replica has it; an extension waits for it too', async () => {
        const name = nextName();
        const lock = new Mutex(test_.client, name, { minReplicaAcks: 1, ttlMs: 1_500 });
        const before = await waitCalls(primary);
        const lease = await lock.acquire();
        assert.equal(await replica.command('EXISTS', lock.keys.lock), ':1\r\n', 'the replica has the lock');
        assert.equal(await waitCalls(primary), before + 1);
        // The watchdog's extension (at a third of the TTL) asks again.
        await until(
          async () => (await waitCalls(primary)) >= before + 2,
          'an extension waited for the replica',
        );
        assert.equal(lease.isHeld, true);
        assert.equal(await lease.release(), true);
      });

      test('a grant handed over by another client is confirmed too', async () => {
        const name = nextName();
        const lock = new FairMutex(test_.client, name, { minReplicaAcks: 1 });
        const first = await lock.acquire();
        const waiting = lock.acquire();
        await until(async () => (await lock.inspect()).queueLength === 1, 'the second caller waits');
        const before = await waitCalls(primary);
        assert.equal(await first.release(), true);
        const second = await waiting;
        assert.equal(await waitCalls(primary), before + 1);
        assert.ok(second.fencingToken > first.fencingToken);
        assert.equal(await second.release(), true);
      });

      test('no acknowledgement in time: the acquisition fails with NotReplicatedError and the lock is free', async () => {
        const name = nextName();
        const guarded = new Semaphore(test_.client, name, {
          limit: 1,
          minReplicaAcks: 1,
          replicaAckTimeoutMs: 100,
        });
        replica.pause();
        try {
          await assert.rejects(guarded.acquire(), (error: unknown) => {
            assert.ok(error instanceof NotReplicatedError);
            assert.equal(error.acked, 0);
            assert.equal(error.required, 1);
            return true;
          });
          await assert.rejects(guarded.tryAcquire(), NotReplicatedError);
        } finally {
          replica.resume();
        }
        const plain = new Semaphore(test_.client, name, { limit: 1 });
        const lease = await plain.tryAcquire();
        assert.ok(lease, 'the refused grants were given back');
        await lease.release();
      });
    });
  }

  test('a held lease whose extensions go unacknowledged is lost when its validity runs out', async () => {
    const client = await clientKinds[0]?.create(primary.url);
    assert.ok(client);
    try {
      const lock = new Mutex(client.client, nextName(), {
        minReplicaAcks: 1,
        replicaAckTimeoutMs: 100,
        ttlMs: 1_500,
      });
      const lease = await lock.acquire();
      replica.pause();
      let reason: unknown;
      try {
        reason = await abortedWith(lease.signal);
      } finally {
        replica.resume();
      }
      assert.ok(reason instanceof LockLostError);
      assert.equal(reason.reason, 'expired');
      assert.ok(reason.cause instanceof NotReplicatedError, `cause: ${String(reason.cause)}`);
      assert.equal(await lease.release(), false);
    } finally {
      await client.close();
    }
  });
});
