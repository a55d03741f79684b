import { UnsupportedClientError } from '../errors.js';
import { describeValue } from '../validation.js';
import type { RedisDriver } from './driver.js';
import {
  hasShardedSubscribers,
  ioRedisClusterDriver,
  ioRedisDriver,
  isIoRedis,
  isIoRedisCluster,
} from './ioredis.js';
import {
  isLegacyMode,
  isNodeRedis,
  isNodeRedisCluster,
  isNodeRedisSentinel,
  nodeRedisClusterDriver,
  nodeRedisComposite,
  nodeRedisDriver,
  nodeRedisSentinelDriver,
} from './node-redis.js';
import {
  glideClusterDriver,
  glideDriver,
  hasDynamicPubSub,
  isGlide,
  isGlideCluster,
} from './valkey-glide.js';

const PASS_ONE_SERVER =
  'Pass a client for one Redis server (an ioredis or iovalkey `Redis`, a node-redis `createClient()`, or a ' +
  'Valkey GLIDE `GlideClient`), for a primary behind Sentinel (ioredis `sentinels`, or a node-redis ' +
  '`createSentinel()`) or for a Redis Cluster (an ioredis `Cluster`, a node-redis `createCluster()`, ' +
  'or a `GlideClusterClient`)';

/**
 * A driver for a client (one per client object: `contextFor` keeps it). Refuses, at construction rather than on the
 * first command, clients Locksmith would misuse: a `Cluster` without sharded subscribers (iovalkey),
 * node-redis client pools, node-redis v4 `legacyMode`, and Valkey GLIDE clients that cannot
 * subscribe after creation (before 2.3). Nothing is sent to refuse them.
 */
export function createDriver(client: unknown): RedisDriver {
  if (client === null || typeof client !== 'object') {
    throw new UnsupportedClientError(describeValue(client));
  }
  if (isIoRedisCluster(client) && isIoRedis(client)) {
    if (!hasShardedSubscribers(client)) {
      throw new UnsupportedClientError(
        'an ioredis or iovalkey Cluster without sharded pub/sub (no `shardedSubscribers` option: ' +
          `iovalkey, or an ioredis 5 older than it), which waiters need. ${PASS_ONE_SERVER}`,
      );
    }
    return ioRedisClusterDriver(client);
  }
  if (isIoRedis(client)) {
    return ioRedisDriver(client);
  } else if (isGlide(client)) {
    if (!hasDynamicPubSub(client)) {
      throw new UnsupportedClientError(
        'a Valkey GLIDE client that cannot subscribe after it was created (GLIDE before 2.3), which ' +
          'waiters need. Use @valkey/valkey-glide 2.5 or later',
      );
    }
    return isGlideCluster(client) ? glideClusterDriver(client) : glideDriver(client);
  } else if (isNodeRedis(client)) {
    if (isNodeRedisCluster(client)) return nodeRedisClusterDriver(client);
    if (isNodeRedisSentinel(client)) return nodeRedisSentinelDriver(client);
    const composite = nodeRedisComposite(client);
    if (composite) {
      throw new UnsupportedClientError(
        `${composite}, which Locksmith does not support yet. ${PASS_ONE_SERVER}`,
      );
    }
    if (isLegacyMode(client)) {
      // `client.v4` has the promise commands but no duplicate(), isOpen or pub/sub, which waiting
      // needs, so it cannot stand in for a client.
      throw new UnsupportedClientError(
        'a node-redis v4 client in legacyMode, whose commands take callbacks. Pass a client created ' +
          'without legacyMode, e.g. `const locks = client.duplicate({ legacyMode: false }); await ' +
          'locks.connect()` (client.v4 does not work: it lacks duplicate() and isOpen)',
      );
    }
    return nodeRedisDriver(client);
  }
  throw new UnsupportedClientError(
    `an object without evalsha/evalSha/customCommand (${client.constructor?.name ?? 'Object'})`,
  );
}
