/**
 * Bad input is refused with a typed error before anything is sent to Redis: every case below is
 * checked against the server's own command statistics.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  acquireLockWithTimeout,
  FairMutex,
  fencedWrite,
  Mutex,
  ReadWriteLock,
  type RedisClient,
  RedisExpLock,
  RedlockMutex,
  RedlockSemaphore,
  ReentrantMutex,
  releaseLock,
  Semaphore,
  UnsupportedClientError,
} from '../../src/index.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { clientKinds, type TestClient } from '../fixtures/clients.js';
import { commandCalls, resetStats } from '../fixtures/commandstats.js';

type Case = [
  label: string,
  run: (client: RedisClient) => unknown,
  expected: typeof TypeError | typeof RangeError | typeof UnsupportedClientError,
];

const cases: Case[] = [
  ['negative ttlMs', (c) => new Mutex(c, 'x', { ttlMs: -5 }), RangeError],
  ['zero ttlMs', (c) => new Mutex(c, 'x', { ttlMs: 0 }), RangeError],
  ['fractional ttlMs', (c) => new Mutex(c, 'x', { ttlMs: 1.5 }), RangeError],
  ['NaN ttlMs', (c) => new Mutex(c, 'x', { ttlMs: Number.NaN }), RangeError],
  ['string ttlMs', (c) => new Mutex(c, 'x', { ttlMs: '100' as unknown as number }), TypeError],
  ['ttlMs beyond 2^31-1', (c) => new Mutex(c, 'x', { ttlMs: 2 ** 40 }), RangeError],
  // Issue 7, item 14: TTLs that leave no validity after the drift margin used to spin.
  ['ttlMs of 3 (no validity after drift)', (c) => new Mutex(c, 'x', { ttlMs: 3 }), RangeError],
  [
    'ttlMs below the minimum for driftFactor 0.5',
    (c) => new Mutex(c, 'x', { ttlMs: 20, driftFactor: 0.5 }),
    RangeError,
  ],
  ['acquire with ttlMs of 2', (c) => new Mutex(c, 'x').acquire({ ttlMs: 2 }), RangeError],
  ['tryAcquire with ttlMs of 1', (c) => new Mutex(c, 'x').tryAcquire({ ttlMs: 1 }), RangeError],
  ['FairMutex acquire with ttlMs of 3', (c) => new FairMutex(c, 'x').acquire({ ttlMs: 3 }), RangeError],
  ['misspelt option `ttl`', (c) => new Mutex(c, 'x', { ttl: 100 } as object), TypeError],
  ['options not an object', (c) => new Mutex(c, 'x', 5 as unknown as object), TypeError],
  ['empty name', (c) => new Mutex(c, ''), RangeError],
  // Braces are allowed in names, except a leading `}` (it would leave the hash tag empty).
  ['name starting with `}`', (c) => new Mutex(c, '}'), RangeError],
  ['FairMutex name starting with `}`', (c) => new FairMutex(c, '}x'), RangeError],
  ['RedisExpLock key starting with `}`', (c) => new RedisExpLock('}a', { redis: c }), RangeError],
  ['acquireLockWithTimeout name starting with `}`', (c) => acquireLockWithTimeout(c, '}}'), RangeError],
  ['releaseLock name starting with `}`', (c) => releaseLock(c, '}', 'token'), RangeError],
  ['RedisExpLock with an empty key', (c) => new RedisExpLock('', { redis: c }), RangeError],
  ['name not a string', (c) => new Mutex(c, 42 as unknown as string), TypeError],
  ['prefix with a brace', (c) => new Mutex(c, 'x', { prefix: '{p}' }), RangeError],
  ['negative retries', (c) => new Mutex(c, 'x', { retries: -1 }), RangeError],
  ['negative timeoutMs', (c) => new Mutex(c, 'x').acquire({ timeoutMs: -1 }), RangeError],
  ['driftFactor above 0.5', (c) => new Mutex(c, 'x', { driftFactor: 2 }), RangeError],
  [
    'autoExtend not a boolean',
    (c) => new Mutex(c, 'x', { autoExtend: 'yes' as unknown as boolean }),
    TypeError,
  ],
  ['signal not an AbortSignal', (c) => new Mutex(c, 'x').acquire({ signal: {} as AbortSignal }), TypeError],
  ['unknown acquire option', (c) => new Mutex(c, 'x').acquire({ wait: 5 } as object), TypeError],
  [
    'waiting option given to tryAcquire',
    (c) => new Mutex(c, 'x').tryAcquire({ timeoutMs: 5 } as object),
    TypeError,
  ],
  ['using() without a function', (c) => new Mutex(c, 'x').using(5 as unknown as () => void), TypeError],
  ['clock without now()', (c) => new Mutex(c, 'x', { clock: {} as { now(): number } }), TypeError],
  // A JavaScript caller (or a cast) gets past the types: the runtime check still refuses it.
  [
    'not a Redis client',
    () => new Mutex({ get: () => 1 } as unknown as RedisClient, 'x'),
    UnsupportedClientError,
  ],
  ['null client', () => new Mutex(null as unknown as RedisClient, 'x'), UnsupportedClientError],
  ['releaseToken with an empty token', (c) => new Mutex(c, 'x').releaseToken(''), RangeError],
  ['releaseLock with a non-string token', (c) => releaseLock(c, 'x', 5 as unknown as string), TypeError],
  ['acquireLockWithTimeout with a negative timeout', (c) => acquireLockWithTimeout(c, 'x', -1), RangeError],
  ['RedisExpLock without redis', () => new RedisExpLock('x', {} as never), TypeError],
  ['RedisExpLock with negative retries', (c) => new RedisExpLock('x', { redis: c, retries: -2 }), RangeError],
  [
    'RedisExpLock with a string expiry',
    (c) => new RedisExpLock('x', { redis: c, expiry: '5' as unknown as number }),
    TypeError,
  ],
  ['fencedWrite with token 0', (c) => fencedWrite(c, 'res', 0, 'v'), RangeError],
  ['fencedWrite with a non-string key', (c) => fencedWrite(c, 5 as unknown as string, 1, 'v'), TypeError],
  ['Semaphore without a limit', (c) => new Semaphore(c, 'x', {} as { limit: number }), TypeError],
  ['Semaphore with limit 0', (c) => new Semaphore(c, 'x', { limit: 0 }), RangeError],
  ['Semaphore with a negative limit', (c) => new Semaphore(c, 'x', { limit: -3 }), RangeError],
  ['Semaphore with a fractional limit', (c) => new Semaphore(c, 'x', { limit: 2.5 }), RangeError],
  [
    'Semaphore with a string limit',
    (c) => new Semaphore(c, 'x', { limit: '3' as unknown as number }),
    TypeError,
  ],
  [
    'Semaphore with permits above its limit',
    (c) => new Semaphore(c, 'x', { limit: 2, permits: 3 }),
    RangeError,
  ],
  [
    'Semaphore acquire of 0 permits',
    (c) => new Semaphore(c, 'x', { limit: 2 }).acquire({ permits: 0 }),
    RangeError,
  ],
  [
    'Semaphore acquire of fractional permits',
    (c) => new Semaphore(c, 'x', { limit: 2 }).acquire({ permits: 1.5 }),
    RangeError,
  ],
  [
    'Semaphore acquire of more permits than its limit',
    (c) => new Semaphore(c, 'x', { limit: 2 }).acquire({ permits: 3 }),
    RangeError,
  ],
  [
    'Semaphore tryAcquire of more permits than its limit',
    (c) => new Semaphore(c, 'x', { limit: 2 }).tryAcquire({ permits: 3 }),
    RangeError,
  ],
  [
    'Semaphore using() with negative permits',
    (c) => new Semaphore(c, 'x', { limit: 2 }).using(() => 1, { permits: -1 }),
    RangeError,
  ],
  ['Semaphore setLimit(0)', (c) => new Semaphore(c, 'x', { limit: 2 }).setLimit(0), RangeError],
  ['Semaphore setLimit(1.5)', (c) => new Semaphore(c, 'x', { limit: 2 }).setLimit(1.5), RangeError],
  ['permits given to a Mutex', (c) => new Mutex(c, 'x').acquire({ permits: 2 } as object), TypeError],
  [
    'RedlockMutex without a client list',
    (c) => new RedlockMutex(c as unknown as RedisClient[], 'x'),
    TypeError,
  ],
  ['RedlockMutex with no clients', () => new RedlockMutex([], 'x'), RangeError],
  ['RedlockMutex with the same client twice', (c) => new RedlockMutex([c, c], 'x'), RangeError],
  [
    'RedlockMutex with a non-client',
    (c) => new RedlockMutex([c, {} as RedisClient], 'x'),
    UnsupportedClientError,
  ],
  ['RedlockMutex with an empty name', (c) => new RedlockMutex([c], ''), RangeError],
  ['RedlockMutex with nodeTimeoutMs 0', (c) => new RedlockMutex([c], 'x', { nodeTimeoutMs: 0 }), RangeError],
  [
    'RedlockMutex with a string nodeTimeoutMs',
    (c) => new RedlockMutex([c], 'x', { nodeTimeoutMs: '50' as unknown as number }),
    TypeError,
  ],
  ['RedlockMutex acquire with ttlMs 3', (c) => new RedlockMutex([c], 'x').acquire({ ttlMs: 3 }), RangeError],
  [
    'RedlockMutex nodeTimeoutMs on a call',
    (c) => new RedlockMutex([c], 'x').acquire({ nodeTimeoutMs: 5 } as object),
    TypeError,
  ],
  [
    'RedlockSemaphore without a limit',
    (c) => new RedlockSemaphore([c], 'x', {} as { limit: number }),
    TypeError,
  ],
  ['RedlockSemaphore with limit 0', (c) => new RedlockSemaphore([c], 'x', { limit: 0 }), RangeError],
  [
    'RedlockSemaphore with more permits than its limit',
    (c) => new RedlockSemaphore([c], 'x', { limit: 2, permits: 3 }),
    RangeError,
  ],
  [
    'RedlockSemaphore acquire of more permits than its limit',
    (c) => new RedlockSemaphore([c], 'x', { limit: 2 }).acquire({ permits: 3 }),
    RangeError,
  ],
  ['RedlockSemaphore with no clients', () => new RedlockSemaphore([], 'x', { limit: 1 }), RangeError],
  [
    'RedlockSemaphore with a non-client',
    (c) => new RedlockSemaphore([c, {} as RedisClient], 'x', { limit: 1 }),
    UnsupportedClientError,
  ],
  [
    'RedlockSemaphore with minReplicaAcks',
    (c) => new RedlockSemaphore([c], 'x', { limit: 1, minReplicaAcks: 1 }),
    RangeError,
  ],
  [
    'RedlockSemaphore handOffAfterMs (a RedlockMutex option)',
    (c) => new RedlockSemaphore([c], 'x', { limit: 1, handOffAfterMs: 5 } as object as { limit: number }),
    TypeError,
  ],
  [
    'ReentrantMutex with an owner that is not a LockOwner',
    (c) => new ReentrantMutex(c, 'x', { owner: 'me' as never }),
    TypeError,
  ],
  [
    'ReentrantMutex acquire with an owner that is not a LockOwner',
    (c) => new ReentrantMutex(c, 'x').acquire({ owner: {} as never }),
    TypeError,
  ],
  [
    'ReentrantMutex using() with an owner that is not a LockOwner',
    (c) => new ReentrantMutex(c, 'x').using(() => 1, { owner: 5 as never }),
    TypeError,
  ],
  [
    'ReentrantMutex using() without a function',
    (c) => new ReentrantMutex(c, 'x').using(5 as never),
    TypeError,
  ],
  [
    'ReentrantMutex using() with options not an object',
    (c) => new ReentrantMutex(c, 'x').using(() => 1, 5 as never),
    TypeError,
  ],
  ['ReadWriteLock with a misspelt option', (c) => new ReadWriteLock(c, 'x', { ttl: 5 } as object), TypeError],
  ['ReadWriteLock with a name starting with `}`', (c) => new ReadWriteLock(c, '}x'), RangeError],
  [
    'ReadWriteLock read with permits',
    (c) => new ReadWriteLock(c, 'x').readLock().acquire({ permits: 2 } as object),
    TypeError,
  ],
  [
    'ReadWriteLock write using() without a function',
    (c) => new ReadWriteLock(c, 'x').writeLock().using(5 as never),
    TypeError,
  ],
  ['owner given to a Mutex', (c) => new Mutex(c, 'x').acquire({ owner: 1 } as object), TypeError],
];

for (const kind of clientKinds) {
  describe(`bad input is refused before reaching Redis (${kind.name})`, () => {
    let server: RedisServer;
    let client: TestClient;

    before(async () => {
      server = await startRedis();
      client = await kind.create(server.url);
    });

    after(async () => {
      await client.close();
      await server.stop();
    });

    test(`${cases.length} kinds of bad input, typed errors, zero commands`, async () => {
      assert.ok(cases.length >= 20);
      // A lease with bad extend arguments must not touch Redis either.
      const lease = await new Mutex(client.client, 'held', { autoExtend: false }).acquire();
      await resetStats(server);
      for (const [label, run, expected] of cases) {
        await assert.rejects(
          async () => run(client.client),
          (error: unknown) => {
            assert.ok(error instanceof expected, `${label}: got ${String(error)}`);
            assert.ok((error as Error).message.length > 20, `${label}: a message that explains`);
            return true;
          },
          label,
        );
      }
      await assert.rejects(lease.extend(-1), RangeError);
      await assert.rejects(lease.extend(Number.POSITIVE_INFINITY), RangeError);
      await assert.rejects(lease.extend(3), RangeError);
      const calls = await commandCalls(server);
      assert.deepEqual(calls, {}, 'no command reached Redis');
      assert.equal(await lease.release(), true, 'and no state was changed or lost');
    });

    test('messages name the argument and the value', async () => {
      assert.throws(() => new Mutex(client.client, 'x', { ttlMs: -5 }), {
        message: 'Expected `ttlMs` to be a positive integer of milliseconds, got `-5` (number)',
      });
    });
  });
}
