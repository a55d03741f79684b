/**
 * The locks the benchmark compares, behind one small interface: `acquire()` resolves with a release
 * function or rejects (a timeout, retries exhausted); tries are counted either by the lock itself or
 * from the commands it sends (`isTry`).
 */
import { Redlock as SesameRedlock } from '@sesamecare-oss/redlock';
import type { Redis } from 'ioredis';
import {
  MultiSemaphore as RedisSemaphoreMultiSemaphore,
  Mutex as RedisSemaphoreMutex,
  RedlockMutex as RedisSemaphoreRedlockMutex,
  RedlockSemaphore as RedisSemaphoreRedlockSemaphore,
  Semaphore as RedisSemaphoreSemaphore,
} from 'redis-semaphore';
import NodeRedlock from 'redlock';
import { createLock, createRedlock, IoredisAdapter } from 'redlock-universal';
import type { NodeRedisClient } from '../src/index.js';
import { randomNames } from '../tools/lock-kinds/multi-mutex.js';
import { READ_SHARE } from '../tools/lock-kinds/read-write-lock.js';
import { BENCH_REDLOCK_SEMAPHORE_LIMIT } from '../tools/lock-kinds/redlock-semaphore.js';
import { lockKinds } from '../tools/lock-kinds/registry.js';
import { luaLock, originalLock } from './book-locks.js';
import { basicSemaphore, fairSemaphore } from './book-semaphores.js';
import { locksmithCells, locksmithTry, quorumOf, SEMAPHORE_LIMIT, TTL_MS } from './kind-cells.js';
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
  /** Runs only in the P × C cells (several acquirers per process): a variant of how a lock is shared. */
  readonly pxcOnly?: boolean;
  /** How many independent Redis servers it locks across (3 for the Redlock cells; default 1). */
  readonly servers?: 1 | 3;
  create(clients: Clients, key: string): LockUnderTest;
  /** A read-write lock: one client of each cell writes, the others read (not run on 1,000 keys). */
  readonly readWrite?: boolean;
  /** Whether a command sent is one try at the lock (when the lock does not count tries itself). */
  isTry?(name: string, firstArg: string | undefined): boolean;
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
  /** The resources of one acquisition (default: the cell's key alone). */
  resources: (key: string) => string[] = (key) => [key],
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
            const lock = await redlock.acquire(resources(key), TTL_MS);
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

const oneMs = { retryCount: 100_000, retryDelay: 1, retryJitter: 0 };

/**
 * node-redlock's multi-resource acquire on one server (`redlock.acquire([a, b, c], ttl)`), each
 * acquisition taking random names as the Locksmith MultiMutex cell does: its peer.
 */
