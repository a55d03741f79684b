/**
 * Lock names with `{` and `}` (issue 8): every key of one lock lands in one Redis Cluster slot, as
 * a real server computes it, and every lock type works with such names. A name starting with `}` is
 * refused, and the slots below show why. The slot Locksmith computes itself (to send WAIT to a
 * lock's primary on a cluster) is the server's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { keySlot } from '../../src/adapters/key-slot.js';
import { acquireLockWithTimeout, FairMutex, Mutex, RedisExpLock, releaseLock } from '../../src/index.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { clientKinds, ioredisKind, type TestClient } from '../fixtures/clients.js';
import { redisForSuite, until } from '../fixtures/helpers.js';
import { acceptedName, acceptedPrefix, everyKeyOf } from '../fixtures/lock-key-names.js';
import { ownerTokenOf } from '../fixtures/lock-value.js';

const namesWithBraces = ['a}b', '{x', '{', 'a{b}c', '{}', 'a}:fence', 'a}'];

describe('hash tags of names with braces, as Redis computes them', () => {
  let server: RedisServer;
  let admin: TestClient;

  // CLUSTER KEYSLOT answers only on a server started in cluster mode; it needs no slots assigned.
  before(async () => {
    server = await startRedis({ args: ['--cluster-enabled', 'yes'] });
    admin = await ioredisKind.create(server.url);
  });

  after(async () => {
    await admin.close();
    await server.stop();
  });

  const slotsOf = (keys: string[]) =>
    Promise.all(keys.map(async (key) => Number(await admin.command('CLUSTER', 'KEYSLOT', key))));

  test('every key of a lock is in the slot of its name up to the first `}`', async () => {
    const check = async (prefix: string, name: string) => {
      const slots = await slotsOf(everyKeyOf(prefix, name));
      const firstClose = name.indexOf('}');
      const [tagSlot] = await slotsOf([firstClose === -1 ? name : name.slice(0, firstClose)]);
      assert.deepEqual(new Set(slots), new Set([tagSlot]), `${prefix} / ${name}`);
    };
    for (const name of namesWithBraces) await check('locksmith', name);
    await fc.assert(fc.asyncProperty(acceptedPrefix, acceptedName, check), { numRuns: 150 });
  });

  test("the slot Locksmith computes for a key (WAIT's route on a cluster) is the server's", async () => {
    const keys = ['foo', '{user1000}.following', 'a{}b', '{}', 'x{y', 'x}y{z}', '{a}{b}', 'k{{x}}', 'é{ü}'];
    const lockKeys = namesWithBraces.flatMap((name) => everyKeyOf('locksmith', name));
    assert.deepEqual([...keys, ...lockKeys].map(keySlot), await slotsOf([...keys, ...lockKeys]));
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ unit: 'grapheme', maxLength: 24 }),
          fc.string({ unit: fc.constantFrom('{', '}', 'a', 'b', ':', 'é', '日'), maxLength: 12 }),
        ),
        async (key) => {
          assert.equal(keySlot(key), (await slotsOf([key]))[0], JSON.stringify(key));
        },
      ),
      { numRuns: 200 },
    );
  });

  test('a name starting with `}` would scatter its keys over several slots (hence refused)', async () => {
    for (const name of ['}', '}x', '}{a}']) {
      const slots = await slotsOf(everyKeyOf('locksmith', name));
      assert.ok(new Set(slots).size > 1, `${name}: ${slots.join(',')}`);
      assert.throws(() => new Mutex(admin.client, name), /hash tag empty/);
    }
  });
});

for (const kind of clientKinds) {
  describe(`locks named with braces (${kind.name})`, () => {
    const clients = redisForSuite(kind, { unhandledRejections: false });

    test('Mutex: the key is `locksmith:{name}`, exclusive per name, fenced per name', async () => {
      for (const name of namesWithBraces) {
        const lease = await new Mutex(clients.a.client, name).acquire();
        assert.equal(ownerTokenOf(await clients.a.command('GET', `locksmith:{${name}}`)), lease.token, name);
        assert.equal(Number(await clients.a.command('GET', `locksmith:{${name}}:fence`)), lease.fencingToken);
        assert.equal(await new Mutex(clients.b.client, name).tryAcquire(), null, `${name} is taken`);
        assert.equal(await lease.release(), true);
      }
    });

    test('names that share a hash tag or spell another key are still different locks', async () => {
      // `a}b`, `a}` and `a` all hash on `a`; `a}:fence` has a lock key that reads like a's fence.
      const names = ['a', 'a}b', 'a}', 'a}:fence'];
      const holders = await Promise.all(names.map((n) => new Mutex(clients.a.client, n).tryAcquire()));
      for (const [i, name] of names.entries()) {
        assert.ok(holders[i], `${name} was free while the others were held`);
        assert.equal(
          ownerTokenOf(await clients.a.command('GET', `locksmith:{${name}}`)),
          holders[i]?.token,
          name,
        );
      }
      for (const lease of holders) assert.equal(await lease?.release(), true);
    });

    test('FairMutex: a waiter on `a}b` is handed the lock on release', async () => {
      const first = await new FairMutex(clients.a.client, 'a}b').acquire();
      const waiting = new FairMutex(clients.b.client, 'a}b').acquire({ timeoutMs: 5_000 });
      // The waiter is queued before the release, so the release hands the lock over.
      await until(
        async () => Number(await clients.a.command('LLEN', 'locksmith:{a}b}:queue')) === 1,
        'the waiter is queued',
      );
      assert.equal(await first.release(), true);
      const second = await waiting;
      assert.equal(ownerTokenOf(await clients.a.command('GET', 'locksmith:{a}b}')), second.token);
      assert.ok(second.fencingToken > first.fencingToken);
      assert.equal(await second.release(), true);
    });

    test('RedisExpLock and the Redis in Action functions accept them too', async () => {
      const lock = new RedisExpLock('{x', { redis: clients.a.client });
      assert.equal(await lock.tryLock(), true);
      assert.equal(await new RedisExpLock('{x', { redis: clients.b.client }).keyLocked(), true);
      assert.equal(await lock.unlock(), true);
      const token = await acquireLockWithTimeout(clients.a.client, 'a{b}c', 1, 10);
      assert.equal(typeof token, 'string');
      assert.equal(ownerTokenOf(await clients.a.command('GET', 'locksmith:{a{b}c}')), token);
      assert.equal(await releaseLock(clients.b.client, 'a{b}c', token as string), true);
    });
  });
}
