import type { ValkeyGlideClient, ValkeyGlideClusterClient } from './client-types.js';
import type { RedisDriver, SubscriberConnection } from './driver.js';

/**
 * Valkey GLIDE (`@valkey/valkey-glide` 2.5): a `GlideClient` or a `GlideClusterClient`. Nothing
 * from the package is imported (it stays an optional peer); the adapter reads the client's members,
 * and its enums by value (`Decoder.String` is 1).
 *
 * Scripts go out with `customCommand(['EVALSHA', ...])`, not `invokeScript`: GLIDE's script objects
 * live in the native core until `release()`d and hide NOSCRIPT (they fall back to EVAL by themselves),
 * while Locksmith's fallback (eval-script.ts) is the same for every client. A cluster client routes
 * them to the primary of the first key's slot (`primarySlotKey`).
 */

/** GLIDE's `Decoder.String`: replies as strings whatever the client's `defaultDecoder` says. */
const DECODE_STRINGS = 1;

/**
 * How long SUBSCRIBE (SSUBSCRIBE) may take to be confirmed; then the waiter polls instead (the hub
 * remembers the channel). A confirmation takes a round trip (0.4 ms on loopback).
 */
const SUBSCRIBE_TIMEOUT_MS = 2_000;

/** How long closing the subscriber waits for its UNSUBSCRIBE (see `close`). */
const UNSUBSCRIBE_TIMEOUT_MS = 1_000;

/**
 * What the adapter reads beyond the public API: the options the client was created with (GLIDE has
 * no `duplicate()`, so the subscriber is created from them), whether it was closed, and the socket
 * between the JavaScript client and GLIDE's native core (it keeps the process alive until closed).
 * Each is read defensively: GLIDE keeps them private.
 */
interface GlideInternals {
  readonly config?: Record<string, unknown>;
  readonly isClosed?: boolean;
  readonly socket?: { ref(): void; unref(): void };
  readonly constructor: { createClient?: (config: Record<string, unknown>) => Promise<unknown> };
}

/** A GLIDE message: channel and payload, strings here (the subscriber decodes strings). */
interface GlidePubSubMessage {
  readonly channel: unknown;
  readonly message: unknown;
}

/** What the adapter calls on the subscriber client it created (a `GlideClient` or `GlideClusterClient`). */
interface GlideSubscriber {
  customCommand(args: string[], options?: Record<string, unknown>): Promise<unknown>;
  subscribe?(channels: Iterable<string>, timeoutMs: number): Promise<void>;
  unsubscribe?(channels: Iterable<string> | null, timeoutMs: number): Promise<void>;
  unsubscribeLazy?(channels?: Iterable<string> | null): Promise<void>;
  ssubscribe?(channels: Iterable<string>, timeoutMs: number): Promise<void>;
  sunsubscribe?(channels: Iterable<string> | null, timeoutMs: number): Promise<void>;
  sunsubscribeLazy?(channels?: Iterable<string> | null): Promise<void>;
  close(): void;
}

/**
 * A Valkey GLIDE client (standalone or cluster), told apart from ioredis and node-redis (which have
 * `evalsha`/`evalSha`, GLIDE has neither) by its generic `customCommand` and its pub/sub queue.
 */
export function isGlide(client: object): client is ValkeyGlideClient | ValkeyGlideClusterClient {
  const c = client as Record<string, unknown>;
  return (
    typeof c.customCommand === 'function' &&
    typeof c.invokeScript === 'function' &&
    typeof c.getPubSubMessage === 'function'
  );
}

/** A `GlideClusterClient`: only it routes scripts (`invokeScriptWithRoute`). */
export function isGlideCluster(
  client: ValkeyGlideClient | ValkeyGlideClusterClient,
): client is ValkeyGlideClusterClient {
  return typeof (client as { invokeScriptWithRoute?: unknown }).invokeScriptWithRoute === 'function';
}

/**
 * Whether the client can subscribe after it was created (GLIDE 2.3 and later: `subscribe`, and
 * `ssubscribe` on a cluster client); before, channels were fixed when the client was created.
 */
export function hasDynamicPubSub(client: ValkeyGlideClient | ValkeyGlideClusterClient): boolean {
  const c = client as { subscribe?: unknown; ssubscribe?: unknown };
  return isGlideCluster(client) ? typeof c.ssubscribe === 'function' : typeof c.subscribe === 'function';
}

/** The server's own wording of the error kinds GLIDE renames (`- NoScriptError: ...`). */
const SERVER_CODE: Readonly<Record<string, string>> = {
  ResponseError: 'ERR',
  NoScriptError: 'NOSCRIPT',
  PermissionDenied: 'NOPERM',
  BusyLoadingError: 'LOADING',
  ReadOnly: 'READONLY',
  MasterDown: 'MASTERDOWN',
  TryAgain: 'TRYAGAIN',
  ExecAbortError: 'EXECABORT',
  CrossSlot: 'CROSSSLOT',
  Moved: 'MOVED',
  Ask: 'ASK',
  ClusterDown: 'CLUSTERDOWN',
  NotBusy: 'NOTBUSY',
};

