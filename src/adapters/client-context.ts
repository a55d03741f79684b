import type { RedisDriver } from './driver.js';
import type { SubscriberHub } from './subscriber-hub.js';

/**
 * Everything Locksmith keeps per client (per driver), in one place: created lazily, dropped with
 * the client (a WeakMap), shared by every lock on that client.
 */
export interface ClientContext {
  /** The subscriber connection and its channels (see `hubFor`). */
  hub: SubscriberHub | undefined;
  /** This client's id in channel names (see `clientId`). */
  clientId: string | undefined;
  /** The server check, once started; cleared when it failed in a way a retry may fix. */
  serverCheck: Promise<void> | undefined;
}

const contexts = new WeakMap<RedisDriver, ClientContext>();

export function contextOf(driver: RedisDriver): ClientContext {
  let context = contexts.get(driver);
  if (!context) {
    context = { hub: undefined, clientId: undefined, serverCheck: undefined };
    contexts.set(driver, context);
  }
  return context;
}
