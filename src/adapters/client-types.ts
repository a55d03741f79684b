/**
 * The clients users pass in, described structurally: only the members Locksmith calls, so the
 * published declarations name none of ioredis, node-redis and Valkey GLIDE (all stay optional peers,
 * and a project that installs one never needs the others' types). Runtime detection (`detect.ts`) looks
 * at the same members.
 */

/**
 * An ioredis `Redis` (5, 6) or an iovalkey `Redis` (the Valkey project's fork, same API), also one
 * that finds its primary through Sentinel (`sentinels`).
 */
export interface IoRedisClient {
  evalsha(sha1: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  /** Any command (Locksmith sends WAIT with it). */
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
  /** Opens Locksmith's own subscriber connection. */
  duplicate(override?: Record<string, unknown>): IoRedisClient;
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  on(event: 'connect' | 'close' | 'ready', listener: () => void): unknown;
  disconnect(): void;
  /** 'end' once closed for good. */
  readonly status: string;
  /** Its `keyPrefix`, if any: channel names carry it too (`RedisDriver.keyPrefix`). */
  readonly options?: { readonly keyPrefix?: string };
}

/**
 * An ioredis `Cluster` (6, or 5 with the `shardedSubscribers` option): scripts are routed by their
 * first key, waiters listen with SSUBSCRIBE on Locksmith's own duplicate of it.
 */
export interface IoRedisClusterClient {
  evalsha(sha1: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  /** Opens Locksmith's own subscriber cluster (same startup nodes, sharded subscribers). */
  duplicate(
    overrideStartupNodes?: unknown[],
    overrideOptions?: Record<string, unknown>,
  ): IoRedisClusterClient;
  ssubscribe(...channels: string[]): Promise<unknown>;
  sunsubscribe(...channels: string[]): Promise<unknown>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'smessage', listener: (channel: string, message: string) => void): unknown;
  disconnect(): void;
  /** Per slot, the `host:port` of its primary first (WAIT goes to that node). */
  readonly slots: readonly (readonly string[] | undefined)[];
  /** The primaries' connections, one `Redis` per node (the ones keyed commands go through). */
  nodes(role: 'master'): IoRedisClusterNode[];
  /**
   * Its `keyPrefix`, if any (part of the key a command is routed by), and the options of every node
   * connection (password, username, TLS: the subscriber cluster needs them too).
   */
  readonly options?: {
    readonly keyPrefix?: string;
    readonly redisOptions?: Readonly<Record<string, unknown>>;
  };
  /** true: tells it apart from a `Redis`. */
  readonly isCluster: boolean;
  /** 'end' once closed for good. */
  readonly status: string;
}

/** One node's connection in an ioredis `Cluster`. */
export interface IoRedisClusterNode {
  readonly options: { readonly host?: string; readonly port?: number };
  /** Any command, on this node's connection (Locksmith sends WAIT with it). */
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
}

/** How node-redis takes the keys and arguments of EVALSHA and EVAL. */
export interface NodeRedisEvalOptions {
  keys: string[];
  arguments: string[];
}

/**
 * A node-redis `createClient()` client (v4, v5, v6), connected. Client pools and v4 `legacyMode`
 * clients are refused when a lock is created.
 */
export interface NodeRedisClient {
  evalSha(sha1: string, options: NodeRedisEvalOptions): Promise<unknown>;
  eval(script: string, options: NodeRedisEvalOptions): Promise<unknown>;
  /** Any command (Locksmith sends WAIT with it). */
  sendCommand(args: string[]): Promise<unknown>;
  /** Opens Locksmith's own subscriber connection. */
  duplicate(overrides?: Record<string, unknown>): NodeRedisClient;
  connect(): Promise<unknown>;
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  /** false before `connect()` and after the client was closed. */
  readonly isOpen: boolean;
  /** false while the socket is down (connecting, reconnecting); true once connected. */
  readonly isReady?: boolean;
}

/**
 * A node-redis `createCluster()` client (v4, v5, v6), connected: scripts are sent with
 * `sendCommand`, routed by their first key, and waiters listen with `sSubscribe` (SSUBSCRIBE) on
 * Locksmith's own duplicate of it.
 */
export interface NodeRedisClusterClient {
  /** EVALSHA and EVAL, routed by `firstKey` (v4's `evalSha` routes by no key: a random node). */
  sendCommand(
    firstKey: string | undefined,
    isReadonly: boolean | undefined,
    args: string[],
  ): Promise<unknown>;
  /** Opens Locksmith's own subscriber cluster. */
  duplicate(overrides?: Record<string, unknown>): NodeRedisClusterClient;
  connect(): Promise<unknown>;
  sSubscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  sUnsubscribe(channel: string): Promise<unknown>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  /** Per slot, its primary (`master`) as the client knows it now. */
  readonly slots: readonly ({ readonly master: unknown } | undefined)[];
  /** The client it sends a node's commands over (WAIT goes to the slot primary's). */
  nodeClient(node: unknown): NodeRedisNodeClient | Promise<NodeRedisNodeClient>;
  /** false before `connect()` and after the client was closed. */
  readonly isOpen: boolean;
}

/** One node's client in a node-redis cluster client. */
export interface NodeRedisNodeClient {
  /** Any command, on this node's connection (Locksmith sends WAIT with it). */
  sendCommand(args: string[]): Promise<unknown>;
}

/**
 * A node-redis `createSentinel()` client (v5, v6), connected: it finds the primary through the
 * Sentinels and follows it across a failover. Scripts and WAIT go to the primary (WAIT with
 * `sendCommand`), and waiters listen on its own pub/sub connection, which node-redis moves to the
 * new primary with their subscriptions.
 */
export interface NodeRedisSentinelClient {
  evalSha(sha1: string, options: NodeRedisEvalOptions): Promise<unknown>;
  eval(script: string, options: NodeRedisEvalOptions): Promise<unknown>;
  /** Any command, to the primary unless `isReadonly` (Locksmith sends WAIT with it). */
  sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  /**
   * Removes `listener` only; the channel is unsubscribed once no listener is left. (node-redis types
   * this listener for either buffer mode: it takes whatever a message may be.)
   */
  unsubscribe(channel: string, listener: (message: unknown, channel: unknown) => unknown): Promise<unknown>;
  /** Tells it apart from a `createClient()` client. */
  getSentinelNode(): unknown;
  getMasterNode(): unknown;
  /** false before `connect()` and after the client was closed. */
  readonly isOpen: boolean;
  /** false while it looks for the primary again (a failover) or is not connected yet. */
  readonly isReady: boolean;
}

/**
 * A Valkey GLIDE `GlideClient` (`@valkey/valkey-glide` 2.5), created with `await
 * GlideClient.createClient(...)`. Scripts go out with `customCommand`; waiters listen on Locksmith's
 * own client, created from this one's options (GLIDE has no `duplicate()`).
 */
export interface ValkeyGlideClient {
  /** Any command: EVALSHA, EVAL and WAIT, replies decoded as strings (GLIDE's `Decoder.String`). */
  customCommand(args: string[], options?: { decoder?: number }): Promise<unknown>;
  /** SUBSCRIBE after creation (GLIDE 2.3 and later), confirmed within `timeoutMs`. */
  subscribe(channels: Iterable<string>, timeoutMs: number): Promise<void>;
  unsubscribe(channels: Iterable<string> | null, timeoutMs: number): Promise<void>;
  close(): void;
}

/**
 * A Valkey GLIDE `GlideClusterClient` (2.5): scripts are routed to the primary of their first key's
 * slot, waiters listen with SSUBSCRIBE on Locksmith's own cluster client.
 */
export interface ValkeyGlideClusterClient {
  /** EVALSHA and EVAL, routed to the primary serving `route.key`'s slot. */
  customCommand(
    args: string[],
    options?: { decoder?: number; route?: { type: 'primarySlotKey'; key: string } },
  ): Promise<unknown>;
  ssubscribe(channels: Iterable<string>, timeoutMs: number): Promise<void>;
  sunsubscribe(channels: Iterable<string> | null, timeoutMs: number): Promise<void>;
  close(): void;
}

/**
 * A client Locksmith can lock with: ioredis 5/6, iovalkey, node-redis 4/5/6 or a Valkey GLIDE
 * `GlideClient`, for one server; an ioredis client with `sentinels` or a node-redis
 * `createSentinel()` client (v5, v6) for a primary behind Sentinel; an ioredis `Cluster`, a
 * node-redis `createCluster()` client or a `GlideClusterClient` for a Redis Cluster (Redis 7 or
 * later for waiters that do not poll).
 */
export type RedisClient =
  | IoRedisClient
  | NodeRedisClient
  | NodeRedisSentinelClient
  | ValkeyGlideClient
  | IoRedisClusterClient
  | NodeRedisClusterClient
  | ValkeyGlideClusterClient;
