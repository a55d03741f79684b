/**
 * The locks the benchmark compares, behind one small interface: `acquire()` resolves with a release
 * function or rejects (a timeout, retries exhausted); tries are counted either by the lock itself or
 * from the commands it sends (`isTry`).
 */
import { Redlock as SesameRedlock } from '@sesamecare-oss/redlock';
import type { Redis } from 'ioredis';
import {
  Mutex as RedisSemaphoreMutex,
  RedlockMutex as RedisSemaphoreRedlockMutex,
  Semaphore as RedisSemaphoreSemaphore,
} from 'redis-semaphore';
import NodeRedlock from 'redlock';
import { createLock, createRedlock, IoredisAdapter } from 'redlock-universal';
import type { NodeRedisClient } from '../src/index.js';
import { scripts } from '../src/protocol/scripts.js';
import { luaLock, originalLock } from './book-locks.js';
import { basicSemaphore, fairSemaphore } from './book-semaphores.js';
import { locksmith as lib } from './locksmith.js';
import { rawScriptsIoredis, rawScriptsNodeRedis } from './raw-scripts.js';
import { REFERENCE_ACQUIRE, referenceHandOff } from './reference-handoff.js';

export type Release = () => Promise<unknown>;

export interface LockUnderTest {
  acquire(): Promise<Release>;
  /** A read-write lock's side this client takes (known once its first acquisition started). */
  readonly role?: () => 'read' | 'write' | undefined;
  /** Tries so far, when the lock counts them itself. */
  readonly tries?: () => number;
}

export interface Clients {
  readonly ioredis: Redis;
  /** As Locksmith sees it: the v6 client type is generic per RESP version, so `ReturnType` fits no client. */
  readonly nodeRedis: NodeRedisClient;
  /** ioredis in fail-fast mode (`enableOfflineQueue: false`, no retries per request), connected. */
  readonly ioredisFailFast: Redis;
  /**
   * One ioredis client per server of the Redlock cells (the first server and two more), when the
   * run started them (`servers: 3` implementations).
   */
  readonly quorum: readonly Redis[] | undefined;
}

/** The clients of `Clients` that talk to the one server of the single-node cells. */
type SingleServerClient = 'ioredis' | 'nodeRedis' | 'ioredisFailFast';

export interface ImplSpec {
  readonly id: string;
  readonly label: string;
  /** `reference`: not a real lock, a speed-of-light line (see reference-handoff.ts). */
  readonly family: 'locksmith' | 'book' | 'peer' | 'reference';
  /** Set for the configurations tuned to retry every 1 ms. */
  readonly tuned?: boolean;
  /** How many holders it admits at once: 1 for the locks, `SEMAPHORE_LIMIT` for the semaphores. */
  readonly limit?: number;
  /** Runs only in the uncontended table (one process, 1,000 keys): it cannot wait for a lock. */
  readonly uncontendedOnly?: boolean;
  /** How many independent Redis servers it locks across (3 for the Redlock cells; default 1). */
  readonly servers?: 1 | 3;
  create(clients: Clients, key: string): LockUnderTest;
  /** A read-write lock: one client of each cell writes, the others read (not run on 1,000 keys). */
  readonly readWrite?: boolean;
  /** Whether a command sent is one try at the lock (when the lock does not count tries itself). */
  isTry?(name: string, firstArg: string | undefined): boolean;
}

const TTL_MS = 10_000;

/** The semaphores' permits (issue #11: limit 3, at 2, 5 and 10 clients). */
export const SEMAPHORE_LIMIT = 3;

function locksmithTry(name: string, firstArg: string | undefined): boolean {
  const acquires = [scripts.handOffAcquire, scripts.semaphoreAcquire];
  if (name === 'evalsha') return acquires.some((script) => firstArg === script.sha1);
  if (name === 'eval') return acquires.some((script) => firstArg === script.source);
  return false;
}

function locksmith(
  id: string,
  label: string,
  Kind: typeof lib.Mutex | typeof lib.FairMutex | typeof lib.Semaphore,
  client: SingleServerClient,
): ImplSpec {
  const limit = Kind === lib.Semaphore ? SEMAPHORE_LIMIT : 1;
  return {
    id,
    label,
    family: 'locksmith',
    limit,
    create(clients, key) {
      const lock =
        Kind === lib.Semaphore
          ? new lib.Semaphore(clients[client], key, { ttlMs: TTL_MS, limit })
          : new (Kind as typeof lib.Mutex)(clients[client], key, { ttlMs: TTL_MS });
      return {
        async acquire() {
          const lease = await lock.acquire();
          return () => lease.release();
        },
      };
    },
    isTry: locksmithTry,
  };
}

