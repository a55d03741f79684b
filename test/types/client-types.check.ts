/**
 * Type-level test of the client parameter, checked by `npm run typecheck` (never run): instances
 * of every supported client library are accepted without casts, and a non-client is a compile
 * error (each `@ts-expect-error` fails the type check if the line beneath it compiles).
 */
import type { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import { Redis as IORedis6, Cluster as IORedis6Cluster } from 'ioredis';
import { Redis as IORedis5, Cluster as IORedis5Cluster } from 'ioredis5';
import { Redis as IOValkey } from 'iovalkey';
import {
  createClient as createClientV6,
  createCluster as createClusterV6,
  createSentinel as createSentinelV6,
} from 'redis';
import { createClient as createClientV4, createCluster as createClusterV4 } from 'redis4';
import {
  createClient as createClientV5,
  createCluster as createClusterV5,
  createSentinel as createSentinelV5,
} from 'redis5';
import {
  acquireLockWithTimeout,
  FairMutex,
  fencedWrite,
  Mutex,
  type RedisClient,
  RedisExpLock,
  releaseLock,
} from '../../src/index.js';

declare const url: string;
/** GLIDE clients are created with `await GlideClient.createClient(...)`: declared, not awaited here. */
declare const glide: GlideClient;
declare const glideCluster: GlideClusterClient;
const sentinelRootNodes = [{ host: '127.0.0.1', port: 26379 }];

const supported = {
  ioredis6: new IORedis6(url),
  ioredis5: new IORedis5(url),
  iovalkey: new IOValkey(url),
  nodeRedisV6: createClientV6({ url }),
  nodeRedisV6Resp2: createClientV6({ url, RESP: 2 }),
  nodeRedisV5: createClientV5({ url }),
  nodeRedisV5Resp3: createClientV5({ url, RESP: 3 }),
  nodeRedisV4: createClientV4({ url }),
  ioredis6Cluster: new IORedis6Cluster([url]),
  ioredis5Cluster: new IORedis5Cluster([url], { shardedSubscribers: true }),
  nodeRedisV6Cluster: createClusterV6({ rootNodes: [{ url }] }),
  nodeRedisV5Cluster: createClusterV5({ rootNodes: [{ url }] }),
  nodeRedisV4Cluster: createClusterV4({ rootNodes: [{ url }] }),
  glide,
  glideCluster,
  nodeRedisV6Sentinel: createSentinelV6({ name: 'mymaster', sentinelRootNodes }),
  nodeRedisV6SentinelResp2: createSentinelV6({ name: 'mymaster', sentinelRootNodes, RESP: 2 }),
  nodeRedisV5Sentinel: createSentinelV5({ name: 'mymaster', sentinelRootNodes }),
};

export function acceptsEverySupportedClient(): void {
  for (const client of Object.values(supported)) {
    const asClient: RedisClient = client;
    new Mutex(client, 'lock');
    new FairMutex(client, 'lock');
    new RedisExpLock('lock', { redis: client });
    void acquireLockWithTimeout(client, 'lock');
    void releaseLock(client, 'lock', 'token');
    void fencedWrite(asClient, 'key', 1, 'value');
  }
}

export function refusesWhatIsNotAClient(): void {
  // @ts-expect-error an empty object is not a client
  new Mutex({}, 'lock');
  // @ts-expect-error a string (a URL) is not a client
  new FairMutex('redis://127.0.0.1:6380', 'lock');
  // @ts-expect-error null is not a client
  new RedisExpLock('lock', { redis: null });
  // @ts-expect-error an object with a look-alike member only is not a client
  void acquireLockWithTimeout({ evalsha: () => Promise.resolve(1) }, 'lock');
  // @ts-expect-error a client's options are not a client
  void releaseLock({ url }, 'lock', 'token');
}