const RENAMED = /^An error was signalled by the server: - (\w+): ([\s\S]*)$/;
/** Codes GLIDE keeps, with a colon after them: `WRONGTYPE: Operation against ...`. */
const KEPT = /^([A-Z][A-Z_]*): ([\s\S]*)$/;

/**
 * The server's error as Redis words it (`NOSCRIPT No matching script`, `WRONGTYPE Operation ...`),
 * from GLIDE's rewording, so the NOSCRIPT fallback and the error classification (which read the
 * server's codes) work as for the other clients; the GLIDE error is the `cause`. Anything that is
 * not a server's error reply (a timeout, a closed client, a connection error) is returned as is.
 */
export function serverWording(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const renamed = RENAMED.exec(error.message);
  const code = renamed ? SERVER_CODE[renamed[1] as string] : undefined;
  if (renamed && code) return new Error(`${code} ${renamed[2]}`, { cause: error });
  const kept = KEPT.exec(error.message);
  if (kept) return new Error(`${kept[1]} ${kept[2]}`, { cause: error });
  return error;
}

function send(command: Promise<unknown>): Promise<unknown> {
  return command.catch((error: unknown) => Promise.reject(serverWording(error)));
}

function closedReason(client: object): string | undefined {
  return (client as GlideInternals).isClosed === true
    ? 'the Valkey GLIDE client was closed (close(), or GLIDE closed it after a fatal error); a ' +
        'closed GLIDE client cannot be reopened: create a new one with createClient().'
    : undefined;
}

/**
 * GLIDE exposes no per-client connection state (its statistics are the process's): a command sent
 * while it reconnects waits in GLIDE up to the client's `requestTimeout` (250 ms by default) and
 * then rejects with a `TimeoutError`, which is the cause a caller sees. So this is never known.
 */
function disconnectedReason(): string | undefined {
  return undefined;
}

/** Decodes a channel or message that arrived as bytes (a subscriber decodes strings already). */
const text = (value: unknown): string =>
  typeof value === 'string' ? value : Buffer.from(value as Uint8Array).toString();

/**
 * Creates Locksmith's subscriber: a new client of the same class from the user's client's options
 * (GLIDE has no `duplicate()`), with what waiting needs whatever those say: a callback for every
 * message (so nothing queues unread), RESP3 (GLIDE's pub/sub needs it), connected now, replies
 * decoded as strings, on the primary (a subscriber on a replica would not be counted by PUBLISH),
 * and none of the user's client-side cache or compression. A failed creation leaves nothing open.
 */
async function createSubscriber(
  client: object,
  onMessage: (channel: string, message: string) => void,
): Promise<GlideSubscriber> {
  const { config, constructor: ClientClass } = client as GlideInternals;
  if (typeof ClientClass.createClient !== 'function' || config === undefined) {
    throw new Error(
      'cannot open a subscriber client: the Valkey GLIDE client does not show the options it was created with',
    );
  }
  const options: Record<string, unknown> = {
    ...config,
    protocol: undefined,
    lazyConnect: false,
    defaultDecoder: DECODE_STRINGS,
    clientSideCache: undefined,
    compression: undefined,
    // Subscriptions on a replica would hear the messages, but PUBLISH (SPUBLISH) on the primary
    // would not count them: a waiter taken for gone.
    readFrom: 'primary',
    pubsubSubscriptions: {
      channelsAndPatterns: {},
      callback: (message: GlidePubSubMessage) => onMessage(text(message.channel), text(message.message)),
    },
  };
  return (await ClientClass.createClient.call(ClientClass, options)) as GlideSubscriber;
}

/**
 * Opens the subscriber; `sharded` subscribes with SSUBSCRIBE (a cluster client: the scripts
 * SPUBLISH on its channels). GLIDE keeps the subscriptions it was asked for and subscribes again
 * after a reconnect or, for sharded channels, a slot move.
 */