function book(id: string, label: string, make: typeof originalLock, limit = 1): ImplSpec {
  return {
    id,
    label,
    family: 'book',
    limit,
    create(clients, key) {
      const lock = make(clients.ioredis, key, 10, TTL_MS / 1000);
      return {
        async acquire() {
          const identifier = await lock.acquire();
          if (identifier === false) throw new Error('acquire_lock_with_timeout returned False');
          return () => lock.release(identifier);
        },
        tries: () => lock.tries,
      };
    },
  };
}

type RedlockLike = {
  acquire(
    resources: string[],
    duration: number,
  ): Promise<{ attempts: unknown[]; release(): Promise<unknown> }>;
};

function redlockImpl(
  id: string,
  label: string,
  make: (clients: Clients) => RedlockLike,
  tuned: boolean,
): ImplSpec {
  return {
    id,
    label,
    family: 'peer',
    tuned,
    create(clients, key) {
      const redlock = make(clients);
      let tries = 0;
      return {
        async acquire() {
          try {
            const lock = await redlock.acquire([key], TTL_MS);
            tries += lock.attempts.length;
            return () => lock.release();
          } catch (error) {
            tries += (error as { attempts?: unknown[] }).attempts?.length ?? 0;
            throw error;
          }
        },
        tries: () => tries,
      };
    },
  };
}

/**
 * Locksmith's ReadWriteLock with one writer and readers: the first client of a cell to ask claims
 * the writer's role (SET NX on a key of the cell's own), every other client reads. Its cells are run
 * with one client more than the readers wanted (`--clients=2,6,11`: 1, 5 and 10 readers).
 */
function locksmithReadWrite(id: string, label: string, client: SingleServerClient): ImplSpec {
  return {
    id,
    label,
    family: 'locksmith',
    readWrite: true,
    // Readers hold it together: the count of overlapping holders is not a violation here; the
    // parent checks instead that no writer overlapped anyone.
    limit: Number.MAX_SAFE_INTEGER,
    create(clients, key) {
      const rw = new lib.ReadWriteLock(clients[client], key, { ttlMs: TTL_MS });
      let role: 'read' | 'write' | undefined;
      const claimed = clients.ioredis.set(`${key}:bench-writer`, '1', 'NX').then((ok) => {
        role = ok === 'OK' ? 'write' : 'read';
        return role;
      });
      return {
        role: () => role,
        async acquire() {
          const side = (role ?? (await claimed)) === 'write' ? rw.writeLock() : rw.readLock();
          const lease = await side.acquire();
          return () => lease.release();
        },
      };
    },
    isTry: locksmithTry,
  };
}

const oneMs = { retryCount: 100_000, retryDelay: 1, retryJitter: 0 };

/** The clients of a Redlock cell's three servers (run.ts starts them for `servers: 3` implementations). */
function quorumOf(clients: Clients): Redis[] {
  if (!clients.quorum) throw new Error('a Redlock cell needs three servers (BENCH_REDLOCK_URLS)');
  return [...clients.quorum];
}

/** redlock-universal on one server (`createLock`) or three (`createRedlock`), defaults or tuned. */
function universalImpl(tuned: boolean, servers: 1 | 3): ImplSpec {
  const retry = tuned ? { retryDelay: 1, retryAttempts: 10_000 } : {};
  return {
    id: `redlock-universal${servers === 3 ? '3' : ''}${tuned ? '-1ms' : ''}`,
    label: `redlock-universal${servers === 3 ? ', 3 servers' : ''} (${tuned ? '1 ms retry' : 'defaults'})`,
    family: 'peer',
    tuned,
    servers,
    create(clients, key) {
      const lock =
        servers === 3
          ? createRedlock({
              adapters: quorumOf(clients).map((c) => new IoredisAdapter(c)),
              key,
              ttl: TTL_MS,
              ...retry,
            })
          : createLock({ adapter: new IoredisAdapter(clients.ioredis), key, ttl: TTL_MS, ...retry });
      return {
        async acquire() {
          const handle = await lock.acquire();
          return () => lock.release(handle);
        },
      };
    },
    // redlock-universal tries with SET key value PX ttl NX (one per server).
    isTry: (name) => name === 'set',
  };
}

