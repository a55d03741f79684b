/**
 * Trust work (issue 7), client side: errors a retry cannot fix fail fast with typed errors (item 12),
 * the server is checked once per client for Redis >= 5 (item 18), Locksmith's own subscriber
 * connection does not inherit the user's fail-fast options and never leaks (item 8), and subscribe
 * failures are reported as events (item 15). Every Redis-touching case runs on a real redis-server.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { contextFor } from '../../src/adapters/client-context.js';
import { isTransientRedisError, runScript } from '../../src/adapters/run-script.js';
import { hubFor } from '../../src/adapters/subscriber-hub.js';
import { type LockError, UnexpectedReplyError } from '../../src/errors.js';
import { type LockEvent, subscribeLockEvents } from '../../src/events.js';
import { Mutex } from '../../src/index.js';
import { handOffInspect } from '../../src/protocol/hand-off.js';
import { lockKeys } from '../../src/protocol/keys.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { bundled } from '../fixtures/bundle.js';
import { type ClientKind, clientKinds, failFastClientKinds, type TestClient } from '../fixtures/clients.js';
import { resetStats, scriptCalls } from '../fixtures/commandstats.js';
import { until } from '../fixtures/helpers.js';

const childFile = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/mutex-waiter-child.ts');

/** "Fast" for an error a retry cannot fix: no retrying, no waiting for a timeout. */
const FAST_MS = 1_000;

let n = 0;
const lockName = (tag: string) => {
  n += 1;
  return `trust-${tag.replace(/\W/g, '')}-${n}`;
};

/** Awaits `promise`, expecting a rejection; returns it with how long it took. */
async function rejection(promise: Promise<unknown>): Promise<{ error: LockError; ms: number }> {
  const started = performance.now();
  try {
    await promise;
  } catch (error) {
    return { error: error as LockError, ms: performance.now() - started };
  }
  assert.fail('expected a rejection');
}

/** Connections the server has open for `user` (from CLIENT LIST). */
async function connectionsOf(server: RedisServer, user: string): Promise<number> {
  const list = await server.command('CLIENT', 'LIST');
  return list.split('\n').filter((line) => line.includes(` user=${user} `)).length;
}

describe('error classification (item 12)', () => {
  test('isTransientRedisError: true exactly for errors that are not LockErrors', () => {
    assert.equal(isTransientRedisError(new UnexpectedReplyError('mutex-acquire', 'junk')), false);
    assert.equal(isTransientRedisError(new Error('connect ECONNREFUSED 127.0.0.1:1')), true);
    assert.equal(
      isTransientRedisError(new Error("Stream isn't writeable and enableOfflineQueue options is false")),
      true,
    );
    assert.equal(isTransientRedisError(new Error('LOADING Redis is loading the dataset in memory')), true);
  });
});

