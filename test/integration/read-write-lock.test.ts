/**
 * ReadWriteLock on a real Redis, for every client kind: what only a read-write lock does (the lock
 * contract runs for each side from tools/lock-kinds/registry.ts). Readers share, a writer is alone;
 * a recorder across processes shows readers overlapping readers and nothing overlapping a writer; a
 * writer behind a continuous stream of readers gets in within a bound; downgrade lets no writer in
 * between; nested calls (an upgrade) are refused before anything is sent; crashed holders of either
 * side expire. Events are ordered by observable state (queue length, readers, a key gone).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Lease, LockTimeoutError, ReadWriteLock, WouldDeadlockError } from '../../src/index.js';
import { type Child, spawnChild } from '../fixtures/child.js';
import { clientKinds } from '../fixtures/clients.js';
import { scriptCalls } from '../fixtures/commandstats.js';
import { awaitedLater, nameMaker, redisForSuite, until, within } from '../fixtures/helpers.js';

const freshName = nameMaker('rw-test');

interface Interval {
  readonly role: 'read' | 'write';
  readonly id: string;
  readonly enter: bigint;
  readonly exit: bigint;
  readonly fence: number;
}

for (const kind of clientKinds) {
  describe(`ReadWriteLock (${kind.name})`, () => {
    const redis = redisForSuite(kind);
    const queued = (rw: ReadWriteLock, count: number) =>
      until(async () => (await rw.inspect()).queueLength === count, `${count} waiter(s) queued`);

    test('many readers at once, or one writer; a release hands the lock to the waiting writer', async () => {
      // Each reader its own hold in Redis (read-write-batch.test.ts has a process's readers sharing one).
      const rw = new ReadWriteLock(redis.a.client, freshName(), { maxLocalHolds: 1 });
      const other = new ReadWriteLock(redis.b.client, rw.name);
      const readers = [
        await rw.readLock().acquire(),
        await other.readLock().acquire(),
        await rw.readLock().acquire(),
      ];
      let state = await rw.inspect();
      assert.equal(state.readers, 3);
      assert.equal(state.writer, undefined);
      assert.equal(await other.writeLock().tryAcquire(), null, 'readers keep a writer out');
      const writing = awaitedLater(other.writeLock().acquire({ timeoutMs: 15_000 }));
      await queued(rw, 1);
      await readers[0]?.release();
      await readers[1]?.release();
      assert.equal((await rw.inspect()).queueLength, 1, 'one reader left: the writer still waits');
      await readers[2]?.release();
      const writer = await within(writing, 5_000, 'the last reader hands the lock to the writer');
      state = await rw.inspect();
      assert.deepEqual([state.readers, state.writer], [0, writer.token]);
      assert.ok(writer.fencingToken > Math.max(...readers.map((lease) => lease.fencingToken)));
      assert.equal(await rw.readLock().tryAcquire(), null, 'a writer keeps readers out');
      assert.equal(await rw.writeLock().tryAcquire(), null, 'and other writers');
      await writer.release();
      assert.equal(await rw.readLock().isLocked(), false);
    });

    test('across processes: readers overlap readers, nothing overlaps a writer', async () => {
      const name = freshName();
      const children: Child[] = [];
      const spawn = (role: 'read' | 'write', id: string, meet?: number) =>
        spawnChild('rw-child.ts', kind, redis.server.url, name, id, { role, rounds: 8, holdMs: 15, meet });
      try {
        // Two readers hold at once before any writer exists (each first hold waits for the other),
        // so "readers share" does not rest on how a busy machine schedules six processes.
        for (let i = 0; i < 4; i += 1) children.push(spawn('read', `r${i}`, 2));
        // Their start-up (seconds each on a busy machine) is not part of the wait for the meeting.
        await Promise.all(children.map((child) => child.said('started')));
        await until(
          async () => Number(await redis.a.command('GET', `${name}:met`)) >= 2,
          'two readers hold at once',
        );
        for (let i = 0; i < 2; i += 1) children.push(spawn('write', `w${i}`));
        assert.deepEqual(await Promise.all(children.map((child) => child.exited)), Array(6).fill(0));
      } finally {
        for (const child of children) child.process.kill('SIGKILL');
      }
      const raw = (await redis.a.command('LRANGE', `${name}:intervals`, '0', '-1')) as string[];
      const intervals: Interval[] = raw.map((line) => {
        const [role, id, enter, exit, fence] = line.split('|') as [
          Interval['role'],
          string,
          string,
          string,
          string,
        ];
        return { role, id, enter: BigInt(enter), exit: BigInt(exit), fence: Number(fence) };
      });
      assert.equal(intervals.length, 48);
      const overlap = (x: Interval, y: Interval) => x.enter < y.exit && y.enter < x.exit;
      let readerOverlaps = 0;
      for (const [i, x] of intervals.entries()) {
        for (const y of intervals.slice(i + 1)) {
          if (!overlap(x, y)) continue;
          assert.ok(x.role === 'read' && y.role === 'read', `${x.role} ${x.id} overlaps ${y.role} ${y.id}`);
          readerOverlaps += 1;
        }
      }
      assert.ok(readerOverlaps > 0, 'readers did share the lock');
      // Writers' fencing tokens grow in the order they entered, above every earlier holder's.
      const byEnter = [...intervals].sort((x, y) => (x.enter < y.enter ? -1 : 1));
      for (const [i, writer] of byEnter.entries()) {
        if (writer.role !== 'write') continue;
        for (const earlier of byEnter.slice(0, i)) assert.ok(writer.fence > earlier.fence);
      }
    });

    test('a writer behind a continuous stream of readers gets in within a bound (FIFO)', async () => {
      const rw = new ReadWriteLock(redis.a.client, freshName());
      const readers = new ReadWriteLock(redis.b.client, rw.name);
      let stop = false;
      let reads = 0;
      // Four readers, each taking the lock again as soon as it let it go, holding it 40 ms: at every
      // moment some reader holds it, so a lock that let readers in while a writer waits would never
      // let the writer in.
      const stream = Array.from({ length: 4 }, async (_, i) => {
        await new Promise((resolve) => setTimeout(resolve, i * 10));
        while (!stop) {
          await readers.readLock().using(() => new Promise((resolve) => setTimeout(resolve, 40)));
          reads += 1;
        }
      });
      await until(async () => (await rw.inspect()).readers >= 2, 'the readers overlap');
      const asked = performance.now();
      const writer = await within(
        rw.writeLock().acquire({ timeoutMs: 10_000 }),
        10_000,
        'the writer gets in',
      );
      const waitedMs = performance.now() - asked;
      const readsWhileWriting = reads;
      // The readers that arrived after the writer queued behind it: none holds now.
      assert.equal((await rw.inspect()).readers, 0);
      await writer.release();
      await until(() => reads > readsWhileWriting, 'the stream goes on after the writer');
      stop = true;
      await Promise.all(stream);
      // A writer waits for the readers that held the lock when it asked (40 ms each), not for the
      // stream: the bound is generous for a loaded machine.
      assert.ok(waitedMs < 2_000, `the writer waited ${Math.round(waitedMs)} ms`);
    });

    test('downgrade: the writer becomes a reader in one step; readers queued at the head get in, no writer slips in', async () => {
      const rw = new ReadWriteLock(redis.a.client, freshName());
      const other = new ReadWriteLock(redis.b.client, rw.name);
      const write = await rw.writeLock().acquire();
      const reading = awaitedLater(other.readLock().acquire({ timeoutMs: 15_000 }));
      await queued(rw, 1);
      const writing = awaitedLater(other.writeLock().acquire({ timeoutMs: 15_000 }));
      await queued(rw, 2);
      assert.equal(await rw.downgrade(write), true);
      const reader = await within(reading, 5_000, 'the queued reader is let in by the downgrade');
      let state = await rw.inspect();
      assert.deepEqual([state.readers, state.writer, state.queueLength], [2, undefined, 1]);
      // The downgraded lease is the same lease: held, same fencing token, extensible.
      assert.ok(write.isHeld && (await write.isOwned()));
      await write.extend(20_000);
      assert.equal(await rw.downgrade(write), false, 'a read lease is not downgraded again');
      assert.equal(await rw.downgrade(reader), false);
      await write.release();
      state = await rw.inspect();
      assert.deepEqual([state.readers, state.queueLength], [1, 1], 'the writer still waits for the reader');
      await reader.release();
      const next = await within(writing, 5_000, 'the writer gets in after the readers');
      assert.ok(next.fencingToken > write.fencingToken && next.fencingToken > reader.fencingToken);
      assert.equal(await rw.downgrade(write), false, 'a released lease is not downgraded');
      await next.release();
    });

    test('an upgrade (or any nested call) inside using() is refused before anything is sent', async () => {
      const rw = new ReadWriteLock(redis.a.client, freshName());
      await rw.readLock().using(async () => {
        const before = await scriptCalls(redis.server);
        await assert.rejects(rw.writeLock().acquire(), WouldDeadlockError);
        await assert.rejects(
          rw.writeLock().tryAcquire(),
          (e: unknown) => e instanceof WouldDeadlockError && e.code === 'WOULD_DEADLOCK',
        );
        await assert.rejects(
          rw.writeLock().using(() => 1),
          /release the read lock first, or take the write lock and downgrade/,
        );
        await assert.rejects(
          rw.readLock().acquire(),
          WouldDeadlockError,
          'a nested read could queue behind a writer',
        );
        assert.equal(await scriptCalls(redis.server), before, 'nothing sent');
        // Another lock's sides are not affected.
        const other = await new ReadWriteLock(redis.a.client, freshName()).writeLock().acquire();
        await other.release();
      });
      await rw.writeLock().using(async () => {
        await assert.rejects(rw.readLock().tryAcquire(), WouldDeadlockError);
      });
      // Outside using(), an upgrade cannot be told from another caller: it waits like one (here
      // until its timeout), which is why the documented way is release-then-write, or downgrade.
      const read = await rw.readLock().acquire();
      await assert.rejects(rw.writeLock().acquire({ timeoutMs: 200 }), LockTimeoutError);
      await read.release();
    });

    test('a callback scheduled inside using() that runs after it returned may take either side', async () => {
      const rw = new ReadWriteLock(redis.a.client, freshName());
      let resume!: () => void;
      const gate = new Promise<void>((resolve) => {
        resume = resolve;
      });
      let later!: Promise<Lease | null>;
      await rw.readLock().using(async () => {
        // A continuation keeps the async context of the `using()` it was scheduled in.
        later = gate.then(() => rw.writeLock().tryAcquire());
      });
      resume();
      const write = await later;
      assert.ok(write, 'the read hold ended, so this is a new caller and the lock is free');
      await write.release();
    });

    test('a crashed reader, and a crashed writer, free the lock after their TTL', async () => {
      for (const [crashed, next] of [
        ['read', 'write'],
        ['write', 'read'],
      ] as const) {
        const name = freshName();
        const rw = new ReadWriteLock(redis.a.client, name);
        const child = spawnChild('rw-child.ts', kind, redis.server.url, name, crashed, {
          role: crashed,
          ttlMs: 1_000,
          hang: true,
        });
        try {
          await child.said('held');
          child.process.kill('SIGKILL');
          await child.exited;
          const side = next === 'read' ? rw.readLock() : rw.writeLock();
          const lease: Lease = await within(
            side.acquire({ timeoutMs: 10_000 }),
            10_000,
            `${next} after the TTL`,
          );
          const state = await rw.inspect();
          assert.equal(next === 'read' ? state.readers : Number(state.writer === lease.token), 1);
          await lease.release();
        } finally {
          child.process.kill('SIGKILL');
        }
      }
    });
  });
}
