/**
 * The documented minimal ACL user (docs/operating-redis.md, "ACL"; the README links there) is
 * enough: a client logged in as that exact user (the command is read from the document) can wait
 * for, extend, inspect, hand off and release every lock kind, and give up waiting. A script calling a command the line leaves out
 * fails with NOPERM, so a missing command fails this test.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Redis as IORedis } from 'ioredis';
import {
  FairMutex,
  LockOwner,
  LockTimeoutError,
  Mutex,
  ReadWriteLock,
  ReentrantMutex,
  Semaphore,
} from '../../src/index.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { until } from '../fixtures/helpers.js';

const doc = readFileSync(join(import.meta.dirname, '../../docs/operating-redis.md'), 'utf8');
const setUser = /`(ACL SETUSER locker [^`]+)`/.exec(doc)?.[1];

describe('the documented minimal ACL user', () => {
  let server: RedisServer;
  const clients: IORedis[] = [];
  before(async () => {
    server = await startRedis();
  });
  after(async () => {
    for (const client of clients) client.disconnect();
    await server.stop();
  });
  const login = () => {
    const client = new IORedis(server.port, { username: 'locker', password: 'secret', lazyConnect: true });
    clients.push(client);
    return client;
  };

  test('is in docs/operating-redis.md', () => {
    assert.ok(setUser, 'docs/operating-redis.md: `ACL SETUSER locker …`');
  });

  // Each kind as a mutex (the Semaphore with one permit), constructed alike.
  const kinds = [
    ['Mutex', (client: IORedis, name: string, ttlMs = 30_000) => new Mutex(client, name, { ttlMs })],
    ['FairMutex', (client: IORedis, name: string, ttlMs = 30_000) => new FairMutex(client, name, { ttlMs })],
    [
      'ReentrantMutex',
      (client: IORedis, name: string, ttlMs = 30_000) => new ReentrantMutex(client, name, { ttlMs }),
    ],
    [
      'Semaphore',
      (client: IORedis, name: string, ttlMs = 30_000) => new Semaphore(client, name, { limit: 1, ttlMs }),
    ],
  ] as const;
  for (const [kindName, make] of kinds) {
    test(`runs every ${kindName} operation`, async () => {
      await server.command(...((setUser as string).split(' ') as [string, ...string[]]));
      const [a, b] = [login(), login()];
      const name = `acl-${kindName}`;
      const holder = await make(a, name, 5_000).acquire();
      await holder.extend(6_000);
      const waiter = make(b, name, 5_000);
      const waiting = waiter.acquire({ timeoutMs: 10_000 });
      await assert.rejects(
        make(b, name).acquire({ timeoutMs: 100 }),
        (e: unknown) => e instanceof LockTimeoutError,
        'a waiter that gives up',
      );
      // ...leaves the waiting state (its give-back runs scripts the user must be allowed too).
      const admin = new IORedis(server.port);
      clients.push(admin);
      const waiting1 = async () => (await admin.llen(waiter.keys.queue)) === 1;
      await until(waiting1, 'only the real waiter is left waiting');
      await until(async () => (await waiter.inspect()).locked, 'inspect() works');
      assert.equal(await holder.release(), true);
      const next = await waiting;
      assert.ok(next.fencingToken > holder.fencingToken);
      assert.equal(await next.release(), true);
      assert.equal(await waiter.releaseToken(next.token), true, 'a re-sent release');
    });
  }

  test("runs a ReentrantMutex holder's re-entries, extensions and out-of-order releases", async () => {
    await server.command(...((setUser as string).split(' ') as [string, ...string[]]));
    const owner = new LockOwner();
    const mutex = new ReentrantMutex(login(), 'acl-reentrant', { owner });
    const outer = await mutex.acquire();
    const inner = await mutex.acquire();
    await inner.extend(6_000);
    assert.ok(await inner.isOwned());
    assert.equal((await mutex.inspect()).holdCount, 2);
    assert.equal(await outer.release(), true);
    assert.equal(await inner.release(), true);
    assert.equal(await mutex.isLocked(), false);
  });

  test('runs a ReadWriteLock: readers, a writer, a downgrade', async () => {
    await server.command(...((setUser as string).split(' ') as [string, ...string[]]));
    const rw = new ReadWriteLock(login(), 'acl-rw', { ttlMs: 5_000 });
    const other = new ReadWriteLock(login(), 'acl-rw', { ttlMs: 5_000 });
    const write = await rw.writeLock().acquire();
    await write.extend(6_000);
    const reading = other.readLock().acquire({ timeoutMs: 10_000 });
    await until(async () => (await rw.inspect()).queueLength === 1, 'the reader is queued');
    assert.equal(await rw.downgrade(write), true);
    const read = await reading;
    assert.equal((await rw.inspect()).readers, 2);
    assert.equal(await read.release(), true);
    assert.equal(await write.release(), true);
    assert.equal(await rw.readLock().isLocked(), false);
  });
});
