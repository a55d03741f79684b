import type {
  NodeRedisClient,
  NodeRedisClusterClient,
  NodeRedisEvalOptions,
  NodeRedisSentinelClient,
} from './client-types.js';
import type { RedisDriver, SubscriberConnection } from './driver.js';
import { keySlot } from './key-slot.js';

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

/** A node-redis `createCluster()` client (v4, v5, v6): it routes commands by slot. */
export function isNodeRedisCluster(
  client: NodeRedisClient,
): client is NodeRedisClient & NodeRedisClusterClient {
  const c = client as { nodeClient?: unknown; getSlotMaster?: unknown; sSubscribe?: unknown };
  return (
    (typeof c.nodeClient === 'function' || typeof c.getSlotMaster === 'function') &&
    typeof c.sSubscribe === 'function'
  );
}

/**
 * A node-redis `createSentinel()` client (v5, v6): it asks the Sentinels for the primary, sends
 * commands over its own connection(s) to it and moves them, and its pub/sub connection, to the
 * new primary after a failover.
 */
export function isNodeRedisSentinel(
  client: NodeRedisClient,
): client is NodeRedisClient & NodeRedisSentinelClient {
  const c = client as { getSentinelNode?: unknown; getMasterNode?: unknown };
  return typeof c.getSentinelNode === 'function' && typeof c.getMasterNode === 'function';
}

/**
 * What node-redis builds on its clients but Locksmith cannot lock with, or a description of it:
 * `createClientPool()` (v5, v6) spreads commands over connections Locksmith does not choose.
 * `undefined` for a plain `createClient()` client (and a cluster or sentinel client: see
 * `isNodeRedisCluster`, `isNodeRedisSentinel`).
 */
