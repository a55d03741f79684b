/**
 * A ReadWriteLock's readers in one process reuse the read holds it has in Redis (the Semaphore's
 * batch, src/batching/local-batch.ts, a run per read hold): 20 readers of one process hold together
 * and cost under one Redis call per acquisition; across two clients, at most one writer and never a
 * writer with readers; a writer of the process gets in while its readers keep coming (no hold is
 * passed on while it waits); another process's writer gets in within the bounds; a lost read hold
 * revokes its local holder; each holder has its own fencing token. Counts and order, not timings.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Lease, LockLostError, LockTimeoutError, ReadWriteLock } from '../../src/index.js';
import { clientKinds } from '../fixtures/clients.js';
import { resetStats, scriptCalls } from '../fixtures/commandstats.js';
import { assertFencing, contend, type Hold, permitPttl } from '../fixtures/contend.js';
import { abortedWith, nameMaker, redisForSuite, until } from '../fixtures/helpers.js';

const name = nameMaker('rw-batch');
/** Runs bounded by holds alone: a busy machine must not end them early by time. */
const untimed = { maxLocalBatchMs: 60_000 };
const kind = clientKinds[0] as (typeof clientKinds)[number];

/** Readers of one process cycling until `stop()`: how many reads each granted, in grant order. */
function readerStream(rw: ReadWriteLock, loops: number) {
  let stopped = false;
  let reads = 0;
  const done = Promise.all(
    Array.from({ length: loops }, async () => {
      while (!stopped) {
        const lease = await rw.readLock().acquire();
        reads += 1;
        await new Promise<void>((resolve) => setImmediate(resolve));
        assert.equal(await lease.release(), true);
      }
    }),
  );
  return {
    get reads() {
      return reads;
    },
    stop: () => {
      stopped = true;
      return done;
    },
  };
}

