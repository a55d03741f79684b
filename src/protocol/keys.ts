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
 * words, plus client ids in channel names: hex, a cluster client's after an `s`), so in
 * `prefix:{name}suffix` the last `}` is the one after the name. Reading a key back, the prefix is
 * everything before the first `{` (minus the `:`), the name everything between that `{` and the
 * last `}`, the suffix the rest: the key determines all three, so different (prefix, name,
 * suffix) triples give different keys.
 * test/unit/keys.test.ts checks both properties on generated names.
 */
export interface LockKeys {
  /**
   * Holds the holder while the lock is held (Mutex, FairMutex: its fencing token, expiry and queue
   * bookkeeping, then its owner token; see holder.lua); expires with the lease.
   */
  readonly lock: string;
  /**
   * The fencing counter; never expires. Each grant sets it to max(counter + 1, server time in µs),
   * so tokens keep growing even if the counter is lost (restart without persistence, eviction).
   */
  readonly fence: string;
  /**
   * The last owner token that released the lock (that freed it with nobody to hand it to; a hand-off records the releaser in the new holder's value), kept 60 s, so a release re-sent
   * after its reply was lost (an ioredis reconnect re-sends unanswered commands) still reports that
   * it released.
   */
  readonly lastReleased: string;
  /**
   * Prefix of a Redlock kind's release tombstones (`…:released:<token>`: the stamp of the latest
   * release of that token the server ran, kept a lease TTL), so an attempt that reaches a server
   * after a release of its token sent later takes nothing there (redlock/call-stamp.ts).
   */
  readonly releasedPrefix: string;
  /** The waiters, oldest first (a list of "deadline|ttl|#channel|channel token" entries). */
  readonly queue: string;
  /**
   * Who is queued, and until when (a hash: token → current deadline, server ms; a RedlockMutex's
   * line keeps its entries here).
   */
  readonly waiting: string;
  /**
   * A RedlockMutex's line: a sorted set, waiting token → the place its acquire call brought (the
   * same on every server, so they all hand a release to the same waiter; see placed-line.lua).
   */
  readonly line: string;
  /**
   * The MultiMutex waiters stopped by this name (a hash: waiter token → the channel it is woken on),
   * woken by a MultiMutex release that leaves the name free (multi-release.lua).
   */
  readonly multiWaiting: string;
  /**
   * The MultiMutex waiter that reserved this name (its starvation mode, multi-acquire.lua): while
   * it lives, nobody else takes the name. "<arrival ms>|<names>|<#token>|<token><channel>", with a PX of the
   * reservation's lifetime (include/reservation.lua).
   */
  readonly reserved: string;
  /**
   * Prefix of the channels hand-offs are announced on (one per client: `…:granted:<client id>`).
   * A cluster client's id starts with `SHARDED_CHANNEL_MARK`: see there.
   */
  readonly grantedChannelPrefix: string;
}

/**
 * How a channel says that its waiters listen with SSUBSCRIBE (a cluster client's: sharded pub/sub,
 * on the lock's shard): its last segment, the client id, starts with this letter (other client
 * ids are hex, and no segment after the name's `}` holds a `:` but the suffix's own). The scripts
 * then publish on it with SPUBLISH, which reaches the shard's replicas' subscribers too but counts
 * only the primary's (include/notify.lua).
 */
export const SHARDED_CHANNEL_MARK = 's';

export function lockKeys(prefix: string, name: string): LockKeys {
  const base = `${prefix}:{${name}}`;
  return Object.freeze({
    lock: base,
    fence: `${base}:fence`,
    lastReleased: `${base}:last-released`,
    releasedPrefix: `${base}:released:`,
    queue: `${base}:queue`,
    waiting: `${base}:waiting`,
    line: `${base}:line`,
    multiWaiting: `${base}:multi-waiting`,
    reserved: `${base}:reserved`,
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
  return Object.freeze({
    waiters: `${keys.lock}:waiters`,
    limit: `${keys.lock}:limit`,
  });
}

/**
 * A ReentrantMutex's key beyond the lock's (whose `lock` key holds one of the holder's holds, as a
 * Mutex's holds its holder). Suffix without `}`, as above.
 */
export interface ReentrantKeys {
  /** The holder's other holds (a hash: hold token → '1'), expiring with the lock key. */
  readonly holds: string;
}

export function reentrantKeys(keys: Pick<LockKeys, 'lock'>): ReentrantKeys {
  return Object.freeze({ holds: `${keys.lock}:holds` });
}
