/**
 * Redis unreachable, on every client library with its default options: every call ends within its
 * documented bound with the same typed error, `RedisUnavailableError` with the client's account as
 * `cause` (issue #20 items 9, 11, 12, 13). Before, a release took 63-73 s (ioredis' own retries), a
 * `tryAcquire()` the whole TTL, an `acquire()` ended in a `LockTimeoutError` without a cause, and a
 * release whose connection was reset rejected with the client's plain error on node-redis.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Redis as IORedis } from 'ioredis';
import { FairMutex, Mutex, RedisUnavailableError } from '../../src/index.js';
import { startRedis } from '../../tools/redis-server.js';
import { FaultProxy } from '../faults/toolkit/proxy.js';
import { clientKinds, loadGlide } from '../fixtures/clients.js';
import { nameMaker, until, within } from '../fixtures/helpers.js';

const freshName = nameMaker('unreachable');

/** What a call ended with: the error it rejected with (a resolution fails the test). */
function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => assert.fail(`resolved with ${String(value)}`),
    (error: unknown) => error,
  );
}

function assertUnavailable(error: unknown, what: string): void {
  assert.ok(error instanceof RedisUnavailableError, `${what}: ${String(error)}`);
  assert.ok(error.cause instanceof Error, `${what}: a cause says why (${String(error.cause)})`);
}

for (const kind of clientKinds) {
  describe(`Redis unreachable (${kind.name}, default client options)`, () => {
    test('release, tryAcquire and acquire against a server that died: RedisUnavailableError, within replyTimeoutMs', async () => {
      for (const Lock of [Mutex, FairMutex]) {
        const server = await startRedis();
        const client = await kind.create(server.url);
        try {
          const lock = new Lock(client.client, freshName(), { ttlMs: 30_000, replyTimeoutMs: 500 });
          const lease = await lock.acquire();
          await server.stop();
          // Bounded by replyTimeoutMs (500 ms), not by the client's own retries (a minute) or the TTL.
          assertUnavailable(await within(rejection(lease.release()), 10_000, 'release'), 'release');
          assertUnavailable(await within(rejection(lock.tryAcquire()), 10_000, 'tryAcquire'), 'tryAcquire');
          const acquiring = lock.acquire({ timeoutMs: 2_000 });
          assertUnavailable(await within(rejection(acquiring), 10_000, 'acquire'), 'acquire');
        } finally {
          await client.close();
          await server.stop();
        }
      }
    });

    test("extend() against a server that died: RedisUnavailableError within replyTimeoutMs, the client's error as cause", async () => {
      // Found by the cluster tests (a primary killed, cluster-primary-killed.test.ts): extend()
      // rejected with the client's own error (ioredis "Too many Cluster redirections", node-redis
      // TimeoutError, DisconnectsClientError), or waited for as long as the client queued it.
      const server = await startRedis();
      const client = await kind.create(server.url);
      try {
        const mutex = new Mutex(client.client, freshName(), { ttlMs: 30_000, replyTimeoutMs: 500 });
        const lease = await mutex.acquire();
        await server.stop();
        assertUnavailable(await within(rejection(lease.extend()), 10_000, 'extend'), 'extend');
        assert.ok(lease.isHeld, 'an extension that could not reach Redis loses nothing: the lease is valid');
        assert.equal(lease.signal.aborted, false);
      } finally {
        await client.close();
        await server.stop();
      }
    });

    test('a release whose connection is reset is sent again: it resolves, and the lock is free', async () => {
      const server = await startRedis();
      const proxy = await FaultProxy.start({ port: server.port });
      const client = await kind.create(proxy.url);
      try {
        const mutex = new Mutex(client.client, freshName());
        const lease = await mutex.acquire();
        let held = false;
        // The release reaches the proxy and goes no further; then the connection is reset under it.
        proxy.rule = (command) => {
          if (!command.script?.endsWith('-release')) return 'forward';
          held = true;
          return 'drop';
        };
        const releasing = lease.release();
        await until(() => held, 'the release was sent');
        proxy.rule = undefined;
        proxy.resetAll();
        assert.equal(await within(releasing, 10_000, 'release'), true);
        assert.equal(await mutex.isLocked(), false);
      } finally {
        await client.close();
        await proxy.close();
        await server.stop();
      }
    });
  });
}

describe('Redis unreachable (ioredis, a server that was never there)', () => {
  test('acquire() and tryAcquire() end in RedisUnavailableError with a cause, not a timeout', async () => {
    const server = await startRedis();
    const url = server.url;
    await server.stop();
    const client = new IORedis(url);
    client.on('error', () => {});
    try {
      const mutex = new Mutex(client, freshName(), { replyTimeoutMs: 500 });
      assertUnavailable(await within(rejection(mutex.tryAcquire()), 10_000, 'tryAcquire'), 'tryAcquire');
      const acquiring = mutex.acquire({ timeoutMs: 2_000 });
      assertUnavailable(await within(rejection(acquiring), 10_000, 'acquire'), 'acquire');
    } finally {
      client.disconnect();
    }
  });
});

describe('Redis unreachable (valkey-glide lazyConnect, a server that was never there)', () => {
  // GLIDE's createClient() fails when it cannot connect, unless `lazyConnect`: then the client is
  // handed over and its first command connects, and fails after GLIDE's connectionTimeout (2 s).
  test('acquire() and tryAcquire() end in RedisUnavailableError with a cause, not a timeout', async () => {
    const server = await startRedis();
    const { port } = server;
    await server.stop();
    const { GlideClient } = await loadGlide();
    const client = await GlideClient.createClient({
      addresses: [{ host: '127.0.0.1', port }],
      lazyConnect: true,
    });
    try {
      const mutex = new Mutex(client, freshName(), { replyTimeoutMs: 500 });
      assertUnavailable(await within(rejection(mutex.tryAcquire()), 10_000, 'tryAcquire'), 'tryAcquire');
      const acquiring = mutex.acquire({ timeoutMs: 2_000 });
      assertUnavailable(await within(rejection(acquiring), 10_000, 'acquire'), 'acquire');
    } finally {
      client.close();
    }
  });
});
