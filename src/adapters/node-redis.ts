import type { NodeRedisClient, NodeRedisEvalOptions } from './client-types.js';
import type { RedisDriver, SubscriberConnection } from './driver.js';

/**
 * What the adapter reads beyond the public shape: how to close its own subscriber connection
 * (v5, v6 `destroy()`; v4 `disconnect()`), and v4's creation options (`legacyMode`). Kept out of
 * `NodeRedisClient` because the v5/v6 `options` have no `legacyMode` to describe.
 */
interface NodeRedisInternals extends NodeRedisClient {
  duplicate(overrides?: Record<string, unknown>): NodeRedisInternals;
  destroy?: () => void;
  disconnect?: () => Promise<void>;
  /** Every supported version has them, and they last across reconnects. */
  ref(): void;
  unref(): void;
  options?: { legacyMode?: boolean };
}

/** A node-redis client (v4, v5, v6) or something built on one (cluster, sentinel, pool). */
export function isNodeRedis(client: object): client is NodeRedisClient {
  const c = client as Partial<NodeRedisClient>;
  return typeof c.evalSha === 'function' && typeof c.isOpen === 'boolean';
}

/** A node-redis v4 client in `legacyMode`: its commands take callbacks, not promises. */
export function isLegacyMode(client: NodeRedisClient): boolean {
  return (client as NodeRedisInternals).options?.legacyMode === true;
}

/**
 * What node-redis builds on its clients but Locksmith cannot lock with, or a description of it:
 * `createCluster()` (v4, v5, v6) routes by slot; `createSentinel()` (v5, v6) and
 * `createClientPool()` (v5, v6) spread commands over connections Locksmith does not choose.
 * `undefined` for a plain `createClient()` client.
 */
export function nodeRedisComposite(client: NodeRedisClient): string | undefined {
  const c = client as { nodeClient?: unknown; getSlotMaster?: unknown; getSentinelNode?: unknown };
  if (typeof c.nodeClient === 'function' || typeof c.getSlotMaster === 'function')
    return 'a node-redis cluster client (createCluster())';
  if (typeof c.getSentinelNode === 'function') return 'a node-redis sentinel client (createSentinel())';
  if (typeof (client as { duplicate?: unknown }).duplicate !== 'function' && 'totalClients' in client)
    return 'a node-redis client pool (createClientPool())';
  return undefined;
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

export function nodeRedisDriver(client: NodeRedisClient): RedisDriver {
  const options = (keys: readonly string[], args: readonly string[]): NodeRedisEvalOptions => ({
    keys: [...keys],
    arguments: [...args],
  });
  return {
    kind: 'node-redis',
    evalSha: (sha1, keys, args) => client.evalSha(sha1, options(keys, args)),
    eval: (source, keys, args) => client.eval(source, options(keys, args)),
    waitForReplicas: async (count, timeoutMs) =>
      Number(await client.sendCommand(['WAIT', String(count), String(timeoutMs)])),
    closedReason: () =>
      // isOpen stays true while node-redis reconnects; it is false before connect() and after
      // quit()/disconnect()/destroy(), when no command will ever be sent.
      client.isOpen
        ? undefined
        : 'the node-redis client is not open: call `await client.connect()` before using it ' +
          '(or it was closed with quit(), close(), disconnect() or destroy()).',
    // isReady is false while the socket is down and node-redis reconnects (isOpen stays true).
    disconnectedReason: () =>
      client.isOpen && client.isReady === false
        ? 'the node-redis client has no connection to Redis (it is reconnecting)'
        : undefined,
    async openSubscriber(onMessage): Promise<SubscriberConnection> {
      const subscriber = (client as NodeRedisInternals).duplicate({ ...SUBSCRIBER_OPTIONS });
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
        keepAlive: (alive) => (alive ? subscriber.ref() : subscriber.unref()),
        close,
      };
    },
  };
}
