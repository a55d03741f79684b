import { SHARDED_CHANNEL_MARK } from '../protocol/keys.js';
import { newToken } from '../token.js';
import { createDriver } from './detect.js';
import type { RedisDriver } from './driver.js';
import type { SubscriberHub } from './subscriber-hub.js';

/**
 * Everything Locksmith keeps per client object, in one place: created on first use, dropped with
 * the client (a WeakMap), shared by every lock on that client. The future home of a shared renewal
 * scheduler.
 */
export interface ClientContext {
  /** The client, behind the three-method driver interface. */
  readonly driver: RedisDriver;
  /**
   * A random id for this client object, used in channel names: wake-ups and hand-offs are announced
   * on one channel per client and lock, so a process hears only its own waiters' messages, a busy
   * lock costs each process one subscription (not one per waiter), and PUBLISH's receiver count
   * tells whether that process is still there. A cluster client's starts with
   * `SHARDED_CHANNEL_MARK`, so the scripts SPUBLISH on its channels (its waiters SSUBSCRIBE); its
   * count leaves out subscribers on the shard's replicas, so only a count above 0 says anything
   * (include/notify.lua).
   */
  readonly clientId: string;
  /** What the client talks to: one server, or a Redis Cluster (the driver's). */
  readonly topology: 'standalone' | 'cluster';
  /** The subscriber connection and its channels, once a waiter needed one (see `hubFor`). */
  hub: SubscriberHub | undefined;
  /** The server check, once started; cleared when it failed in a way a retry may fix. */
  serverCheck: Promise<void> | undefined;
  /** Script calls that waited for the server check and are not sent yet (later calls queue behind). */
  waitingForCheck: number;
  /** The server's version once checked ('' before Redis 7, whose scripts cannot read it). */
  serverVersion: string | undefined;
}

const contexts = new WeakMap<object, ClientContext>();

/**
 * The context of a client, created on first use. Refuses clients Locksmith does not support, with
 * an `UnsupportedClientError`, before anything is sent (see `createDriver`).
 */
export function contextFor(client: unknown): ClientContext {
  const known = client !== null && typeof client === 'object' ? contexts.get(client) : undefined;
  if (known) return known;
  const driver = createDriver(client);
  const context: ClientContext = {
    driver,
    clientId:
      driver.topology === 'cluster'
        ? `${SHARDED_CHANNEL_MARK}${newToken().slice(0, 15)}`
        : newToken().slice(0, 16),
    topology: driver.topology,
    hub: undefined,
    serverCheck: undefined,
    waitingForCheck: 0,
    serverVersion: undefined,
  };
  contexts.set(client as object, context);
  return context;
}

/**
 * The channel of `context`'s client under `channelPrefix` (a lock's `grantedChannelPrefix`): one
 * per client and lock, named as the client's keys are (its `keyPrefix` first), so that on a cluster
 * it hashes to the slot of the lock's keys, where the scripts publish on it.
 */
export function clientChannel(context: ClientContext, channelPrefix: string): string {
  return `${context.driver.keyPrefix}${channelPrefix}${context.clientId}`;
}