function redlockMultiImpl(tuned: boolean): ImplSpec {
  return {
    ...redlockImpl(
      `redlock-multi${tuned ? '-1ms' : ''}`,
      `redlock 5.0.0-beta.2, multi-resource acquire (${tuned ? '1 ms retry' : 'defaults'})`,
      (c) => new NodeRedlock([c.ioredis], tuned ? oneMs : {}) as RedlockLike,
      tuned,
      randomNames,
    ),
    limit: Number.MAX_SAFE_INTEGER,
  };
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

/** Locksmith's cells, from the registry of lock kinds, each where its section stands below. */
const locksmithFacets = lockKinds(lib).flatMap((kind) => (kind.bench ? [kind.bench] : []));

/** The Redlock implementations over three servers: Locksmith's and the peers', defaults and tuned. */
const redlockCells: ImplSpec[] = [
  ...locksmithCells(locksmithFacets, 'redlock'),
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

/**
 * The semaphores over three servers (issue 39): Locksmith's RedlockSemaphore and redis-semaphore's,
 * defaults and tuned, limit 3.
 */
const redlockSemaphoreCells: ImplSpec[] = [
  ...locksmithCells(locksmithFacets, 'redlock-semaphore'),
  ...[false, true].map(
    (tuned): ImplSpec => ({
      id: tuned ? 'redis-semaphore-redlock-semaphore-1ms' : 'redis-semaphore-redlock-semaphore',
      label: `redis-semaphore RedlockSemaphore/${BENCH_REDLOCK_SEMAPHORE_LIMIT}, 3 servers (${tuned ? '1 ms retry' : 'defaults'})`,
      family: 'peer',
      tuned,
      servers: 3,
      limit: BENCH_REDLOCK_SEMAPHORE_LIMIT,
      create(clients, key) {
        const options = { lockTimeout: TTL_MS, ...(tuned ? { retryInterval: 1 } : {}) };
        return {
          async acquire() {
            const semaphore = new RedisSemaphoreRedlockSemaphore(
              quorumOf(clients),
              key,
              BENCH_REDLOCK_SEMAPHORE_LIMIT,
              options,
            );
            await semaphore.acquire();
            return () => semaphore.release();
          },
        };
      },
      // Its tries are one acquire script per server (EVALSHA, EVAL when not loaded).
      isTry: (name) => name === 'evalsha' || name === 'eval',
    }),
  ),
];

/**
 * Locksmith's Mutex with a new lock object per acquisition (its cells in the registry make one per
 * process, which the P × C cells' acquirers share): the P × C cells' second Locksmith row.
 */
const locksmithMutexPerAcquire: ImplSpec = {
  id: 'locksmith-mutex-ioredis-per-acquire',
  label: 'Locksmith Mutex (ioredis, a Mutex per acquire)',
  family: 'locksmith',
  limit: 1,
  pxcOnly: true,
  isTry: locksmithTry,
  create(clients, key) {
    return {
      async acquire() {
        const lease = await new lib.Mutex(clients.ioredis, key, { ttlMs: TTL_MS }).acquire();
        return () => lease.release();
      },
    };
  },
};

/** The peer read-write cell's permits: as many readers as a 4 × 25 cell has acquirers. */
const PEER_RW_PERMITS = 100;

/**
 * The implementations the P × C cells run by default (with `--only`, every one it selects): Locksmith's
 * Mutex and the fastest peers, at their defaults and at a 1 ms retry. Each is shared by a process's
 * acquirers as its N × 1 cells create it: one Locksmith Mutex, node-redlock or redlock-universal
 * object per process; a redis-semaphore Mutex per acquisition, as its README does.
 */
export const PXC_DEFAULT_IMPLS: ReadonlySet<string> = new Set([
  'locksmith-mutex-ioredis',
  'locksmith-mutex-ioredis-per-acquire',
  'locksmith-mutex-node-redis',
  'locksmith-rw-read-mostly-ioredis',
  'redis-semaphore-rw-read-mostly',
  'redis-semaphore',
  'redis-semaphore-1ms',
  'redlock',
  'redlock-1ms',
  'sesame',
  'sesame-1ms',
  'redlock-universal',
  'redlock-universal-1ms',
]);

export const impls: readonly ImplSpec[] = [
  ...locksmithCells(locksmithFacets, 'locks'),
  locksmithMutexPerAcquire,
  ...locksmithCells(locksmithFacets, 'fail-fast'),
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
  ...locksmithCells(locksmithFacets, 'read-write'),
  book('book-original', 'Book: original lock (SETNX+EXPIRE, WATCH/MULTI)', originalLock),
  book('book-lua', 'Book: Lua lock', luaLock),
  ...locksmithCells(locksmithFacets, 'semaphores'),
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
  {
    // redis-semaphore has no read-write lock; its Semaphore-based equivalent of Locksmith's
    // read-mostly cell: a reader takes one permit of PEER_RW_PERMITS, a writer all of them
    // (MultiSemaphore, the same key), one new object per acquisition as its README does.
    id: 'redis-semaphore-rw-read-mostly',
    label: `redis-semaphore Semaphore as a read-write lock, ${READ_SHARE * 100}% reads (defaults)`,
    family: 'peer',
    limit: Number.MAX_SAFE_INTEGER,
    pxcOnly: true,
    create(clients, key) {
      const options = { lockTimeout: TTL_MS };
      return {
        async acquire() {
          const lock =
            Math.random() < READ_SHARE
              ? new RedisSemaphoreSemaphore(clients.ioredis, key, PEER_RW_PERMITS, options)
              : new RedisSemaphoreMultiSemaphore(
                  clients.ioredis,
                  key,
                  PEER_RW_PERMITS,
                  PEER_RW_PERMITS,
                  options,
                );
          await lock.acquire();
          return () => lock.release();
        },
      };
    },
  },
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
  redlockMultiImpl(false),
  redlockMultiImpl(true),
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
  ...redlockSemaphoreCells,
];
