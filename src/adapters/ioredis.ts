import type { IoRedisClient, IoRedisClusterClient } from './client-types.js';
import type { RedisDriver, SubscriberConnection } from './driver.js';
import { keySlot } from './key-slot.js';

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
export function isIoRedisCluster(client: object): client is IoRedisClusterClient {
  return (client as { isCluster?: unknown }).isCluster === true;
}

/**
 * Whether a `Cluster` can subscribe per shard: its options know `shardedSubscribers` (ioredis 6,
 * and 5 since the option came; iovalkey 0.4 has none, and its SSUBSCRIBE goes to one random node,
 * which answers MOVED for the slots it does not serve).
 */
export function hasShardedSubscribers(client: IoRedisClusterClient): boolean {
  const options = (client as { options?: Record<string, unknown> }).options;
  return options !== undefined && 'shardedSubscribers' in options;
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
  // Re-subscribed by `openSubscriber` itself: ioredis' own re-subscribe is a promise nobody handles.
  autoResubscribe: false,
});

/** ioredis' status, the same on a `Redis` and a `Cluster`. */
type IoRedisStatus = Pick<IoRedisClient, 'status'>;

function closedReason(client: IoRedisStatus): string | undefined {
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
}

// 'wait' (lazyConnect) connects on the first command; 'end' is closedReason's.
function disconnectedReason(client: IoRedisStatus): string | undefined {
  return client.status === 'ready' || client.status === 'wait' || client.status === 'end'
    ? undefined
    : `the ioredis client has no connection to Redis (status "${client.status}")`;
}

/** What a `Redis` and a `Cluster` driver share: scripts (a `Cluster` routes them by the first key) and state. */
function ioRedisCommon(
  client: IoRedisClient | IoRedisClusterClient,
): Pick<
  RedisDriver,
  'kind' | 'checksReplies' | 'keyPrefix' | 'evalSha' | 'eval' | 'closedReason' | 'disconnectedReason'
> {
  return {
    kind: 'ioredis',
    checksReplies: false,
    keyPrefix: client.options?.keyPrefix ?? '',
    evalSha: (sha1, keys, args) => client.evalsha(sha1, keys.length, ...keys, ...args),
    eval: (source, keys, args) => client.eval(source, keys.length, ...keys, ...args),
    closedReason: () => closedReason(client),
    disconnectedReason: () => disconnectedReason(client),
  };
}

export function ioRedisDriver(client: IoRedisClient): RedisDriver {
  return {
    ...ioRedisCommon(client),
    topology: 'standalone',
    waitForReplicas: async (_key, count, timeoutMs) => Number(await client.call('WAIT', count, timeoutMs)),
    async openSubscriber(onMessage): Promise<SubscriberConnection> {
      const subscriber = client.duplicate({ ...SUBSCRIBER_OPTIONS });
      // Errors are reported by the commands that fail, and a listener keeps a connection error
      // from becoming an uncaught 'error' event.
      subscriber.on('error', () => {});
      subscriber.on('message', onMessage);
      // Re-subscribed here after a reconnect, not by ioredis (autoResubscribe): its re-subscribe is
      // a promise nobody handles, so one lost with its connection and given up on after
      // `maxRetriesPerRequest` reconnects was an unhandled rejection in the user's process. A
      // re-subscribe that fails leaves the channel's waiters on their timed waits.
      const channels = new Set<string>();
      let lost = false;
      subscriber.on('close', () => {
        lost = true;
      });
      subscriber.on('ready', () => {
        if (!lost) return;
        lost = false;
        if (channels.size > 0) subscriber.subscribe(...channels).catch(() => {});
      });
      // Each reconnect makes a new socket, referenced by default: apply the current choice to it.
      // A socket that is gone (closed, the next one not made yet) is left alone: Node's ref() and
      // unref() of a socket without a handle add a once('connect') listener, one per call, which
      // never fires on that socket (MaxListenersExceededWarning while waiters came and went during
      // a reconnect). The next socket gets the choice on 'connect'.
      let alive = true;
      const applyKeepAlive = () => {
        const stream = (subscriber as { stream?: { ref(): void; unref(): void; destroyed?: boolean } })
          .stream;
        if (!stream || stream.destroyed) return;
        if (alive) stream.ref();
        else stream.unref();
      };
      subscriber.on('connect', applyKeepAlive);
      return {
        keepAlive: (keep) => {
          alive = keep;
          applyKeepAlive();
        },
        subscribe: async (channel) => {
          channels.add(channel);
          await subscriber.subscribe(channel).catch((error: unknown) => {
            channels.delete(channel);
            throw error;
          });
        },
        unsubscribe: async (channel) => {
          channels.delete(channel);
          await subscriber.unsubscribe(channel);
        },
        close: async () => {
          subscriber.disconnect();
        },
      };
    },
  };
}

