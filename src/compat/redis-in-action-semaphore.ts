import type { RedisClient } from '../adapters/client-types.js';
import { Semaphore } from '../primitives/semaphore.js';

/**
 * *Redis in Action*'s counting semaphores (section 6.3), for code ported from the book, on the
 * Semaphore's scripts. The book's conventions are kept: one attempt that never waits, resolving with
 * the identifier or `null` (the book's `None`); releases and refreshes resolve with a boolean. The
 * book's `timeout` (how long a holder lasts, seconds) is `timeoutMs` here, in milliseconds.
 *
 * Where it differs, by construction: holders expire by the server's clock, never a client's, so
 * the unfairness of 6.3.1 (a host whose clock runs ahead steals permits) cannot happen, and every
 * function is one script (the race 6.3.4 closes with a lock does not exist). Keys are
 * `locksmith:{name}` (see `Semaphore`), not the bare name, and a holder is not auto-extended.
 */

/**
 * The book's semaphore, as one acquisition that never waits. The book's callers keep identifiers,
 * not leases, and release them from anywhere: no call joins its process's batch (`maxLocalHolds: 1`),
 * which would count a permit as held here until its lease said otherwise.
 */
function semaphore(client: RedisClient, name: string, limit: number, timeoutMs: number): Semaphore {
  return new Semaphore(client, name, { limit, ttlMs: timeoutMs, autoExtend: false, maxLocalHolds: 1 });
}

/**
 * For releases and refreshes, which the book calls without the limit: limit 1 only decides how many
 * permits a release may hand straight to queued `Semaphore` waiters (one, once nobody holds any),
 * which is never more than any limit allows; the others take theirs at their next attempt.
 */
function byName(client: RedisClient, name: string): Semaphore {
  return new Semaphore(client, name, { limit: 1 });
}

/**
 * `acquire_semaphore(conn, semname, limit, timeout=10)` (listing 6.12): takes one of `limit`
 * permits for `timeoutMs` (default 10 s) if one is free, without waiting. Resolves with the
 * identifier, or `null` when none is free.
 */
export async function acquireSemaphore(
  client: RedisClient,
  name: string,
  limit: number,
  timeoutMs = 10_000,
): Promise<string | null> {
  return (await semaphore(client, name, limit, timeoutMs).tryAcquire())?.token ?? null;
}

/** `release_semaphore(conn, semname, identifier)` (listing 6.13): `true` when it held a permit. */
export function releaseSemaphore(client: RedisClient, name: string, identifier: string): Promise<boolean> {
  return byName(client, name).releaseToken(identifier);
}

/**
 * `acquire_fair_semaphore(conn, semname, limit, timeout=10)` (listing 6.14). Every Locksmith
 * semaphore is fair (server clock, arrival order), so this is `acquireSemaphore`.
 */
export const acquireFairSemaphore = acquireSemaphore;

/** `release_fair_semaphore(conn, semname, identifier)` (listing 6.15): as `releaseSemaphore`. */
export const releaseFairSemaphore = releaseSemaphore;

/**
 * `refresh_fair_semaphore(conn, semname, identifier)` (listing 6.16): the permit now lasts
 * `timeoutMs` (default 10 s) from now. `true` when `identifier` still held it; `false` when it had
 * timed out (the book then releases it; here nothing of it is left to release).
 */
export function refreshFairSemaphore(
  client: RedisClient,
  name: string,
  identifier: string,
  timeoutMs = 10_000,
): Promise<boolean> {
  return byName(client, name).extendToken(identifier, timeoutMs);
}

/**
 * `acquire_semaphore_with_lock(conn, semname, limit, timeout=10)` (listing 6.17). The book takes a
 * lock around 6.3.2's two round trips so that two callers cannot interleave them; Locksmith's
 * acquisition is one script, so there is nothing to interleave and no lock is taken. Resolves like
 * `acquireSemaphore`.
 */
export const acquireSemaphoreWithLock = acquireSemaphore;