export function nodeRedisComposite(client: NodeRedisClient): string | undefined {
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

const evalOptions = (keys: readonly string[], args: readonly string[]): NodeRedisEvalOptions => ({
  keys: [...keys],
  arguments: [...args],
});

/** What node-redis clients, cluster and sentinel clients share: they say whether they are open alike. */
type NodeRedisState = Pick<NodeRedisClient, 'isOpen' | 'isReady'>;

/** A client and a sentinel client run scripts alike (`evalSha`, `eval`; a sentinel's on its primary). */
function nodeRedisScripts(
  client: Pick<NodeRedisClient, 'evalSha' | 'eval'>,
): Pick<RedisDriver, 'evalSha' | 'eval'> {
  return {
    evalSha: (sha1, keys, args) => client.evalSha(sha1, evalOptions(keys, args)),
    eval: (source, keys, args) => client.eval(source, evalOptions(keys, args)),
  };
}

function nodeRedisState(client: NodeRedisState): Pick<RedisDriver, 'closedReason' | 'disconnectedReason'> {
  return {
    closedReason: () =>
      // isOpen stays true while node-redis reconnects; it is false before connect() and after
      // quit()/disconnect()/destroy(), when no command will ever be sent.
      client.isOpen
        ? undefined
        : 'the node-redis client is not open: call `await client.connect()` before using it ' +
          '(or it was closed with quit(), close(), disconnect() or destroy()).',
    // isReady is false while the socket is down and node-redis reconnects (isOpen stays true). A
    // v4 or v5 cluster client has no isReady.
    disconnectedReason: () =>
      client.isOpen && client.isReady === false
        ? 'the node-redis client has no connection to Redis (it is reconnecting)'
        : undefined,
  };
}

/** What the adapter calls on the subscriber it duplicated (a client or a cluster client). */
interface Duplicated {
  connect(): Promise<unknown>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  destroy?: () => void;
  disconnect?: () => Promise<void>;
}

/**
 * Connects Locksmith's duplicate; `close` ends it. connect() keeps retrying while the server is
 * unreachable: bound it, and close what it opened, so a failed subscriber never keeps reconnecting
 * (and the process alive) on its own.
 */
async function connectSubscriber(subscriber: Duplicated): Promise<() => Promise<void>> {
  // node-redis emits 'error' on every socket error and reconnects (re-subscribing) by itself;
  // without a listener the event would crash the process.
  subscriber.on('error', () => {});
  const close = async () => {
    if (typeof subscriber.destroy === 'function') subscriber.destroy();
    else await subscriber.disconnect?.();
  };
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
  return close;
}

export function nodeRedisDriver(client: NodeRedisClient): RedisDriver {
  return {
    kind: 'node-redis',
    checksReplies: true,
    keyPrefix: '',
    topology: 'standalone',
    ...nodeRedisScripts(client),
    waitForReplicas: async (_key, count, timeoutMs) =>
      Number(await client.sendCommand(['WAIT', String(count), String(timeoutMs)])),
    ...nodeRedisState(client),
    async openSubscriber(onMessage): Promise<SubscriberConnection> {
      const subscriber = (client as NodeRedisInternals).duplicate({ ...SUBSCRIBER_OPTIONS });
      const close = await connectSubscriber(subscriber);
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

/**
 * A node-redis `createSentinel()` client (v5, v6): one primary, found through the Sentinels. Scripts
 * and WAIT go to its primary connection; node-redis re-sends a command that met a READONLY reply or
 * a dropped connection to the primary the Sentinels name next, so a failover reaches Locksmith as
 * late replies, not errors. Waiters listen on the sentinel client's own pub/sub connection (v5 has
 * no `duplicate()`, and v6's would inherit the user's node options all the same), with a listener
 * of their own: node-redis moves that connection and its subscriptions to the new primary after a
 * failover. Closing Locksmith's subscriber unsubscribes its listener from its channels, nothing more.
 */
export function nodeRedisSentinelDriver(client: NodeRedisSentinelClient): RedisDriver {
  return {
    kind: 'node-redis',
    checksReplies: true,
    keyPrefix: '',
    topology: 'standalone',
    ...nodeRedisScripts(client),
    // Not read-only: to the primary. With `masterPoolSize` 1 (the default) or `reserveClient` it is
    // the connection the scripts went through; a larger pool may send it over another one.
    waitForReplicas: async (_key, count, timeoutMs) =>
      Number(await client.sendCommand(false, ['WAIT', String(count), String(timeoutMs)])),
    ...nodeRedisState(client),
    async openSubscriber(onMessage): Promise<SubscriberConnection> {
      // Subscribed without buffer mode, so both are strings.
      const listener = (message: unknown, channel: unknown) => onMessage(String(channel), String(message));
      const channels = new Set<string>();
      // Once the sentinel client is closed, node-redis would open a new pub/sub connection for any
      // (UN)SUBSCRIBE, to a primary it no longer watches, and keep reconnecting to it for ever:
      // nothing is sent then (closing the client dropped the subscriptions anyway).
      const unsubscribe = async (channel: string) => {
        channels.delete(channel);
        if (client.isOpen) await client.unsubscribe(channel, listener);
      };
      return {
        subscribe: async (channel) => {
          if (!client.isOpen) throw new Error('the node-redis sentinel client is closed');
          channels.add(channel);
          await client.subscribe(channel, listener);
        },
        unsubscribe,
        // The connection is the user's client's, which keeps the process up as long as it is open.
        keepAlive: () => {},
        close: async () => {
          await Promise.all([...channels].map((channel) => unsubscribe(channel).catch(() => {})));
        },
      };
    },
  };
}

/**
 * WAIT on the connection a node-redis cluster client sends `key`'s commands over: the node client of
 * `slots[slot].master`, the one `sendCommand(key, ...)` picks (v4, v5, v6; one client per node).
 * Not `sendCommand(key, false, ['WAIT', ...])`: v6 sends WAIT to every primary by its command
 * policy (all shards, the smallest count), whatever the key.
 */
async function waitOnSlotMaster(
  client: NodeRedisClusterClient,
  key: string,
  count: number,
  timeoutMs: number,
): Promise<number> {
  const slot = keySlot(key);
  const master = client.slots[slot]?.master;
  if (!master) throw new Error(`the node-redis cluster client knows no master for slot ${slot} (not ready?)`);
  const node = await client.nodeClient(master);
  return Number(await node.sendCommand(['WAIT', String(count), String(timeoutMs)]));
}

/**
 * A node-redis `createCluster()` client: EVALSHA and EVAL go to the primary serving the first key's
 * slot (every key of a lock shares its hash tag), MOVED and ASK are followed by node-redis; WAIT to
 * that primary's connection (`waitOnSlotMaster`). Waiters listen on a duplicate cluster client with
 * `sSubscribe` (SSUBSCRIBE, on the channel's shard).
 */
export function nodeRedisClusterDriver(client: NodeRedisClusterClient): RedisDriver {
  return {
    kind: 'node-redis',
    checksReplies: true,
    keyPrefix: '',
    topology: 'cluster',
    // sendCommand routes by the key it is given, in every version (v4's evalSha by none).
    evalSha: (sha1, keys, args) =>
      client.sendCommand(keys[0], false, ['EVALSHA', sha1, String(keys.length), ...keys, ...args]),
    eval: (source, keys, args) =>
      client.sendCommand(keys[0], false, ['EVAL', source, String(keys.length), ...keys, ...args]),
    waitForReplicas: (key, count, timeoutMs) => waitOnSlotMaster(client, key, count, timeoutMs),
    ...nodeRedisState(client as unknown as NodeRedisState),
    async openSubscriber(onMessage): Promise<SubscriberConnection> {
      const subscriber = client.duplicate() as NodeRedisClusterClient & Duplicated;
      const close = await connectSubscriber(subscriber);
      return {
        subscribe: async (channel) => {
          await subscriber.sSubscribe(channel, (message, from) => onMessage(from, message));
        },
        unsubscribe: async (channel) => {
          await subscriber.sUnsubscribe(channel);
        },
        // Its connections are one per shard and change with the topology: not unreferenced while
        // idle (an idle subscriber keeps a process up until the hub closes it, 1 s after its last
        // channel).
        keepAlive: () => {},
        close,
      };
    },
  };
}
