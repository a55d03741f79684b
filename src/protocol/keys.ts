/**
 * Key and channel names of one lock: `prefix:{name}` followed by a suffix (`:fence`, ...).
 *
 * Why every key of a lock shares one Redis Cluster slot, also when the name contains braces:
 * Cluster hashes only the text between a key's first `{` and the first `}` after it (the whole key
 * when that text is empty). The prefix has no braces (`checkPrefix`), so the first `{` is ours, and
 * the tag is the name up to its first `}`, or the whole name if it has none; it depends on the name
 * alone, not on the suffix. It is empty only for a name starting with `}`, which `checkName` refuses.
 * So every script touches one slot and CROSSSLOT cannot happen.
 *
 * Why two different names (or prefixes) never share a key: no suffix contains `}` (they are fixed
 * words, plus hex client ids in channel names), so in `prefix:{name}suffix` the last `}` is the one
 * after the name. Reading a key back, the prefix is everything before the first `{` (minus the
 * `:`), the name everything between that `{` and the last `}`, the suffix the rest: the key
 * determines all three, so different (prefix, name, suffix) triples give different keys.
 * test/unit/keys.test.ts checks both properties on generated names.
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
   * The last owner token that released the lock (FairMutex: that freed it with nobody to hand it
   * to; a hand-off records the releaser in the new holder's value), kept 60 s, so a release re-sent
   * after its reply was lost (an ioredis reconnect re-sends unanswered commands) still reports that
   * it released.
   */
  readonly lastReleased: string;
  /** Mutex: waiters a release may wake, one at a time (a sorted set by deadline). */
  readonly sleepers: string;
  /** FairMutex: the FIFO queue of waiter entries ("deadline|ttl|#channel|channel token"), oldest first. */
  readonly queue: string;
  /** FairMutex: renewed deadlines of waiters that outlived their entry's (a hash: token → ms). */
  readonly renewals: string;
  /** FairMutex: prefix of the channels hand-offs are announced on (one per client: `…:granted:<id>`). */
  readonly grantedChannelPrefix: string;
}

export function lockKeys(prefix: string, name: string): LockKeys {
  const base = `${prefix}:{${name}}`;
  return Object.freeze({
    lock: base,
    fence: `${base}:fence`,
    releasedChannel: `${base}:released`,
    lastReleased: `${base}:last-released`,
    sleepers: `${base}:sleepers`,
    queue: `${base}:queue`,
    renewals: `${base}:renewals`,
    grantedChannelPrefix: `${base}:granted:`,
  });
}

/**
 * A Semaphore's keys beyond the lock's (whose `lock` key holds the holders, a sorted set, and whose
 * `queue` is its FIFO queue of waiter tokens). Suffixes without `}`, as above.
 */
export interface SemaphoreKeys {
  /** Each queued waiter's entry (a hash: token → "deadline|ttl|permits|channel"). */
  readonly waiters: string;
  /** The limit `setLimit` stored (no expiry); absent, each caller's `limit` option is in force. */
  readonly limit: string;
}

export function semaphoreKeys(keys: Pick<LockKeys, 'lock'>): SemaphoreKeys {
  return Object.freeze({ waiters: `${keys.lock}:waiters`, limit: `${keys.lock}:limit` });
}
