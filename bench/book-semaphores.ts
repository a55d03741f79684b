/**
 * *Redis in Action*'s counting semaphores as the book wrote them (listings 6.12/6.13, the basic
 * semaphore scored by each client's clock, and 6.14/6.15, the fair semaphore with a counter and an
 * owner ZSET), ported line by line from Python to ioredis (`pipeline(True)` is MULTI/EXEC). The book
 * makes one attempt; to wait, the benchmark retries it every 1 ms until `acquireTimeoutS`, as the
 * book's locks do (bench/book-locks.ts), so the cells compare like with like.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { BookLock } from './book-locks.js';

/** One attempt of a book semaphore: the identifier, or null when no permit was free. */
type Attempt = (conn: Redis, semname: string, limit: number, timeoutS: number) => Promise<string | null>;

/** Listing 6.12: `acquire_semaphore(conn, semname, limit, timeout=10)`. */
const acquireSemaphore: Attempt = async (conn, semname, limit, timeoutS) => {
  const identifier = randomUUID();
  const now = Date.now() / 1000;
  const results = await conn
    .multi()
    .zremrangebyscore(semname, '-inf', now - timeoutS)
    .zadd(semname, now, identifier)
    .zrank(semname, identifier)
    .exec();
  if ((results?.at(-1)?.[1] as number) < limit) return identifier;
  await conn.zrem(semname, identifier);
  return null;
};

/** Listing 6.14: `acquire_fair_semaphore(conn, semname, limit, timeout=10)`. */
const acquireFairSemaphore: Attempt = async (conn, semname, limit, timeoutS) => {
  const identifier = randomUUID();
  const czset = `${semname}:owner`;
  const ctr = `${semname}:counter`;
  const now = Date.now() / 1000;
  const first = await conn
    .multi()
    .zremrangebyscore(semname, '-inf', now - timeoutS)
    .zinterstore(czset, 2, czset, semname, 'WEIGHTS', 1, 0)
    .incr(ctr)
    .exec();
  const counter = first?.at(-1)?.[1] as number;
  const second = await conn
    .multi()
    .zadd(semname, now, identifier)
    .zadd(czset, counter, identifier)
    .zrank(czset, identifier)
    .exec();
  if ((second?.at(-1)?.[1] as number) < limit) return identifier;
  await conn.multi().zrem(semname, identifier).zrem(czset, identifier).exec();
  return null;
};

/** Listing 6.13 `release_semaphore`, and 6.15 `release_fair_semaphore` (which also leaves the owner ZSET). */
function release(conn: Redis, semname: string, identifier: string, fair: boolean): Promise<boolean> {
  if (!fair) return conn.zrem(semname, identifier).then(Boolean);
  return conn
    .multi()
    .zrem(semname, identifier)
    .zrem(`${semname}:owner`, identifier)
    .exec()
    .then((results) => Boolean(results?.[0]?.[1]));
}

function bookSemaphore(fair: boolean) {
  const attempt = fair ? acquireFairSemaphore : acquireSemaphore;
  return (conn: Redis, name: string, limit: number, acquireTimeoutS = 10, timeoutS = 10): BookLock => {
    const semname = `semaphore:${name}`;
    let tries = 0;
    return {
      get tries() {
        return tries;
      },
      async acquire() {
        const end = Date.now() + acquireTimeoutS * 1000;
        while (Date.now() < end) {
          tries += 1;
          const identifier = await attempt(conn, semname, limit, timeoutS);
          if (identifier) return identifier;
          await sleep(1);
        }
        return false;
      },
      release: (identifier) => release(conn, semname, identifier, fair),
    };
  };
}

/** Listings 6.12 and 6.13, retried every 1 ms. */
export const basicSemaphore = bookSemaphore(false);
/** Listings 6.14 and 6.15, retried every 1 ms. */
export const fairSemaphore = bookSemaphore(true);
