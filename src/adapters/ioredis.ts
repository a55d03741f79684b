import type { RedisDriver, SubscriberConnection } from './driver.js';

/** The part of an ioredis `Redis` instance this adapter uses (structural, so ioredis stays optional). */
export interface IoRedisLike {
  evalsha(sha1: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  duplicate(override?: Record<string, unknown>): IoRedisLike;
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  disconnect(): void;
  status: string;
  /** true on an ioredis `Cluster`, false on a `Redis`. */
  isCluster?: boolean;
}

export function isIoRedis(client: object): client is IoRedisLike {
  const c = client as Partial<IoRedisLike>;
  return typeof c.evalsha === 'function' && typeof c.duplicate === 'function' && typeof c.status === 'string';
}

export function isIoRedisCluster(client: IoRedisLike): boolean {
  return client.isCluster === true;
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

export function ioRedisDriver(client: IoRedisLike): RedisDriver {
  return {
    kind: 'ioredis',
    evalSha: (sha1, keys, args) => client.evalsha(sha1, keys.length, ...keys, ...args),
    eval: (source, keys, args) => client.eval(source, keys.length, ...keys, ...args),
    closedReason: () =>
      // 'end' is final: quit()/disconnect(), or the retryStrategy gave up. A lazyConnect client
      // ('wait') connects on its first command, so it is not closed.
      client.status === 'end'
        ? 'the ioredis client was closed (quit() or disconnect()) or stopped reconnecting ' +
          '(its retryStrategy gave up). Call client.connect() again or pass a connected client.'
        : undefined,
    async openSubscriber(onMessage): Promise<SubscriberConnection> {
      const subscriber = client.duplicate({ ...SUBSCRIBER_OPTIONS });
      // ioredis re-subscribes by itself after a reconnect; errors are reported by the commands
      // that fail, and a listener keeps a connection error from becoming an uncaught 'error' event.
      subscriber.on('error', () => {});
      subscriber.on('message', onMessage as (...args: never[]) => void);
      return {
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
