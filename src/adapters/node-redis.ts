import type { RedisDriver, SubscriberConnection } from './driver.js';

interface EvalOptions {
  keys: string[];
  arguments: string[];
}

/** The part of a node-redis (v4, v5) client this adapter uses (structural, so `redis` stays optional). */
export interface NodeRedisLike {
  evalSha(sha1: string, options: EvalOptions): Promise<unknown>;
  eval(script: string, options: EvalOptions): Promise<unknown>;
  duplicate(): NodeRedisLike;
  connect(): Promise<unknown>;
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  /** v5 */
  destroy?: () => void;
  /** v4 */
  disconnect?: () => Promise<void>;
  isOpen: boolean;
}

export function isNodeRedis(client: object): client is NodeRedisLike {
  const c = client as Partial<NodeRedisLike>;
  return (
    typeof c.evalSha === 'function' && typeof c.duplicate === 'function' && typeof c.isOpen === 'boolean'
  );
}

export function nodeRedisDriver(client: NodeRedisLike): RedisDriver {
  const options = (keys: readonly string[], args: readonly string[]): EvalOptions => ({
    keys: [...keys],
    arguments: [...args],
  });
  return {
    kind: 'node-redis',
    evalSha: (sha1, keys, args) => client.evalSha(sha1, options(keys, args)),
    eval: (source, keys, args) => client.eval(source, options(keys, args)),
    async openSubscriber(onMessage): Promise<SubscriberConnection> {
      const subscriber = client.duplicate();
      // node-redis emits 'error' on every socket error and reconnects (re-subscribing) by itself;
      // without a listener the event would crash the process.
      subscriber.on('error', () => {});
      await subscriber.connect();
      return {
        subscribe: async (channel) => {
          await subscriber.subscribe(channel, (message, from) => onMessage(from, message));
        },
        unsubscribe: async (channel) => {
          await subscriber.unsubscribe(channel);
        },
        close: async () => {
          if (typeof subscriber.destroy === 'function') subscriber.destroy();
          else await subscriber.disconnect?.();
        },
      };
    },
  };
}
