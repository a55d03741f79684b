/**
 * Clients Locksmith does not support are refused with `UnsupportedClientError` when a lock is
 * created (or a compat function called), before anything is sent: an iovalkey Cluster (no sharded
 * pub/sub), node-redis client pools, and node-redis v4 `legacyMode`. The
 * refused clients are real and, where a server can serve them, connected (cluster clients to a
 * one-node cluster), so "nothing was sent" is checked against the server's command statistics.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Cluster as IOValkeyCluster } from 'iovalkey';
import { createClientPool as createClientPoolV6, createClient as createClientV6 } from 'redis';
import { createClient as createClientV4 } from 'redis4';
import { createClientPool as createClientPoolV5 } from 'redis5';
import {
  acquireLockWithTimeout,
  FairMutex,
  fencedWrite,
  Mutex,
  type RedisClient,
  RedisExpLock,
  releaseLock,
  UnsupportedClientError,
} from '../../src/index.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';
import { commandCalls, resetStats } from '../fixtures/commandstats.js';
import { startOneNodeCluster } from '../fixtures/redis-cluster.js';

/** A refused client, opened against `server`; `close` ends whatever it opened. */
interface Refused {
  readonly client: object;
  close(): Promise<void>;
}

interface Case {
  readonly name: string;
  /** What the error message must name, so the user knows which object was refused and why. */
  readonly says: RegExp;
  /** Which server it talks to: a one-node cluster or a standalone server. */
  readonly on: 'cluster' | 'standalone';
  open(url: string, port: number): Promise<Refused>;
}

/**
 * An iovalkey Cluster, connected (it is ready once it has read the slots): it has no sharded
 * subscribers, so its waiters could not listen on a lock's shard (ioredis Clusters are accepted:
 * test/integration/cluster.test.ts).
 */
function ioredisFamilyCluster(name: string, Cluster: typeof IOValkeyCluster): Case {
  return {
    name,
    says: /iovalkey Cluster without sharded pub\/sub/,
    on: 'cluster',
    async open(_url, port) {
      // No periodic slot refresh, so the client sends nothing on its own while the test looks.
      const cluster = new Cluster([{ host: '127.0.0.1', port }], { slotsRefreshInterval: 0 });
      cluster.on('error', () => {});
      await new Promise<void>((resolve, reject) => {
        cluster.once('ready', () => resolve());
        cluster.once('end', () => reject(new Error(`${name} could not connect`)));
      });
      return { client: cluster, close: async () => cluster.disconnect() };
    },
  };
}

/** Anything node-redis builds that has connect() and destroy() (cluster, pool). */
function nodeRedisComposite(
  name: string,
  says: RegExp,
  on: Case['on'],
  create: (url: string) => {
    connect(): Promise<unknown>;
    destroy(): unknown;
    on(event: 'error', listener: () => void): unknown;
  },
): Case {
  return {
    name,
    says,
    on,
    async open(url) {
      const client = create(url);
      client.on('error', () => {});
      await client.connect();
      return { client, close: async () => void client.destroy() };
    },
  };
}

const cases: Case[] = [
  ioredisFamilyCluster('iovalkey Cluster', IOValkeyCluster),
  nodeRedisComposite(
    'node-redis v6 createClientPool()',
    /client pool \(createClientPool\(\)\)/,
    'standalone',
    (url) => createClientPoolV6({ url }),
  ),
  nodeRedisComposite(
    'node-redis v5 createClientPool()',
    /client pool \(createClientPool\(\)\)/,
    'standalone',
    (url) => createClientPoolV5({ url }),
  ),
  {
    name: 'node-redis v4 legacyMode client',
    says: /legacyMode.*duplicate\(\{ legacyMode: false \}\)/,
    on: 'standalone',
    async open(url) {
      const legacy = createClientV4({ url, legacyMode: true });
      legacy.on('error', () => {});
      await legacy.connect();
      return { client: legacy, close: () => legacy.disconnect() };
    },
  },
];

/** Every entry point that takes a client, called the way a user would. */
const entryPoints: [string, (client: RedisClient) => unknown][] = [
  ['new Mutex()', (client) => new Mutex(client, 'refused')],
  ['new FairMutex()', (client) => new FairMutex(client, 'refused')],
  ['new RedisExpLock()', (client) => new RedisExpLock('refused', { redis: client })],
  ['acquireLockWithTimeout()', (client) => acquireLockWithTimeout(client, 'refused')],
  ['releaseLock()', (client) => releaseLock(client, 'refused', 'token')],
  ['fencedWrite()', (client) => fencedWrite(client, 'refused', 1, 'value')],
];

/** Commands a client sends on its own to learn the topology or keep the connection; not Locksmith's. */
const CLIENT_HOUSEKEEPING = /^(cluster|ping|hello|client|command|select|info)\b/;

async function callsBesidesHousekeeping(server: RedisServer): Promise<Record<string, number>> {
  const calls = await commandCalls(server);
  return Object.fromEntries(Object.entries(calls).filter(([command]) => !CLIENT_HOUSEKEEPING.test(command)));
}

describe('unsupported clients are refused before anything is sent', () => {
  let cluster: RedisServer;
  let standalone: RedisServer;

  before(async () => {
    [cluster, standalone] = await Promise.all([startOneNodeCluster(), startRedis()]);
  });
  after(async () => {
    await Promise.all([cluster.stop(), standalone.stop()]);
  });

  for (const refusedCase of cases) {
    test(refusedCase.name, async () => {
      const server = refusedCase.on === 'cluster' ? cluster : standalone;
      const refused = await refusedCase.open(server.url, server.port);
      try {
        await resetStats(server);
        for (const [entryPoint, call] of entryPoints) {
          // Synchronous throw or rejected promise, both are a refusal; either way, nothing was sent.
          const outcome = await Promise.resolve()
            .then(() => call(refused.client as RedisClient))
            .then(
              () => undefined,
              (error: unknown) => error,
            );
          assert.ok(outcome instanceof UnsupportedClientError, `${entryPoint}: ${String(outcome)}`);
          assert.equal(outcome.code, 'UNSUPPORTED_CLIENT');
          assert.match(outcome.message, refusedCase.says, entryPoint);
        }
        assert.deepEqual(
          await callsBesidesHousekeeping(server),
          {},
          'no command of Locksmith reached the server',
        );
        assert.equal(await server.command('DBSIZE'), ':0\r\n', 'no key was written');
      } finally {
        await refused.close();
      }
    });
  }

  test('a supported client on the same server is accepted (the refusals above are not blanket)', async () => {
    const client = createClientV6({ url: standalone.url });
    client.on('error', () => {});
    await client.connect();
    try {
      const lease = await new Mutex(client, 'accepted').tryAcquire();
      assert.ok(lease, 'a plain createClient() client takes the lock');
      await lease.release();
    } finally {
      client.destroy();
    }
  });
});