describe(`a ReadWriteLock's readers in one process reuse its read holds (${kind.name})`, () => {
  const redis = redisForSuite(kind);

  test('one process, 20 readers: they hold together, under one Redis call per acquisition', async () => {
    const rw = new ReadWriteLock(redis.a.client, name(), untimed);
    await resetStats(redis.server);
    const { holds, peak } = await contend(() => rw.readLock(), 20, 10, Number.MAX_SAFE_INTEGER);
    const scripts = await scriptCalls(redis.server);
    assert.equal(holds.length, 200);
    assert.ok(peak > 1, 'readers of one process hold at once');
    assertFencing(holds);
    assert.ok(new Set(holds.map((hold) => hold.token)).size < 200, 'read holds were passed on');
    assert.ok(scripts < 200, `${scripts} script calls for 200 acquisitions`);
  });

  test('two clients, readers and writers: at most one writer, never a writer with readers, each its own fencing token', async () => {
    const lockName = name();
    const a = new ReadWriteLock(redis.a.client, lockName, { maxLocalHolds: 4 });
    const b = new ReadWriteLock(redis.b.client, lockName, { maxLocalHolds: 4 });
    let readers = 0;
    let writers = 0;
    const holds: Hold[] = [];
    await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const rw = i % 2 === 0 ? a : b;
        for (let round = 0; round < 8; round += 1) {
          const write = (i + round) % 5 === 0;
          const lease = await (write ? rw.writeLock() : rw.readLock()).acquire();
          if (write) {
            assert.equal(readers + writers, 0, `a writer with ${readers} readers and ${writers} writers`);
            writers += 1;
          } else {
            assert.equal(writers, 0, 'a reader with a writer');
            readers += 1;
          }
          holds.push({ token: lease.token, fencingToken: lease.fencingToken });
          await new Promise<void>((resolve) => setImmediate(resolve));
          if (write) writers -= 1;
          else readers -= 1;
          assert.equal(await lease.release(), true);
        }
      }),
    );
    assert.equal(holds.length, 96);
    assertFencing(holds);
  });

  /**
   * Four readers of `rw` cycling, then a writer (`write()`): how many reads were granted from its
   * call to its grant, once no reader held beside it and the readers went on after it.
   */
  async function readsWhileWriting(rw: ReadWriteLock, write: () => Promise<Lease>): Promise<number> {
    const stream = readerStream(rw, 4);
    await until(() => stream.reads >= 50, 'the readers share their holds');
    const before = stream.reads;
    const writer = await write();
    const during = stream.reads - before;
    assert.equal((await rw.inspect()).readers, 0, 'no reader holds beside the writer');
    await writer.release();
    const after = stream.reads;
    await until(() => stream.reads > after, 'the readers go on after the writer');
    await stream.stop();
    return during;
  }

  test('a writer of the process gets in while its readers keep coming: nobody joins their hold while it waits', async () => {
    // Bounds no hold would reach: only the waiting writer closes the readers' hold.
    const rw = new ReadWriteLock(redis.a.client, name(), { ...untimed, maxLocalHolds: 1_000_000 });
    const during = await readsWhileWriting(rw, () => rw.writeLock().acquire());
    // Each of the four readers may be joining (a reservation in flight), and one asking Redis may get in ahead.
    assert.ok(during <= 8, `${during} reads granted while the writer waited`);
  });

  test("another process's writer gets in once the readers' hold reaches its bounds", async () => {
    const lockName = name();
    const maxLocalHolds = 5;
    const rw = new ReadWriteLock(redis.a.client, lockName, { ...untimed, maxLocalHolds });
    const other = new ReadWriteLock(redis.b.client, lockName);
    const during = await readsWhileWriting(rw, () => other.writeLock().acquire());
    // The hold it found takes at most `maxLocalHolds` readers; readers asking Redis after the writer
    // queued wait behind it. Generous: holds begun while its request was on its way take as many.
    assert.ok(during <= 2 * 4 * maxLocalHolds, `${during} reads granted while the writer waited`);
  });

  test('readers of one process hold one read hold at once, each its own fencing token and validity within it; its loss revokes them all', async () => {
    const lockName = name();
    const rw = new ReadWriteLock(redis.a.client, lockName, { ttlMs: 900, ...untimed });
    const other = new ReadWriteLock(redis.b.client, lockName);
    const first = await rw.readLock().acquire();
    const second = await rw.readLock().acquire();
    assert.equal(second.token, first.token, 'the second reader joined the hold');
    assert.equal((await rw.inspect()).readers, 1, 'one read hold in Redis for both');
    assert.ok(second.fencingToken > first.fencingToken);
    const theirs = await other.readLock().acquire();
    const third = await rw.readLock().acquire();
    assert.equal(third.token, first.token);
    assert.ok(third.fencingToken > second.fencingToken, 'rising along the hold');
    assert.notEqual(third.fencingToken, theirs.fencingToken);
    const pttl = await permitPttl(redis.a.command, rw.readLock().keys.lock, third.token);
    assert.ok(
      third.remainingMs > 0 && third.remainingMs <= pttl,
      `validity ${third.remainingMs} ms, ${pttl} ms in Redis`,
    );
    // Someone removes the hold (an operator's `release --force`): the first watchdog to extend finds it gone.
    const lost = [first, second, third].map((lease) => abortedWith(lease.signal));
    const members = (await redis.a.command('ZRANGE', rw.readLock().keys.lock, '0', '-1')) as string[];
    const member = members.find((m) => m.endsWith(first.token)) as string;
    assert.equal(await redis.a.command('ZREM', rw.readLock().keys.lock, member), 1);
    for (const reason of await Promise.all(lost)) assert.ok(reason instanceof LockLostError);
    for (const lease of [first, second, third]) assert.equal(await lease.release(), false);
    const next: Lease = await rw.readLock().acquire();
    assert.notEqual(next.token, first.token, 'a read hold of its own from Redis');
    await next.release();
    await theirs.release();
  });

  test('the last reader to leave releases the hold in Redis', async () => {
    const rw = new ReadWriteLock(redis.a.client, name(), untimed);
    const first = await rw.readLock().acquire();
    const second = await rw.readLock().acquire();
    assert.equal(await first.release(), true);
    assert.equal((await rw.inspect()).readers, 1, 'still held for the second');
    assert.equal(await second.release(), true);
    assert.equal(await rw.readLock().isLocked(), false);
  });
  test('releaseToken() of a shared hold revokes every reader of it; a reader with another ttlMs holds apart', async () => {
    const rw = new ReadWriteLock(redis.a.client, name(), untimed);
    const first = await rw.readLock().acquire();
    const second = await rw.readLock().acquire();
    const apart = await rw.readLock().acquire({ ttlMs: 20_000 });
    assert.equal(second.token, first.token);
    assert.notEqual(apart.token, first.token, 'another TTL: a hold of its own');
    assert.equal(await rw.readLock().releaseToken(first.token), true);
    // At once, not at their next extension.
    for (const lease of [first, second]) assert.ok(lease.signal.reason instanceof LockLostError);
    assert.equal(apart.isHeld, true, 'the other hold is not touched');
    assert.equal((await rw.inspect()).readers, 1);
    await apart.release();
  });
  test("a reader waiting for another reader's ask to Redis gives up at its own timeout", async () => {
    const lockName = name();
    const rw = new ReadWriteLock(redis.a.client, lockName, untimed);
    const other = new ReadWriteLock(redis.b.client, lockName);
    const writer = await other.writeLock().acquire();
    const asking = rw.readLock().acquire();
    await until(async () => (await rw.inspect()).queueLength === 1, 'the asking reader queued in Redis');
    await assert.rejects(rw.readLock().acquire({ timeoutMs: 100 }), LockTimeoutError);
    assert.equal((await rw.inspect()).queueLength, 1, 'it never queued in Redis');
    await writer.release();
    await (await asking).release();
  });
});
