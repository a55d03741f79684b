import type { RedisDriver, SubscriberConnection } from './driver.js';

/** The part of an ioredis `Redis` instance this adapter uses (structural, so ioredis stays optional). */
export interface IoRedisLike {
  evalsha(sha1: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  duplicate(): IoRedisLike;
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  disconnect(): void;
  status: string;
}

export function isIoRedis(client: object): client is IoRedisLike {
  const c = client as Partial<IoRedisLike>;
  return typeof c.evalsha === 'function' && typeof c.duplicate === 'function' && typeof c.status === 'string';
}

export function ioRedisDriver(client: IoRedisLike): RedisDriver {
  return {
    kind: 'ioredis',
    evalSha: (sha1, keys, args) => client.evalsha(sha1, keys.length, ...keys, ...args),
    eval: (source, keys, args) => client.eval(source, keys.length, ...keys, ...args),
    async openSubscriber(onMessage): Promise<SubscriberConnection> {
      const subscriber = client.duplicate();
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
