import type { RedisClient } from '../adapters/client-types.js';
import { AlreadyAcquiredError } from '../errors.js';
import type { Lease } from '../lease/lease.js';
import { Mutex } from '../primitives/mutex.js';
import { checkCount, checkFraction, checkFunction, checkName, checkOptionsObject } from '../validation.js';

/**
 * The options of the Ruby gem `redis_exp_lock`, with its units (seconds) and the names and defaults
 * its README documents. (The gem's code differs from its README: it defaults `expiry` to nil, a key
 * that never expires, and reads the interval from `retry_interval`. The documented ones are kept.)
 */
export interface RedisExpLockOptions {
  /** (required) An ioredis, iovalkey or node-redis client. */
  redis: RedisClient;
  /**
   * Lifetime of the lock in **seconds**; default 60. `null` asks for a lock that does not expire
   * while held: Locksmith keeps it alive with its watchdog instead, so a crashed holder still frees
   * it after 30 s rather than never.
   */
  expiry?: number | null;
  /** Further attempts after the first when the lock is taken; default 0. */
  retries?: number;
  /** Seconds between attempts; default 0.01. A release wakes a waiter earlier. */
  interval?: number;
}

/**
 * The API of the Ruby gem `redis_exp_lock` (lib/redis_exp_lock.rb, 0.1.1), method for method: a lock
 * object bound to one key that is either locked or not. Built on `Mutex`; use `Mutex` directly for
 * new code.
 *
 * As in the gem, "locked" is this object's own state, not Redis': it starts with a successful
 * `lock()`/`tryLock()` and ends only with `unlock()`, even if the key expired in Redis meanwhile.
 * That is what keeps an object from stranding its own key: while locked, locking again throws
 * `AlreadyAcquiredError` (it cannot quietly fail and forget the token), and `unlock()` always sends
 * the compare-and-delete for the token it holds.
 */
export class RedisExpLock {
  readonly lockKey: string;
  private readonly mutex: Mutex;
  private readonly retries: number;
  /** Set from a successful lock until `unlock()`, whatever happened to the key in Redis. */
  private lease: Lease | undefined;
  /**
   * A lock attempt is under way. The gem is synchronous and cannot overlap two; here a second call
   * made before the first settles is refused like a call on a locked object, so two attempts never
   * race to set (or clear) `lease`.
   */
  private acquiring = false;

  constructor(lockKey: string, options: RedisExpLockOptions) {
    const given = checkOptionsObject<RedisExpLockOptions>('options', options, [
      'redis',
      'expiry',
      'retries',
      'interval',
    ]);
    if (given.redis === undefined)
      throw new TypeError('Expected `redis` to be an ioredis or node-redis client, got `undefined`');
    const expiry = given.expiry === undefined ? 60 : given.expiry;
    if (expiry !== null) checkFraction('expiry', expiry, 0.001, 2_000_000);
    this.retries = checkCount('retries', given.retries ?? 0);
    const interval = checkFraction('interval', given.interval ?? 0.01, 0, 2_000_000);
    this.lockKey = checkName('lockKey', lockKey);
    this.mutex = new Mutex(given.redis, lockKey, {
      ...(expiry === null ? { autoExtend: true } : { ttlMs: Math.ceil(expiry * 1000), autoExtend: false }),
      retries: this.retries,
      retryDelayMs: Math.round(interval * 1000),
      retryJitterMs: 0,
      timeoutMs: Number.POSITIVE_INFINITY,
    });
  }

  /**
   * `locked?`: whether this object is in the locked state, without asking Redis: `true` from a
   * successful `lock()`/`tryLock()` until `unlock()`, also after the key expired (ask Redis with
   * `keyOwned()`).
   */
  locked(): boolean {
    return this.lease !== undefined;
  }

  /** `key_locked?`: asks Redis whether any client holds the key. */
  keyLocked(): Promise<boolean> {
    return this.mutex.isLocked();
  }

  /** `key_owned?`: asks Redis whether this object holds the key. */
  async keyOwned(): Promise<boolean> {
    return (await this.lease?.isOwned()) ?? false;
  }

  /**
   * `try_lock`: one attempt; `true` when acquired. Throws `AlreadyAcquiredError` while `locked()`
   * (even if the key expired: `unlock()` first), or while another attempt of this object is under way.
   */
  async tryLock(): Promise<boolean> {
    const lease = await this.acquireWith(() => this.mutex.tryAcquire());
    return lease !== null;
  }

  /**
   * `lock`: waits for the lock, resolving with the number of attempts it took. Throws
   * `AlreadyAcquiredError` if already locked, `TooManyAttemptsError` when `retries` ran out.
   */
  async lock(): Promise<number> {
    const lease = await this.acquireWith(() => this.mutex.acquire());
    return lease.attempts;
  }

  /**
   * `unlock`: frees the lock if its key still holds this object's token and leaves the locked state.
   * `true` when it freed it; `false` if this object was not locked, or the key had expired (a key
   * someone else took since is left alone). When Redis cannot be reached it rejects and, as in the
   * gem, the object stays locked, so `unlock()` can be called again.
   */
  async unlock(): Promise<boolean> {
    const lease = this.lease;
    if (lease === undefined) return false;
    // A lease reports `false` once its own validity ran out, which ends a drift margin before the
    // key's TTL (or earlier after a pause), even if its compare-and-delete still found the token;
    // and a second `release()` (after a failed one) sends nothing. The gem has no validity of its
    // own: it answers whether the key held its token. So on `false`, ask Redis once more: a token
    // just released is remembered for 60 s (in the lock key's released state), so the answer is
    // `true` exactly when either call freed our lock, and it also retries a release that failed.
    const released = (await lease.release()) || (await this.mutex.releaseToken(lease.token));
    if (this.lease === lease) this.lease = undefined;
    return released;
  }

  /**
   * `synchronize`: lock, run `work(attempts)`, unlock; resolves with `work`'s result. Unlike the
   * gem, it also unlocks when `work` throws (the gem leaves the object locked and the key held until
   * its expiry); `work`'s error is the one you get. Rejects like `lock()` and `unlock()` otherwise.
   */
  async synchronize<T>(work: (attempts: number) => T | Promise<T>): Promise<T> {
    checkFunction('work', work);
    const attempts = await this.lock();
    let result: T;
    try {
      result = await work(attempts);
    } catch (error) {
      await this.unlock().catch(() => false);
      throw error;
    }
    await this.unlock();
    return result;
  }

  /** Runs one acquisition for this object: refused while locked or acquiring; keeps what it gets. */
  private async acquireWith<L extends Lease | null>(acquire: () => Promise<L>): Promise<L> {
    if (this.lease !== undefined || this.acquiring) throw new AlreadyAcquiredError(this.lockKey);
    this.acquiring = true;
    try {
      const lease = await acquire();
      if (lease !== null) this.lease = lease;
      return lease;
    } finally {
      this.acquiring = false;
    }
  }
}
