import type { RedisDriver, SubscriberConnection } from './driver.js';

interface EvalOptions {
  keys: string[];
  arguments: string[];
}

/** The part of a node-redis (v4, v5) client this adapter uses (structural, so `redis` stays optional). */
export interface NodeRedisLike {
  evalSha(sha1: string, options: EvalOptions): Promise<unknown>;
  eval(script: string, options: EvalOptions): Promise<unknown>;
  duplicate(overrides?: Record<string, unknown>): NodeRedisLike;
  connect(): Promise<unknown>;
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  /** v5 */
  destroy?: () => void;
  /** v4 */
  disconnect?: () => Promise<void>;
  isOpen: boolean;
  /** v4: the options the client was created with (`legacyMode` among them). */
  options?: { legacyMode?: boolean };
}

export function isNodeRedis(client: object): client is NodeRedisLike {
  const c = client as Partial<NodeRedisLike>;
  return (
    typeof c.evalSha === 'function' && typeof c.duplicate === 'function' && typeof c.isOpen === 'boolean'
  );
}

/** A node-redis v4 client in `legacyMode`: its commands take callbacks, not promises. */
export function isLegacyMode(client: NodeRedisLike): boolean {
  return client.options?.legacyMode === true;
}

/** `createCluster()` (v4, v5): it looks like a client but routes by slot. */
export function isNodeRedisCluster(client: object): boolean {
  const c = client as { nodeClient?: unknown; getSlotMaster?: unknown };
  return typeof c.nodeClient === 'function' || typeof c.getSlotMaster === 'function';
}

/**
 * What Locksmith's subscriber connection needs, whatever the user's client was created with:
 * SUBSCRIBE waits for the connection instead of failing at once (`disableOfflineQueue`), with
 * promise commands (`legacyMode`). v4 and v5 `duplicate()` merge these over the client's own
 * options (RESP3 included: v5 subscribes over RESP3 too).
 */
const SUBSCRIBER_OPTIONS = Object.freeze({ disableOfflineQueue: false, legacyMode: false });

/** How long opening the subscriber connection may take before it is given up and closed. */
const SUBSCRIBER_CONNECT_MS = 10_000;

export function nodeRedisDriver(client: NodeRedisLike): RedisDriver {
  const options = (keys: readonly string[], args: readonly string[]): EvalOptions => ({
    keys: [...keys],
    arguments: [...args],
  });
  return {
    kind: 'node-redis',
    evalSha: (sha1, keys, args) => client.evalSha(sha1, options(keys, args)),
    eval: (source, keys, args) => client.eval(source, options(keys, args)),
    closedReason: () =>
      // isOpen stays true while node-redis reconnects; it is false before connect() and after
      // quit()/disconnect()/destroy(), when no command will ever be sent.
      client.isOpen
        ? undefined
        : 'the node-redis client is not open: call `await client.connect()` before using it ' +
          '(or it was closed with quit(), close(), disconnect() or destroy()).',
    async openSubscriber(onMessage): Promise<SubscriberConnection> {
      const subscriber = client.duplicate({ ...SUBSCRIBER_OPTIONS });
      // node-redis emits 'error' on every socket error and reconnects (re-subscribing) by itself;
      // without a listener the event would crash the process.
      subscriber.on('error', () => {});
      const close = async () => {
        if (typeof subscriber.destroy === 'function') subscriber.destroy();
        else await subscriber.disconnect?.();
      };
      // connect() keeps retrying while the server is unreachable: bound it, and close what it
      // opened, so a failed subscriber never keeps reconnecting (and the process alive) on its own.
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          subscriber.connect(),
          new Promise((_resolve, reject) => {
            timer = setTimeout(
              () => reject(new Error(`subscriber connection not open after ${SUBSCRIBER_CONNECT_MS} ms`)),
              SUBSCRIBER_CONNECT_MS,
            );
          }),
        ]);
      } catch (error) {
        await close().catch(() => {});
        throw error;
      } finally {
        clearTimeout(timer);
      }
      return {
        subscribe: async (channel) => {
          await subscriber.subscribe(channel, (message, from) => onMessage(from, message));
        },
        unsubscribe: async (channel) => {
          await subscriber.unsubscribe(channel);
        },
        close,
      };
    },
  };
}
