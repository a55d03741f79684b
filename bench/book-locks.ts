/**
 * *Redis in Action*'s two locks as the book wrote them (listings 6.11/11.4, the WATCH/MULTI release
 * of 6.2.5, and the Lua lock of 11.5/11.6), ported line by line from Python to ioredis so the
 * benchmark reproduces Table 11.2: a busy retry with a 1 ms sleep between tries.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';

export interface BookLock {
  /** Resolves with the identifier, or false when `acquireTimeoutS` ran out. */
  acquire(): Promise<string | false>;
  release(identifier: string): Promise<boolean>;
  /** Loop iterations of `acquire` so far (the book's "tries"). */
  readonly tries: number;
}

/** Listing 11.4 (acquire) and 6.2.5's release_lock (WATCH, GET, MULTI/DEL/EXEC). */
export function originalLock(conn: Redis, name: string, acquireTimeoutS = 10, lockTimeoutS = 10): BookLock {
  const lockname = `lock:${name}`;
  const lockTimeout = Math.ceil(lockTimeoutS);
  let tries = 0;
  return {
    get tries() {
      return tries;
    },
    async acquire() {
      const identifier = randomUUID();
      const end = Date.now() + acquireTimeoutS * 1000;
      while (Date.now() < end) {
        tries += 1;
        if (await conn.setnx(lockname, identifier)) {
          await conn.expire(lockname, lockTimeout);
          return identifier;
        }
        // redis-py's ttl() gave None for a key without expiry: `not conn.ttl(lockname)`.
        const ttl = await conn.ttl(lockname);
        if (ttl === -1 || ttl === 0) await conn.expire(lockname, lockTimeout);
        await sleep(1);
      }
      return false;
    },
    async release(identifier) {
      for (;;) {
        await conn.watch(lockname);
        if ((await conn.get(lockname)) === identifier) {
          const result = await conn.multi().del(lockname).exec();
          if (result === null) continue; // WatchError: someone touched the key, try again
          return true;
        }
        await conn.unwatch();
        return false;
      }
    },
  };
}

const acquireLua = `
if redis.call('exists', KEYS[1]) == 0 then
    return redis.call('setex', KEYS[1], unpack(ARGV))
end
`;
const releaseLua = `
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1]) or true
end
`;

type WithBookScripts = Redis & {
  bookAcquireLua(key: string, timeout: number, identifier: string): Promise<unknown>;
  bookReleaseLua(key: string, identifier: string): Promise<unknown>;
};

/** Listings 11.5 and 11.6: the Lua lock (script_load = EVALSHA with a fallback to EVAL). */
export function luaLock(conn: Redis, name: string, acquireTimeoutS = 10, lockTimeoutS = 10): BookLock {
  const c = conn as WithBookScripts;
  if (typeof c.bookAcquireLua !== 'function') {
    conn.defineCommand('bookAcquireLua', { numberOfKeys: 1, lua: acquireLua });
    conn.defineCommand('bookReleaseLua', { numberOfKeys: 1, lua: releaseLua });
  }
  const lockname = `lock:${name}`;
  const lockTimeout = Math.ceil(lockTimeoutS);
  let tries = 0;
  return {
    get tries() {
      return tries;
    },
    async acquire() {
      const identifier = randomUUID();
      let acquired = false;
      const end = Date.now() + acquireTimeoutS * 1000;
      while (Date.now() < end && !acquired) {
        tries += 1;
        acquired = (await c.bookAcquireLua(lockname, lockTimeout, identifier)) === 'OK';
        if (!acquired) await sleep(1);
      }
      return acquired && identifier;
    },
    async release(identifier) {
      return Boolean(await c.bookReleaseLua(lockname, identifier));
    },
  };
}
