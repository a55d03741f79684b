import { UnsupportedClientError } from '../errors.js';
import { describeValue } from '../validation.js';
import type { RedisDriver } from './driver.js';
import { ioRedisDriver, isIoRedis } from './ioredis.js';
import { isNodeRedis, nodeRedisDriver } from './node-redis.js';

/** A client the user passes in: an ioredis `Redis` or a node-redis client (v4 or v5). */
export type RedisClient = object;

// One driver per client object, so every lock on a client shares its subscriber connection.
const drivers = new WeakMap<object, RedisDriver>();

export function driverFor(client: unknown): RedisDriver {
  if (client === null || typeof client !== 'object') {
    throw new UnsupportedClientError(describeValue(client));
  }
  const known = drivers.get(client);
  if (known) return known;
  let driver: RedisDriver;
  if (isIoRedis(client)) driver = ioRedisDriver(client);
  else if (isNodeRedis(client)) driver = nodeRedisDriver(client);
  else
    throw new UnsupportedClientError(
      `an object without evalsha/evalSha (${client.constructor?.name ?? 'Object'})`,
    );
  drivers.set(client, driver);
  return driver;
}