for (const kind of clientKinds) {
  describe(`fail fast on what a retry cannot fix (item 12, ${kind.name})`, () => {
    let server: RedisServer;
    let c: TestClient;

    before(async () => {
      server = await startRedis();
      c = await kind.create(server.url);
    });
    after(async () => {
      await c.close();
      await server.stop();
    });

    test('a closed client: tryAcquire() and acquire() reject at once with CLIENT_CLOSED', async () => {
      const closed = await kind.create(server.url);
      const mutex = new Mutex(closed.client, lockName(kind.name));
      await closed.close();
      for (const attempt of [() => mutex.tryAcquire(), () => mutex.acquire({ timeoutMs: 10_000 })]) {
        const { error, ms } = await rejection(attempt());
        assert.equal(error.code, 'CLIENT_CLOSED', String(error));
        assert.ok(ms < FAST_MS, `rejected after ${ms} ms`);
      }
    });

    test('a client closed while a script is in flight: CLIENT_CLOSED with the client error as cause', async () => {
      const closing = await kind.create(server.url);
      const mutex = new Mutex(closing.client, lockName(kind.name));
      await mutex.isLocked(); // past the server check
      // The server holds back its reply, so the script is in flight when the client closes.
      await server.pauseClients(500);
      const pending = rejection(mutex.tryAcquire());
      await new Promise((resolve) => setTimeout(resolve, 50));
      await closing.close();
      const { error, ms } = await pending;
      assert.equal(error.code, 'CLIENT_CLOSED', String(error));
      assert.ok(error.cause instanceof Error, 'the client error is the cause');
      assert.ok(ms < FAST_MS, `rejected after ${ms} ms`);
    });

    const { createUnconnected } = kind;
    if (createUnconnected) {
      test('a node-redis client never connect()ed: CLIENT_CLOSED saying to call connect()', async () => {
        const client = await createUnconnected(server.url);
        const mutex = new Mutex(client, lockName(kind.name));
        for (const attempt of [() => mutex.tryAcquire(), () => mutex.acquire({ timeoutMs: 10_000 })]) {
          const { error, ms } = await rejection(attempt());
          assert.equal(error.code, 'CLIENT_CLOSED', String(error));
          assert.match(error.message, /connect\(\)/);
          assert.ok(ms < FAST_MS, `rejected after ${ms} ms`);
        }
      });
    }

    test('a server error from a script (WRONGTYPE): REDIS_ERROR with the server error as cause', async () => {
      const mutex = new Mutex(c.client, lockName(kind.name));
      await server.command('HSET', mutex.keys.lock, 'not', 'a string');
      for (const attempt of [() => mutex.tryAcquire(), () => mutex.acquire({ timeoutMs: 10_000 })]) {
        const { error, ms } = await rejection(attempt());
        assert.equal(error.code, 'REDIS_ERROR', String(error));
        assert.match(String((error.cause as Error).message), /WRONGTYPE/);
        assert.ok(ms < FAST_MS, `rejected after ${ms} ms`);
      }
    });

    test('missing ACL key permission (NOPERM): REDIS_ERROR, not retried', async () => {
      await server.command('ACL', 'SETUSER', 'nokeys', 'on', '>pw', '~other:*', '&*', '+@all');
      const restricted = await kind.create(server.url.replace('redis://', 'redis://nokeys:pw@'));
      try {
        const mutex = new Mutex(restricted.client, lockName(kind.name));
        const { error, ms } = await rejection(mutex.acquire({ timeoutMs: 10_000 }));
        assert.equal(error.code, 'REDIS_ERROR', String(error));
        assert.match(String((error.cause as Error).message), /NOPERM/);
        assert.ok(ms < FAST_MS, `rejected after ${ms} ms`);
      } finally {
        await restricted.close();
      }
    });

    test('a malformed reply: UNEXPECTED_REPLY', async () => {
      const mutex = new Mutex(c.client, lockName(kind.name));
      // A fencing counter that is not a number makes the inspect script's reply one field short.
      await server.command('SET', mutex.keys.fence, 'not a number');
      const { error } = await rejection(mutex.inspect());
      assert.equal(error.code, 'UNEXPECTED_REPLY', String(error));
    });
  });

  describe(`server check (item 18, ${kind.name})`, () => {
    let server: RedisServer;
    let oldServer: RedisServer;

    before(async () => {
      server = await startRedis();
      // What a server before Redis 5 looks like to a script: no ZPOPMIN.
      oldServer = await startRedis({ args: ['--rename-command', 'ZPOPMIN', '""'] });
    });
    after(async () => {
      await server.stop();
      await oldServer.stop();
    });

    test('a server without ZPOPMIN (Redis < 5): UNSUPPORTED_SERVER, clearly, before any script', async () => {
      const c = await kind.create(oldServer.url);
      try {
        const mutex = new Mutex(c.client, lockName(kind.name));
        for (const attempt of [() => mutex.tryAcquire(), () => mutex.acquire({ timeoutMs: 10_000 })]) {
          const { error, ms } = await rejection(attempt());
          assert.equal(error.code, 'UNSUPPORTED_SERVER', String(error));
          assert.match(error.message, /Redis 5/);
          assert.match(error.message, /ZPOPMIN/);
          assert.ok(ms < FAST_MS, `rejected after ${ms} ms`);
        }
        assert.equal(await oldServer.command('EXISTS', mutex.keys.lock), ':0\r\n', 'nothing was written');
      } finally {
        await c.close();
      }
    });

    test('the check costs one script call per client, not one per operation', async () => {
      const warm = await kind.create(server.url);
      const first = await kind.create(server.url);
      const second = await kind.create(server.url);
      try {
        const name = lockName(kind.name);
        // Load every script into the server's cache first, so no NOSCRIPT fallback is counted.
        const warmMutex = new Mutex(warm.client, name);
        await (await warmMutex.tryAcquire())?.release();
        await warmMutex.isLocked();
        await resetStats(server);
        const mutex = new Mutex(first.client, name);
        for (let i = 0; i < 5; i += 1) {
          const lease = await mutex.tryAcquire();
          assert.ok(lease);
          await lease.release();
        }
        assert.equal(await scriptCalls(server), 5 * 2 + 1, 'five acquire/release pairs and one check');
        for (let i = 0; i < 5; i += 1) await new Mutex(first.client, name).isLocked();
        assert.equal(await scriptCalls(server), 5 * 2 + 1 + 5, 'no further check on the same client');
        await new Mutex(second.client, name).isLocked();
        assert.equal(await scriptCalls(server), 5 * 2 + 1 + 5 + 2, 'a new client is checked once');
      } finally {
        await warm.close();
        await first.close();
        await second.close();
      }
    });

    test('concurrent first operations share one check', async () => {
      const c = await kind.create(server.url);
      try {
        const mutex = new Mutex(c.client, lockName(kind.name));
        await mutex.isLocked(); // scripts cached by the server
        const fresh = await kind.create(server.url);
        try {
          await resetStats(server);
          const other = new Mutex(fresh.client, mutex.name);
          await Promise.all(Array.from({ length: 5 }, () => other.isLocked()));
          assert.equal(await scriptCalls(server), 5 + 1);
        } finally {
          await fresh.close();
        }
      } finally {
        await c.close();
      }
    });
  });
}

