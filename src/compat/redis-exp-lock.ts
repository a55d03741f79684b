import type { RedisClient } from '../adapters/client-types.js';
import { AlreadyAcquiredError } from '../errors.js';
import type { Lease } from '../lease/lease.js';
import { Mutex } from '../primitives/mutex.js';
import { checkCount, checkFraction, checkFunction, checkOptionsObject } from '../validation.js';

/** The options of the Ruby gem `redis_exp_lock`, with its units (seconds) and defaults. */
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
 * The API of the Ruby gem `redis_exp_lock`, method for method: a lock object bound to one key that
 * is either locked or not. Built on `Mutex`; use `Mutex` directly for new code.
 */
export class RedisExpLock {
  readonly lockKey: string;
  private readonly mutex: Mutex;
  private readonly retries: number;
  private lease: Lease | undefined;

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
    this.lockKey = lockKey;
    this.mutex = new Mutex(given.redis, lockKey, {
      ...(expiry === null ? { autoExtend: true } : { ttlMs: Math.ceil(expiry * 1000), autoExtend: false }),
      retries: this.retries,
      retryDelayMs: Math.round(interval * 1000),
      retryJitterMs: 0,
      timeoutMs: Number.POSITIVE_INFINITY,
    });
  }

  /** `locked?`: whether this object holds the lock, without asking Redis. */
  locked(): boolean {
    return this.lease?.isHeld ?? false;
  }

  /** `key_locked?`: asks Redis whether any client holds the key. */
  keyLocked(): Promise<boolean> {
    return this.mutex.isLocked();
  }

  /** `key_owned?`: asks Redis whether this object holds the key. */
  async keyOwned(): Promise<boolean> {
    return (await this.lease?.isOwned()) ?? false;
  }

  /** `try_lock`: one attempt; `true` when acquired. Throws `AlreadyAcquiredError` if already locked. */
  async tryLock(): Promise<boolean> {
    this.ensureUnlocked();
    this.lease = (await this.mutex.tryAcquire()) ?? undefined;
    return this.lease !== undefined;
  }

  /**
   * `lock`: waits for the lock, resolving with the number of attempts it took. Throws
   * `AlreadyAcquiredError` if already locked, `TooManyAttemptsError` when `retries` ran out.
   */
  async lock(): Promise<number> {
    this.ensureUnlocked();
    this.lease = await this.mutex.acquire();
    return this.lease.attempts;
  }

  /** `unlock`: `true` when released; `false` if never locked or the lock expired meanwhile. */
  async unlock(): Promise<boolean> {
    const lease = this.lease;
    this.lease = undefined;
    return lease ? lease.release() : false;
  }

  /** `synchronize`: lock, run `work(attempts)`, unlock in `finally`; resolves with `work`'s result. */
  async synchronize<T>(work: (attempts: number) => T | Promise<T>): Promise<T> {
    checkFunction('work', work);
    const attempts = await this.lock();
    try {
      return await work(attempts);
    } finally {
      await this.unlock().catch(() => false);
    }
  }

  private ensureUnlocked(): void {
    if (this.lease?.isHeld) throw new AlreadyAcquiredError(this.lockKey);
  }
}