/** The Redlock implementations over three servers: Locksmith's and the peers', defaults and tuned. */
/**
 * Locksmith's RedlockMutex with its defaults (strictly first come, first served), and with a
 * hand-off-after window (`w<ms>`: a releaser asking again keeps a free lock while the first waiter
 * is younger than that).
 */
const locksmithRedlockCells = [undefined, 2, 20].map(
  (windowMs): ImplSpec => ({
    id: `locksmith-redlock-ioredis${windowMs === undefined ? '' : `-w${windowMs}`}`,
    label: `Locksmith RedlockMutex (ioredis, 3 servers${windowMs === undefined ? '' : `, handOffAfterMs ${windowMs}`})`,
    family: 'locksmith',
    servers: 3,
    create(clients, key) {
      const lock = new lib.RedlockMutex(quorumOf(clients), key, {
        ttlMs: TTL_MS,
        ...(windowMs === undefined ? {} : { handOffAfterMs: windowMs }),
      });
      let tries = 0;
      return {
        async acquire() {
          const lease = await lock.acquire();
          tries += lease.attempts;
          return () => lease.release();
        },
        tries: () => tries,
      };
    },
  }),
);

const redlockCells: ImplSpec[] = [
  ...locksmithRedlockCells,
  ...[false, true].flatMap((tuned): ImplSpec[] => [
    {
      ...redlockImpl(
        tuned ? 'redlock3-1ms' : 'redlock3',
        `redlock 5.0.0-beta.2, 3 servers (${tuned ? '1 ms retry' : 'defaults'})`,
        (c) => new NodeRedlock(quorumOf(c), tuned ? oneMs : {}) as RedlockLike,
        tuned,
      ),
      servers: 3,
    },
    {
      ...redlockImpl(
        tuned ? 'sesame3-1ms' : 'sesame3',
        `@sesamecare-oss/redlock, 3 servers (${tuned ? '1 ms retry' : 'defaults'})`,
        (c) => new SesameRedlock(quorumOf(c), tuned ? oneMs : {}) as unknown as RedlockLike,
        tuned,
      ),
      servers: 3,
    },
    {
      id: tuned ? 'redis-semaphore-redlock-1ms' : 'redis-semaphore-redlock',
      label: `redis-semaphore RedlockMutex, 3 servers (${tuned ? '1 ms retry' : 'defaults'})`,
      family: 'peer',
      tuned,
      servers: 3,
      create(clients, key) {
        const options = { lockTimeout: TTL_MS, ...(tuned ? { retryInterval: 1 } : {}) };
        return {
          async acquire() {
            const mutex = new RedisSemaphoreRedlockMutex(quorumOf(clients), key, options);
            await mutex.acquire();
            return () => mutex.release();
          },
        };
      },
      // Its tries are one SET … NX per server: three commands per try.
      isTry: (name) => name === 'set',
    },
    universalImpl(tuned, 3),
  ]),
];

