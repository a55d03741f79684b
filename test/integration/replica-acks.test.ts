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
  ReadWriteLock,
  RedlockMutex,
  Semaphore,
} from '../../src/index.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { clientKinds, type TestClient } from '../fixtures/clients.js';
import { abortedWith, awaitedLater, nameMaker, until, within } from '../fixtures/helpers.js';

const nextName = nameMaker('replica-acks');
/** How long a grant expected to be confirmed may wait for its ack: generous, for a busy machine. */
const ACK_MS = 10_000;

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
        const lock = new Mutex(test_.client, name, { minReplicaAcks: 1, replicaAckTimeoutMs: ACK_MS });
        const before = await waitCalls(primary);
        const lease = await lock.acquire();
        assert.equal(await replica.command('EXISTS', lock.keys.lock), ':1\r\n', 'the replica has the lock');
        assert.equal(await waitCalls(primary), before + 1);
        await lease.extend();
        assert.equal(await waitCalls(primary), before + 2, 'an extension waited for the replica');
        assert.equal(await lease.release(), true);
      });

      test('concurrent callers in one process each get a confirmed grant (no local batch)', async () => {
        const lock = new Mutex(test_.client, nextName(), { minReplicaAcks: 1, replicaAckTimeoutMs: ACK_MS });
        const before = await waitCalls(primary);
        await Promise.all([1, 2, 3].map(() => lock.using(async () => {}, { timeoutMs: 30_000 })));
        assert.equal(await waitCalls(primary), before + 3);
      });

      test('a grant handed over by another client is confirmed too: unacknowledged, it is refused', async () => {
        const other = await kind.create(primary.url);
        try {
          const name = nextName();
          const holder = await new FairMutex(other.client, name).acquire();
          const guarded = new FairMutex(test_.client, name, { minReplicaAcks: 1, replicaAckTimeoutMs: 100 });
          const waiting = awaitedLater(guarded.acquire({ timeoutMs: 30_000 }));
          await until(async () => (await guarded.inspect()).queueLength === 1, 'the guarded caller waits');
          replica.pause();
          try {
            assert.equal(await holder.release(), true);
            await assert.rejects(within(waiting, 20_000, 'the handed-over grant'), NotReplicatedError);
          } finally {
            replica.resume();
          }
          const lease = await new FairMutex(other.client, name).tryAcquire();
          assert.ok(lease, 'the refused grant was given back');
          await lease.release();
        } finally {
          await other.close();
        }
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

        const rw = new ReadWriteLock(test_.client, nextName(), {
          minReplicaAcks: 1,
          replicaAckTimeoutMs: 100,
        });
        replica.pause();
        try {
          await assert.rejects(rw.writeLock().acquire(), NotReplicatedError);
          await assert.rejects(rw.readLock().tryAcquire(), NotReplicatedError);
        } finally {
          replica.resume();
        }
      });
    });
  }

  test('a held lease whose extensions go unacknowledged is lost when its validity runs out', async () => {
    const client = await clientKinds[0]?.create(primary.url);
    assert.ok(client);
    try {
      const lock = new Mutex(client.client, nextName(), {
        minReplicaAcks: 1,
        // Long enough for the grant's ack on a busy machine, short against the TTL: the paused
        // replica's extensions fail well before validity runs out.
        replicaAckTimeoutMs: 1_000,
        ttlMs: 5_000,
      });
      const lease = await lock.acquire();
      replica.pause();
      let reason: unknown;
      try {
        reason = await within(abortedWith(lease.signal), 20_000, 'the lease is lost');
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
