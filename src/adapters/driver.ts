/**
 * The whole surface Locksmith needs from a Redis client: run a script by SHA or by source, say
 * whether the client can send at all, and open a connection for subscriptions. Adapters implement
 * it and hold no lock logic, so a new client (or a test double for pure logic) is one small file.
 */
export interface RedisDriver {
  /** Which client library is behind this driver (for diagnostics). */
  readonly kind: 'ioredis' | 'node-redis' | 'valkey-glide';
  /**
   * What the client talks to: one server, or a Redis Cluster (scripts routed by their first key;
   * the subscriber connection subscribes with SSUBSCRIBE, on the channel's shard).
   */
  readonly topology: 'standalone' | 'cluster';
  /**
   * What the client puts before every key it sends (ioredis' `keyPrefix`; '' for the others). A
   * channel passed to a script as an argument is not prefixed, so Locksmith names its channels with
   * it (`clientChannel`): on a cluster a prefix with a hash tag (`{app}:`) moves every key to that
   * tag's slot, and a channel without it was published on a node that does not serve it.
   */
  readonly keyPrefix: string;
  /**
   * Whether a reply may be paired with another command than its own, so every script call carries
   * a nonce its script echoes (protocol/script.ts's envelope, evalScript). node-redis: its v5 writes
   * a command into a socket a reset already closed, and every reply after goes to the command sent
   * before its own (docs/guarantees.md); v4 and v6 share the client's design and are checked too.
   */
  readonly checksReplies: boolean;
  /** EVALSHA; rejects with the server's error (including NOSCRIPT) as the client reports it. */
  evalSha(sha1: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /** EVAL; also loads the script into the server's cache for later EVALSHA calls. */
  eval(source: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /**
   * `WAIT count timeoutMs` on the connection that ran the scripts of `key` (the lock's key): how many
   * replicas acknowledged that connection's writes so far (the one command that is not a script:
   * Redis refuses WAIT inside one). On one server that is the client's connection and `key` does
   * not matter; on a cluster it is the client's connection to the primary serving `key`'s slot (as
   * the client knows the slots now).
   */
  waitForReplicas(key: string, count: number, timeoutMs: number): Promise<number>;
  /**
   * Why the client cannot send commands and will not by itself (closed, never connected), with
   * what to do about it; undefined when it can or will (connected, connecting, reconnecting).
   * Cheap: it reads the client's own state, no round trip.
   */
  closedReason(): string | undefined;
  /**
   * Why the client has no connection right now although it will try again (it is connecting or
   * reconnecting): the cause a call reports when its command got no reply. Undefined when it is
   * connected (or closed: see `closedReason`). Cheap: no round trip.
   */
  disconnectedReason(): string | undefined;
  /**
   * Opens Locksmith's own connection in subscriber mode, with the options waiting needs whatever
   * the user's client has; every message goes to `onMessage`. If opening fails, nothing is left open.
   */
  openSubscriber(onMessage: (channel: string, message: string) => void): Promise<SubscriberConnection>;
}

export interface SubscriberConnection {
  /** SUBSCRIBE; SSUBSCRIBE (on the node serving the channel's slot) for a cluster client. */
  subscribe(channel: string): Promise<void>;
  unsubscribe(channel: string): Promise<void>;
  /**
   * Whether the connection may keep the process alive: only while someone waits on it. Idle (kept
   * open for the next waiter), it must not hold up the exit of a process whose work is done.
   */
  keepAlive(alive: boolean): void;
  close(): Promise<void>;
}