export const impls: readonly ImplSpec[] = [
  locksmith('locksmith-mutex-ioredis', 'Locksmith Mutex (ioredis)', lib.Mutex, 'ioredis'),
  locksmith('locksmith-mutex-node-redis', 'Locksmith Mutex (node-redis)', lib.Mutex, 'nodeRedis'),
  locksmith('locksmith-fair-ioredis', 'Locksmith FairMutex (ioredis)', lib.FairMutex, 'ioredis'),
  locksmith('locksmith-fair-node-redis', 'Locksmith FairMutex (node-redis)', lib.FairMutex, 'nodeRedis'),
  locksmith(
    'locksmith-mutex-ioredis-failfast',
    'Locksmith Mutex (ioredis, enableOfflineQueue: false)',
    lib.Mutex,
    'ioredisFailFast',
  ),
  locksmith(
    'locksmith-fair-ioredis-failfast',
    'Locksmith FairMutex (ioredis, enableOfflineQueue: false)',
    lib.FairMutex,
    'ioredisFailFast',
  ),
  {
    id: 'reference-handoff',
    label: 'Reference FIFO hand-off (unsafe, ~40 lines)',
    family: 'reference',
    create: (clients, key) => referenceHandOff(clients.ioredis, key, TTL_MS),
    isTry: (name, firstArg) => name === 'eval' && firstArg === REFERENCE_ACQUIRE,
  },
  {
    id: 'raw-scripts-ioredis',
    label: "Locksmith's scripts sent directly (ioredis): the client's floor",
    family: 'reference',
    uncontendedOnly: true,
    create: (clients, key) => rawScriptsIoredis(clients.ioredis, key, TTL_MS),
  },
  {
    id: 'raw-scripts-node-redis',
    label: "Locksmith's scripts sent directly (node-redis): the client's floor",
    family: 'reference',
    uncontendedOnly: true,
    create: (clients, key) => rawScriptsNodeRedis(clients.nodeRedis, key, TTL_MS),
  },
  locksmithReadWrite('locksmith-rw-ioredis', 'Locksmith ReadWriteLock, 1 writer (ioredis)', 'ioredis'),
  book('book-original', 'Book: original lock (SETNX+EXPIRE, WATCH/MULTI)', originalLock),
  book('book-lua', 'Book: Lua lock', luaLock),
  locksmith('locksmith-semaphore-ioredis', 'Locksmith Semaphore/3 (ioredis)', lib.Semaphore, 'ioredis'),
  locksmith(
    'locksmith-semaphore-node-redis',
    'Locksmith Semaphore/3 (node-redis)',
    lib.Semaphore,
    'nodeRedis',
  ),
  book(
    'book-semaphore',
    'Book: semaphore/3 (6.3.1, client clocks, 1 ms retry)',
    (conn, key, wait, ttl) => basicSemaphore(conn, key, SEMAPHORE_LIMIT, wait, ttl),
    SEMAPHORE_LIMIT,
  ),
  book(
    'book-fair-semaphore',
    'Book: fair semaphore/3 (6.3.2, 1 ms retry)',
    (conn, key, wait, ttl) => fairSemaphore(conn, key, SEMAPHORE_LIMIT, wait, ttl),
    SEMAPHORE_LIMIT,
  ),
  ...[false, true].map(
    (tuned): ImplSpec => ({
      id: tuned ? 'redis-semaphore-semaphore-1ms' : 'redis-semaphore-semaphore',
      label: `redis-semaphore Semaphore/3 (${tuned ? '1 ms retry' : 'defaults'})`,
      family: 'peer',
      tuned,
      limit: SEMAPHORE_LIMIT,
      create(clients, key) {
        const options = { lockTimeout: TTL_MS, ...(tuned ? { retryInterval: 1 } : {}) };
        return {
          async acquire() {
            const semaphore = new RedisSemaphoreSemaphore(clients.ioredis, key, SEMAPHORE_LIMIT, options);
            await semaphore.acquire();
            return () => semaphore.release();
          },
        };
      },
      // redis-semaphore's semaphore tries with one acquire script (EVALSHA, EVAL when not loaded).
      isTry: (name) => name === 'evalsha' || name === 'eval',
    }),
  ),
  redlockImpl(
    'redlock',
    'redlock 5.0.0-beta.2 (defaults)',
    (c) => new NodeRedlock([c.ioredis]) as RedlockLike,
    false,
  ),
  redlockImpl(
    'redlock-1ms',
    'redlock 5.0.0-beta.2 (1 ms retry)',
    (c) => new NodeRedlock([c.ioredis], oneMs) as RedlockLike,
    true,
  ),
  redlockImpl(
    'sesame',
    '@sesamecare-oss/redlock (defaults)',
    (c) => new SesameRedlock([c.ioredis]) as unknown as RedlockLike,
    false,
  ),
  redlockImpl(
    'sesame-1ms',
    '@sesamecare-oss/redlock (1 ms retry)',
    (c) => new SesameRedlock([c.ioredis], oneMs) as unknown as RedlockLike,
    true,
  ),
  ...[false, true].map(
    (tuned): ImplSpec => ({
      id: tuned ? 'redis-semaphore-1ms' : 'redis-semaphore',
      label: `redis-semaphore Mutex (${tuned ? '1 ms retry' : 'defaults'})`,
      family: 'peer',
      tuned,
      create(clients, key) {
        const options = { lockTimeout: TTL_MS, ...(tuned ? { retryInterval: 1 } : {}) };
        return {
          async acquire() {
            const mutex = new RedisSemaphoreMutex(clients.ioredis, key, options);
            await mutex.acquire();
            return () => mutex.release();
          },
        };
      },
      // redis-semaphore's mutex tries with SET key id PX ttl NX.
      isTry: (name) => name === 'set',
    }),
  ),
  ...[false, true].map((tuned) => universalImpl(tuned, 1)),
  ...redlockCells,
];
