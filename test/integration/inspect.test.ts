/**
 * What `console.log` shows of a lease and of a lock (issue #25 item 4): a short form with what a
 * reader wants (kind, name, token prefix, fencing token, time left), none of the internals (timers,
 * the backend, the client), which it dumped before.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { inspect } from 'node:util';
import { FairMutex, Mutex, ReadWriteLock, RedlockMutex, ReentrantMutex, Semaphore } from '../../src/index.js';
import { type ClientKind, clientKinds } from '../fixtures/clients.js';
import { nameMaker, redisForSuite } from '../fixtures/helpers.js';

const freshName = nameMaker('inspect');
const kind = clientKinds[0] as ClientKind;

describe(`util.inspect of leases and locks (${kind.name})`, () => {
  const redis = redisForSuite(kind);

  test('a lease: name, token prefix, fencing token, time left; then its state', async () => {
    const mutex = new Mutex(redis.a.client, freshName(), { ttlMs: 30_000 });
    const lease = await mutex.acquire();
    const shown = inspect(lease);
    assert.match(
      shown,
      new RegExp(
        `^Lease \\{ name: "${mutex.name}", token: '${lease.token.slice(0, 8)}…', fencingToken: ${lease.fencingToken}, remainingMs: \\d+ \\}$`,
      ),
    );
    await lease.release();
    assert.match(inspect(lease), /, released \}$/);
  });

  test('a lock: its kind and name', () => {
    const name = 'orders';
    const { client } = redis.a;
    assert.equal(inspect(new Mutex(client, name)), 'Mutex { name: "orders" }');
    assert.equal(inspect(new FairMutex(client, name)), 'FairMutex { name: "orders" }');
    assert.equal(inspect(new ReentrantMutex(client, name)), 'ReentrantMutex { name: "orders" }');
    assert.equal(inspect(new Semaphore(client, name, { limit: 2 })), 'Semaphore { name: "orders" }');
    assert.equal(inspect(new RedlockMutex([client], name)), 'RedlockMutex { name: "orders" }');
    const rw = new ReadWriteLock(client, name);
    assert.equal(inspect(rw), 'ReadWriteLock { name: "orders" }');
    assert.equal(inspect(rw.readLock()), 'ReadLock { name: "orders" }');
    assert.equal(inspect({ lock: rw.writeLock() }), '{ lock: WriteLock { name: "orders" } }');
  });
});
