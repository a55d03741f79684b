import type { IoRedisClient } from './client-types.js';
import type { RedisDriver, SubscriberConnection } from './driver.js';

/**
 * An ioredis (5, 6) or iovalkey client, told apart from node-redis by its lower-case `evalsha` and
 * its `status` string (node-redis has `evalSha` and `isOpen`). iovalkey is a fork of ioredis with
 * the same API, so it is the same case, not a look-alike: one adapter serves both.
 */
export function isIoRedis(client: object): client is IoRedisClient {
  const c = client as Partial<IoRedisClient>;
  return typeof c.evalsha === 'function' && typeof c.duplicate === 'function' && typeof c.status === 'string';
}

/** An ioredis or iovalkey `Cluster`: `isCluster` is true there, false on a `Redis`. */
export function isIoRedisCluster(client: IoRedisClient): boolean {
  return (client as { isCluster?: unknown }).isCluster === true;
}

/**
 * What Locksmith's subscriber connection needs, whatever the user's client was created with: it
 * must queue SUBSCRIBE until connected (`enableOfflineQueue: false` failed every SUBSCRIBE), connect
 * now (`lazyConnect`), and subscribe to channels as named (no `keyPrefix`; ioredis does not prefix
 * channels, but the connection should not depend on that). A few retries per request let a
 * SUBSCRIBE survive a reconnect (`maxRetriesPerRequest: 0` failed it at the first blip), while a
 * server that stays down still fails it, so the waiter falls back to timed waits and the connection
 * is closed rather than retrying for ever.
 */
const SUBSCRIBER_OPTIONS = Object.freeze({
  enableOfflineQueue: true,
  lazyConnect: false,
  keyPrefix: '',
  maxRetriesPerRequest: 3,
  autoResubscribe: true,
});

export function ioRedisDriver(client: IoRedisClient): RedisDriver {
  return {
    kind: 'ioredis',
    evalSha: (sha1, keys, args) => client.evalsha(sha1, keys.length, ...keys, ...args),
    eval: (source, keys, args) => client.eval(source, keys.length, ...keys, ...args),
    waitForReplicas: async (count, timeoutMs) => Number(await client.call('WAIT', count, timeoutMs)),
    closedReason: () => {
      // 'end' is final: quit()/disconnect(), or the retryStrategy gave up. A lazyConnect client
      // ('wait') connects on its first command, so it is not closed.
      if (client.status === 'end') {
        return (
          'the ioredis client was closed (quit() or disconnect()) or stopped reconnecting ' +
          '(its retryStrategy gave up). Call client.connect() again or pass a connected client.'
        );
      }
      // Between quit()/disconnect() and 'end' ioredis marks itself closing (a private field, read
      // defensively): a command written then (a script's EVAL after its EVALSHA found no script)
      // reaches a socket the server closed, and ioredis then rejects the caller's own quit().
      if ((client as unknown as { manuallyClosing?: unknown }).manuallyClosing === true) {
        return 'the ioredis client is closing (quit() or disconnect() was called)';
      }
      return undefined;
    },
    // 'wait' (lazyConnect) connects on the first command; 'end' is closedReason's.
    disconnectedReason: () =>
      client.status === 'ready' || client.status === 'wait' || client.status === 'end'
        ? undefined
        : `the ioredis client has no connection to Redis (status "${client.status}")`,
    async openSubscriber(onMessage): Promise<SubscriberConnection> {
      const subscriber = client.duplicate({ ...SUBSCRIBER_OPTIONS });
      // ioredis re-subscribes by itself after a reconnect; errors are reported by the commands
      // that fail, and a listener keeps a connection error from becoming an uncaught 'error' event.
      subscriber.on('error', () => {});
      subscriber.on('message', onMessage);
      // Each reconnect makes a new socket, referenced by default: apply the current choice to it.
      let alive = true;
      const applyKeepAlive = () => {
        const stream = (subscriber as { stream?: { ref(): void; unref(): void } }).stream;
        if (alive) stream?.ref();
        else stream?.unref();
      };
      subscriber.on('connect', applyKeepAlive);
      return {
        keepAlive: (keep) => {
          alive = keep;
          applyKeepAlive();
        },
        subscribe: async (channel) => {
          await subscriber.subscribe(channel);
        },
        unsubscribe: async (channel) => {
          await subscriber.unsubscribe(channel);
        },
        close: async () => {
          subscriber.disconnect();
        },
      };
    },
  };
}