describe('server check: a transient failure is retried by the next call, not cached (item 18)', () => {
  test('ioredis without offline queue, not yet connected', async () => {
    const server = await startRedis();
    const { Redis } = await import('ioredis');
    const client = new Redis(server.url, { lazyConnect: true, enableOfflineQueue: false });
    client.on('error', () => {});
    try {
      const context = contextFor(client);
      const inspect = handOffInspect(lockKeys('locksmith', 'a'));
      const first = await rejection(runScript(context, inspect));
      assert.equal(isTransientRedisError(first.error), true, String(first.error));
      // That first command started the connection (ioredis connects a lazy client on first use).
      await until(async () => client.status === 'ready', 'the client is connected');
      assert.equal((await runScript(context, inspect)).locked, false);
    } finally {
      client.disconnect();
      await server.stop();
    }
  });
});

for (const kind of failFastClientKinds) {
  describe(`waiting with fail-fast client options (item 8, ${kind.name})`, () => {
    let server: RedisServer;
    let holder: TestClient;
    let waiter: TestClient;

    before(async () => {
      server = await startRedis();
      holder = await kind.create(server.url);
      waiter = await kind.create(server.url);
    });
    after(async () => {
      await holder.close();
      await waiter.close();
      await server.stop();
    });

    /** Whether someone is subscribed to a release channel of `name` (channels are never prefixed). */
    const subscribed = async (name: string) => {
      // Counted in a script: the raw test connection reads an empty array reply as incomplete.
      const count = "return #redis.call('pubsub', 'channels', ARGV[1])";
      return (await server.command('EVAL', count, '0', `*{${name}}:released:*`)) === ':1\r\n';
    };

    test('a waiter on a held Mutex is woken by the release message, not by the TTL', async () => {
      const name = lockName(kind.name);
      const held = await new Mutex(holder.client, name, { ttlMs: 30_000 }).acquire();
      const waiting = new Mutex(waiter.client, name).acquire({ timeoutMs: 15_000 });
      waiting.catch(() => {});
      await until(() => subscribed(name), 'the waiter subscribed', 3_000).catch(() => {});
      const releasedAt = performance.now();
      await held.release();
      const lease = await waiting;
      const ms = performance.now() - releasedAt;
      assert.ok(ms < 2_500, `woken ${ms} ms after the release`);
      await lease.release();
    });

    test('a process that waited for a lock exits by itself once done (no leaked connection)', async () => {
      const name = lockName(kind.name);
      const held = await new Mutex(holder.client, name, { ttlMs: 30_000 }).acquire();
      const child = spawnWaiter(kind, server.url, name);
      try {
        await until(() => subscribed(name), 'the child subscribed', 5_000).catch(() => {});
        await held.release();
        await child.acquired;
        const acquiredAt = performance.now();
        const code = await Promise.race([
          child.exited,
          new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 8_000)),
        ]);
        assert.equal(
          code,
          0,
          `the child ${code === 'still running' ? 'did not exit' : `exited with ${code}`}`,
        );
        assert.ok(performance.now() - acquiredAt < 8_000);
      } finally {
        child.process.kill('SIGKILL');
      }
    });
  });
}

interface Waiter {
  readonly process: ChildProcess;
  readonly acquired: Promise<void>;
  readonly exited: Promise<number | null>;
}

function spawnWaiter(kind: ClientKind, url: string, name: string): Waiter {
  const child = spawn(process.execPath, [bundled(childFile), kind.name, url, name], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  // 'close', not 'exit': it comes once the IPC channel is closed too, after every message was read.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const acquired = new Promise<void>((resolve, reject) => {
    child.on('message', (message) => {
      if (message === 'acquired') resolve();
    });
    void exited.then((code) => reject(new Error(`the child exited (${code}) before acquiring`)));
  });
  acquired.catch(() => {});
  return { process: child, acquired, exited };
}

for (const kind of clientKinds) {
  describe(`subscribe failures (items 8 and 15, ${kind.name})`, () => {
    let server: RedisServer;

    before(async () => {
      server = await startRedis();
      // A Redis 7 ACL user gets no channel permission unless given one: SUBSCRIBE fails (NOPERM).
      await server.command('ACL', 'SETUSER', 'nochannels', 'on', '>pw', '~*', 'resetchannels', '+@all');
    });
    after(async () => {
      await server.stop();
    });

    test('are reported as subscribe-failed with the lock name, and the connection is closed', async () => {
      const c = await kind.create(server.url.replace('redis://', 'redis://nochannels:pw@'));
      const events: LockEvent[] = [];
      const stop = subscribeLockEvents((event) => events.push(event));
      try {
        const hub = hubFor(contextFor(c.client));
        const { error } = await rejection(hub.watch('some-channel', undefined, 'the-lock'));
        assert.match(String((error as Error).message), /NOPERM/);
        const failed = events.filter((event) => event.type === 'subscribe-failed');
        assert.equal(failed.length, 1, JSON.stringify(events));
        assert.equal(failed[0]?.lockName, 'the-lock');
        assert.equal((failed[0] as { error: unknown }).error, error);
        await until(
          async () => (await connectionsOf(server, 'nochannels')) === 1,
          'only the client itself is connected (the subscriber connection was closed)',
        );
      } finally {
        stop();
        await c.close();
      }
    });
  });
}