async function openSubscriber(
  client: object,
  sharded: boolean,
  onMessage: (channel: string, message: string) => void,
): Promise<SubscriberConnection> {
  const subscriber = await createSubscriber(client, onMessage);
  const subscribe = (sharded ? subscriber.ssubscribe : subscriber.subscribe)?.bind(subscriber);
  const unsubscribe = (sharded ? subscriber.sunsubscribe : subscriber.unsubscribe)?.bind(subscriber);
  const forget = (sharded ? subscriber.sunsubscribeLazy : subscriber.unsubscribeLazy)?.bind(subscriber);
  if (!subscribe || !unsubscribe) {
    subscriber.close();
    throw new Error('the Valkey GLIDE client cannot subscribe after it was created (GLIDE 2.3 or later can)');
  }
  const command = sharded ? 'SSUBSCRIBE' : 'SUBSCRIBE';
  const publish = sharded ? 'SPUBLISH' : 'PUBLISH';
  // The socket to GLIDE's native core is the one thing that keeps the process alive, and it
  // outlives reconnects to the server, so unreferencing it once holds until the next ref().
  const socket = (subscriber as unknown as GlideInternals).socket;
  return {
    subscribe: async (channel) => {
      // GLIDE reports no refusal of SUBSCRIBE: it keeps the channel as wanted and sends SUBSCRIBE
      // again at once, over and over (tens of thousands of refused commands a second against
      // Redis 7.0, with GLIDE 2.5.2), until it is withdrawn, while the call times out. So first a
      // PUBLISH (SPUBLISH) of an empty message on the channel, which the server refuses for the
      // same reasons (an ACL without the channel, a server without sharded pub/sub) and which
      // reaches nobody: the channel is this client's own (its id is in the name) and is not
      // subscribed yet. The scripts publish on it too, so a user Locksmith works for may publish.
      try {
        await subscriber.customCommand([publish, channel, ''], {
          decoder: DECODE_STRINGS,
          ...(sharded ? { route: { type: 'primarySlotKey', key: channel } } : {}),
        });
      } catch (error) {
        const reason = serverWording(error);
        throw new Error(
          `${publish} on the channel failed, so ${command} is not tried (Valkey GLIDE would retry a ` +
            `refused ${command} without end): ${reason instanceof Error ? reason.message : String(reason)}`,
          { cause: error },
        );
      }
      try {
        await subscribe([channel], SUBSCRIBE_TIMEOUT_MS);
      } catch (error) {
        // GLIDE would go on trying (it keeps the subscription as wanted): stop it.
        await forget?.([channel]).catch(() => {});
        throw new Error(`${command} ${channel} was not confirmed within ${SUBSCRIBE_TIMEOUT_MS} ms`, {
          cause: error,
        });
      }
    },
    unsubscribe: async (channel) => {
      await unsubscribe([channel], UNSUBSCRIBE_TIMEOUT_MS);
    },
    keepAlive: (alive) => (alive ? socket?.ref() : socket?.unref()),
    close: async () => {
      // GLIDE's native core drops the server connection of a closed client a second or more
      // later; meanwhile it would still count as a receiver of PUBLISH, a waiter that is gone.
      await unsubscribe(null, UNSUBSCRIBE_TIMEOUT_MS).catch(() => {});
      subscriber.close();
    },
  };
}

/** A `GlideClient`: one server (or a primary with replicas, where GLIDE sends writes to the primary). */
export function glideDriver(client: ValkeyGlideClient): RedisDriver {
  const options = { decoder: DECODE_STRINGS };
  return {
    kind: 'valkey-glide',
    checksReplies: false,
    keyPrefix: '',
    topology: 'standalone',
    evalSha: (sha1, keys, args) =>
      send(client.customCommand(['EVALSHA', sha1, String(keys.length), ...keys, ...args], options)),
    eval: (source, keys, args) =>
      send(client.customCommand(['EVAL', source, String(keys.length), ...keys, ...args], options)),
    // GLIDE extends its request timeout for WAIT by the command's own timeout.
    waitForReplicas: async (_key, count, timeoutMs) =>
      Number(await send(client.customCommand(['WAIT', String(count), String(timeoutMs)], options))),
    closedReason: () => closedReason(client),
    disconnectedReason,
    openSubscriber: (onMessage) => openSubscriber(client, false, onMessage),
  };
}

/**
 * A `GlideClusterClient`: EVALSHA and EVAL go to the primary serving the first key's slot (every
 * key of a lock shares its hash tag); GLIDE follows MOVED and ASK. Waiters listen with SSUBSCRIBE on
 * Locksmith's own cluster client, on the shard of the lock's channel.
 */
export function glideClusterDriver(client: ValkeyGlideClusterClient): RedisDriver {
  // A script without keys (none of Locksmith's) would go wherever GLIDE sends a keyless EVAL.
  const routed = (key: string | undefined) =>
    key === undefined
      ? { decoder: DECODE_STRINGS }
      : { decoder: DECODE_STRINGS, route: { type: 'primarySlotKey' as const, key } };
  return {
    kind: 'valkey-glide',
    checksReplies: false,
    keyPrefix: '',
    topology: 'cluster',
    evalSha: (sha1, keys, args) =>
      send(client.customCommand(['EVALSHA', sha1, String(keys.length), ...keys, ...args], routed(keys[0]))),
    eval: (source, keys, args) =>
      send(client.customCommand(['EVAL', source, String(keys.length), ...keys, ...args], routed(keys[0]))),
    // To the primary of the lock's slot, over GLIDE's one connection to it: the scripts' connection.
    waitForReplicas: async (key, count, timeoutMs) =>
      Number(await send(client.customCommand(['WAIT', String(count), String(timeoutMs)], routed(key)))),
    closedReason: () => closedReason(client),
    disconnectedReason,
    openSubscriber: (onMessage) => openSubscriber(client, true, onMessage),
  };
}
