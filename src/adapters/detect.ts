import { UnsupportedClientError } from '../errors.js';
import { describeValue } from '../validation.js';
import type { RedisDriver } from './driver.js';
import { ioRedisDriver, isIoRedis, isIoRedisCluster } from './ioredis.js';
import { isLegacyMode, isNodeRedis, isNodeRedisCluster, nodeRedisDriver } from './node-redis.js';

/** A client the user passes in: an ioredis `Redis` or a node-redis client (v4 or v5). */
export type RedisClient = object;

// One driver per client object, so every lock on a client shares its subscriber connection, its
// client id and its server check (see client-context.ts).
const drivers = new WeakMap<object, RedisDriver>();

const NO_CLUSTER =
  'Cluster support is not there yet: pass a client for one Redis server (an ioredis `Redis`, ' +
  'or a node-redis `createClient()`)';

/**
 * The driver for a client, created on first use. Refuses, at construction rather than on the
 * first command, clients Locksmith would misuse: cluster clients and node-redis v4 `legacyMode`.
 */
export function driverFor(client: unknown): RedisDriver {
  if (client === null || typeof client !== 'object') {
    throw new UnsupportedClientError(describeValue(client));
  }
  const known = drivers.get(client);
  if (known) return known;
  let driver: RedisDriver;
  if (isIoRedis(client)) {
    if (isIoRedisCluster(client)) throw new UnsupportedClientError(`an ioredis Cluster. ${NO_CLUSTER}`);
    driver = ioRedisDriver(client);
  } else if (isNodeRedisCluster(client)) {
    throw new UnsupportedClientError(`a node-redis cluster client (createCluster()). ${NO_CLUSTER}`);
  } else if (isNodeRedis(client)) {
    if (isLegacyMode(client)) {
      // `client.v4` has the promise commands but no duplicate(), isOpen or pub/sub, which waiting
      // needs, so it cannot stand in for a client.
      throw new UnsupportedClientError(
        'a node-redis v4 client in legacyMode, whose commands take callbacks. Pass a client created ' +
          'without legacyMode, e.g. `const locks = client.duplicate({ legacyMode: false }); await ' +
          'locks.connect()` (client.v4 does not work: it lacks duplicate() and isOpen)',
      );
    }
    driver = nodeRedisDriver(client);
  } else
    throw new UnsupportedClientError(
      `an object without evalsha/evalSha (${client.constructor?.name ?? 'Object'})`,
    );
  drivers.set(client, driver);
  return driver;
}