/**
 * The subscriber cluster's options: SSUBSCRIBE routed to the subscriber of the channel's shard
 * (`shardedSubscribers`), queued until the cluster is ready, and channels named as given. The per-node options as for a `Redis`.
 */
const CLUSTER_SUBSCRIBER_OPTIONS = Object.freeze({
  enableOfflineQueue: true,
  lazyConnect: false,
  keyPrefix: '',
  shardedSubscribers: true,
  redisOptions: { maxRetriesPerRequest: 3, keyPrefix: '' },
});

/**
 * WAIT on the connection an ioredis `Cluster` sends `key`'s commands over: its node for the slot's
 * primary. ioredis keeps one `Redis` per node (`nodes()`) and routes a keyed command to the first
 * node of `slots[slot]` (the primary, as of its last slot refresh or MOVED), so that is the
 * connection the lock's scripts went through. WAIT itself has no key: sent through the cluster it
 * would go to a random node. The key is prefixed as ioredis prefixes the scripts' keys.
 */
async function waitOnSlotPrimary(
  client: IoRedisClusterClient,
  key: string,
  count: number,
  timeoutMs: number,
): Promise<number> {
  const slot = keySlot(`${client.options?.keyPrefix ?? ''}${key}`);
  const primary = client.slots[slot]?.[0];
  const node =
    primary === undefined
      ? undefined
      : client.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === primary);
  if (!node) throw new Error(`the ioredis Cluster knows no primary for slot ${slot} (not ready?)`);
  return Number(await node.call('WAIT', count, timeoutMs));
}

/**
 * An ioredis `Cluster`: EVALSHA and EVAL go to the primary serving the first key's slot (every key
 * of a lock shares its hash tag), MOVED and ASK are followed by ioredis; WAIT to that primary's
 * connection (`waitOnSlotPrimary`). Waiters listen on a duplicate cluster with sharded subscribers:
 * SSUBSCRIBE on the shard of the lock's channel.
 */
export function ioRedisClusterDriver(client: IoRedisClusterClient): RedisDriver {
  return {
    ...ioRedisCommon(client),
    topology: 'cluster',
    waitForReplicas: (key, count, timeoutMs) => waitOnSlotPrimary(client, key, count, timeoutMs),
    async openSubscriber(onMessage): Promise<SubscriberConnection> {
      // ioredis 5's duplicate() merges options shallowly: our `redisOptions` alone would replace
      // the user's, and with them the password, username and TLS every node connection needs (the
      // subscriber cluster then never authenticated, and its SSUBSCRIBE waited for ever). So the
      // user's per-node options are merged here, ours over theirs, whatever the version does.
      const subscriber = client.duplicate([], {
        ...CLUSTER_SUBSCRIBER_OPTIONS,
        redisOptions: { ...client.options?.redisOptions, ...CLUSTER_SUBSCRIBER_OPTIONS.redisOptions },
      });
      subscriber.on('error', () => {});
      subscriber.on('smessage', onMessage);
      return {
        // Its connections are one per primary and change with the topology: they are not
        // unreferenced while idle, so an idle subscriber keeps a process up until the hub closes it
        // (its last channel's linger, 1 s).
        keepAlive: () => {},
        subscribe: async (channel) => {
          await subscriber.ssubscribe(channel);
        },
        unsubscribe: async (channel) => {
          await subscriber.sunsubscribe(channel);
        },
        close: async () => {
          subscriber.disconnect();
        },
      };
    },
  };
}
