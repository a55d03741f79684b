/**
 * Key and channel names of one lock. Every one of them contains `{name}` as its only hash tag, so
 * every script touches a single Redis Cluster slot and CROSSSLOT cannot happen.
 * (Names and prefixes are validated to contain no braces.)
 */
export interface LockKeys {
  /** Holds the owner token while the lock is held; expires with the lease. */
  readonly lock: string;
  /**
   * The fencing counter; never expires. Each grant sets it to max(counter + 1, server time in µs),
   * so tokens keep growing even if the counter is lost (restart without persistence, eviction).
   */
  readonly fence: string;
  /**
   * Prefix of the channels a Mutex release wakes a waiter on (one per client: `…:released:<id>`),
   * so waiters wake without polling.
   */
  readonly releasedChannel: string;
  /**
   * The last owner token that released the lock, kept 60 s, so a release re-sent after its reply
   * was lost (an ioredis reconnect re-sends unanswered commands) still reports that it released.
   */
  readonly lastReleased: string;
  /** Mutex: waiters a release may wake, one at a time (a sorted set by deadline). */
  readonly sleepers: string;
  /** FairMutex: the FIFO queue of waiter tokens, oldest first (a list). */
  readonly queue: string;
  /** FairMutex: each queued waiter's entry (a hash: token → "deadline|ttl|channel"). */
  readonly waiters: string;
  /** FairMutex: prefix of the channels hand-offs are announced on (one per client: `…:granted:<id>`). */
  readonly grantedChannelPrefix: string;
}

export const DEFAULT_PREFIX = 'locksmith';

export function lockKeys(prefix: string, name: string): LockKeys {
  const base = `${prefix}:{${name}}`;
  return Object.freeze({
    lock: base,
    fence: `${base}:fence`,
    releasedChannel: `${base}:released`,
    lastReleased: `${base}:last-released`,
    sleepers: `${base}:sleepers`,
    queue: `${base}:queue`,
    waiters: `${base}:waiters`,
    grantedChannelPrefix: `${base}:granted:`,
  });
}
