import type { RedisClient } from '../adapters/client-types.js';
import { LockTimeoutError } from '../errors.js';
import { Mutex } from '../primitives/mutex.js';
import { checkFraction } from '../validation.js';

/**
 * *Redis in Action*'s `acquire_lock_with_timeout(conn, lockname, acquire_timeout=10, lock_timeout=10)`
 * (listings 6.11 and 11.5), on Locksmith's scripts: waits up to `acquireTimeout` **seconds** for the
 * lock, which then expires after `lockTimeout` seconds (rounded up, as in the book). Resolves with
 * the owner token, or `false` when the wait ran out. The lease is not auto-extended, as in the book.
 * Unlike the book, a waiter sleeps until the holder releases instead of retrying every millisecond.
 */
export async function acquireLockWithTimeout(
  client: RedisClient,
  lockName: string,
  acquireTimeout = 10,
  lockTimeout = 10,
): Promise<string | false> {
  checkFraction('acquireTimeout', acquireTimeout, 0, 2_000_000);
  checkFraction('lockTimeout', lockTimeout, Number.MIN_VALUE, 2_000_000);
  const mutex = new Mutex(client, lockName, {
    ttlMs: Math.ceil(lockTimeout) * 1000,
    autoExtend: false,
    timeoutMs: Math.ceil(acquireTimeout * 1000),
    // The book's identifier is the owner token, one per acquisition: never a run's shared one.
    maxLocalHolds: 1,
  });
  try {
    return (await mutex.acquire()).token;
  } catch (error) {
    if (error instanceof LockTimeoutError) return false;
    throw error;
  }
}

/**
 * *Redis in Action*'s `release_lock(conn, lockname, identifier)` (listing 11.6): compare-and-delete.
 * Resolves `true` when `token` held the lock, `false` when it had expired or was taken over.
 */
export async function releaseLock(client: RedisClient, lockName: string, token: string): Promise<boolean> {
  return new Mutex(client, lockName).releaseToken(token);
}
