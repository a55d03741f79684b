/**
 * Key and channel names of one lock. Every one of them contains `{name}` as its only hash tag, so
 * every script touches a single Redis Cluster slot and CROSSSLOT cannot happen.
 * (Names and prefixes are validated to contain no braces.)
 */
export interface LockKeys {
  /** Holds the owner token while the lock is held; expires with the lease. */
  readonly lock: string;
  /** The fencing counter; never expires, so tokens only grow. */
  readonly fence: string;
  /**
   * Prefix of the channels a Mutex release wakes a waiter on (one per client: `…:released:<id>`),
   * so waiters wake without polling.
   */
  readonly releasedChannel: string;
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
    sleepers: `${base}:sleepers`,
    queue: `${base}:queue`,
    waiters: `${base}:waiters`,
    grantedChannelPrefix: `${base}:granted:`,
  });
}
