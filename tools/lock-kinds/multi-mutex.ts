/**
 * What the harnesses know of the MultiMutex beyond its constructor: the names it takes for one lock
 * name of the contract or the fault suite, and how its waiters are counted.
 *
 * A harness names one lock; the MultiMutex takes that name and a partner name of its own (same hash
 * tag, so it runs on a cluster too). Every name is a Mutex's own lock, so the harness's checks of
 * the first name (its key holds the holder, its counter the fencing token) are a Mutex's; the fault
 * suite's checker also judges each name's holders on their own (mutual exclusion per name, each
 * name's tokens), so a set whose names other sets share is judged for every one of them.
 */
import type { RedisClient } from '../../src/index.js';
import {
  acquireAs,
  fromLease,
  type HoldContext,
  type LockAdapter,
} from '../../test/faults/toolkit/held-lock.js';
import type { TestClient } from '../../test/fixtures/clients.js';
import type { Library } from './registry.js';

/** The names a MultiMutex takes for the harness's lock `name`: it, and a partner in its hash tag. */
export function multiNames(name: string): string[] {
  return [name, `${name}}+partner`];
}

/** A MultiMutex over `multiNames(name)`. */
export function multiMutexOf(lib: Library, client: RedisClient, name: string, options?: object) {
  return new lib.MultiMutex(client, multiNames(name), options);
}

/**
 * Waiters registered on any of the lock's names (each registers on one name that stopped it: the
 * one whose holder, or reservation, expires last; with the oldest waiter's reservations renewed at
 * different moments that is either name, seen on a loaded machine).
 */
export async function multiWaiters(
  lock: {
    readonly keys: { readonly lock: string };
    readonly nameKeys?: readonly { readonly lock: string }[];
  },
  redis: TestClient,
): Promise<number> {
  let registered = 0;
  for (const keys of lock.nameKeys ?? [lock.keys]) {
    registered += Number(await redis.command('HLEN', `${keys.lock}:multi-waiting`));
  }
  return registered;
}

/**
 * A fault-suite worker's hold: both names. Its key and fencing token are the first name's (the
 * probes read that key, the resource is written with that token); the checker judges every name's
 * holders, each with its own token (`HeldLock.names`).
 */
export function multiMutexHolds(lib: Library, at: HoldContext): LockAdapter {
  const lock = multiMutexOf(lib, at.client, at.name, at.options);
  return {
    acquire: async (signal) => {
      const lease = await acquireAs(at.config, lock, signal, {});
      return { ...fromLease(lease, lock.keys.lock), names: { ...lease.fencingTokens } };
    },
  };
}

/** The bench's multi-name cell: each acquisition takes `MULTI_PICK` random names of `MULTI_NAMES`. */
export const MULTI_NAMES = 20;
export const MULTI_PICK = 3;

/**
 * `MULTI_PICK` distinct random names of the cell's `MULTI_NAMES` (`key}0` … `key}19`: one hash tag),
 * in random order: callers with overlapping sets in any order must not deadlock.
 */
export function randomNames(key: string): string[] {
  const all = Array.from({ length: MULTI_NAMES }, (_, i) => `${key}}${i}`);
  for (let i = all.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [all[i], all[j]] = [all[j] as string, all[i] as string];
  }
  return all.slice(0, MULTI_PICK);
}
