/**
 * The lock kinds of the library, one entry each, with what every harness needs of them: the lock
 * contract (test/suites/lock-contract.ts, the exit test), the fault suite (test/faults/) and the
 * bench (bench/impls.ts). A new lock kind is one entry here; what a harness does with a kind beyond
 * its constructor lives in the kind's own file next to this one.
 *
 * The entries are built for a given library: the tests run the sources, the bench the built package
 * (bench/locksmith.ts), so nothing here imports the library itself.
 */
import {
  SEMAPHORE_LIMIT as BENCH_SEMAPHORE_LIMIT,
  type BenchCell,
  type BenchFacet,
  leaseCycle,
  locksmithTry,
  quorumOf,
  TTL_MS,
} from '../../bench/kind-cells.js';
import type * as Locksmith from '../../src/index.js';
import type {
  AcquireOptions,
  Lease,
  LockedWork,
  LockOptions,
  LockState,
  RedisClient,
  TryAcquireOptions,
} from '../../src/index.js';
import { type FaultFacet, leaseHolds } from '../../test/faults/toolkit/held-lock.js';
import type { TestClient } from '../../test/fixtures/clients.js';
import {
  MULTI_NAMES,
  MULTI_PICK,
  multiMutexHolds,
  multiMutexOf,
  multiWaiters,
  randomNames,
} from './multi-mutex.js';
import {
  READ_SHARE,
  READ_WRITE_PERMITS,
  readMostly,
  readWriteHolds,
  readWriteRoles,
} from './read-write-lock.js';
import {
  CONTRACT_REDLOCK_OPTIONS,
  REDLOCK_NODES,
  redlockBenchCells,
  redlockCycle,
  redlockHolds,
} from './redlock-mutex.js';
import {
  BENCH_REDLOCK_SEMAPHORE_LIMIT,
  FAULT_REDLOCK_SEMAPHORE,
  redlockSemaphoreBenchCells,
  redlockSemaphoreHolds,
} from './redlock-semaphore.js';
import { reentrantHolds } from './reentrant-mutex.js';
import { FAULT_SEMAPHORE_LIMIT, semaphoreHolds } from './semaphore.js';

/** The library's module: its sources, or the built package. */
export type Library = typeof Locksmith;

/**
 * What the contract may use of a lock: its public API, and of its keys only the lock key (holds the
 * owner token, expires with the lease) and the fencing counter.
 */
export interface ContractLock {
  readonly name: string;
  readonly options: Readonly<LockOptions>;
  readonly keys: { readonly lock: string; readonly fence: string };
  acquire(options?: AcquireOptions): Promise<Lease>;
  tryAcquire(options?: TryAcquireOptions): Promise<Lease | null>;
  using<T>(work: LockedWork<T>, options?: AcquireOptions): Promise<T>;
  releaseToken(token: string): Promise<boolean>;
  isLocked(): Promise<boolean>;
  inspect(): Promise<LockState>;
}

export interface LockKind<L extends ContractLock = ContractLock, Variant extends object = object> {
  readonly name: string;
  /** A lock named `name` on `client`, as `new Kind(client, name, options)`. */
  create(client: RedisClient, name: string, options?: Partial<LockOptions>): L;
  /**
   * The lock the contract contends with while one of these is held, as `create`: for a shared lock
   * (a read-write lock's read side), what it excludes (the write side). Default: `create`.
   */
  contender?(client: RedisClient, name: string, options?: Partial<LockOptions>): ContractLock;
  /**
   * How many waiters are registered for `lock` right now, read with a plain command on `redis` (no
   * script, so counting script calls is not disturbed). The contract orders its events by this
   * instead of sleeping: "the waiter has asked and is waiting".
   */
  waiters(lock: L, redis: TestClient): Promise<number>;
  /**
   * Options under which each call of one client deals with Redis alone instead of queueing behind
   * the client's own waiter (`maxLocalHolds: 1`), and every release hands the lock to the oldest
   * waiter (the Mutex's `handOffAfterMs: 0`), for the contract's tests that count waiters and script
   * calls in Redis. Absent: the kind never batches, and always hands over.
   */
  readonly alone?: Partial<LockOptions>;
  /**
   * A release wakes every waiter registered on what it freed, not one (MultiMutex: a waiter's other
   * names may still be held, so waking one alone could leave the freed name idle while others wait).
   */
  readonly wakesEveryWaiter?: boolean;
  /**
   * It runs over several independent Redis servers (a Redlock kind) and refuses a cluster client
   * (test/integration/cluster.test.ts): the cluster's contract skips it.
   */
  readonly independentServers?: true;
  /** How the fault suite's workers hold it (absent: the fault suite does not run it). */
  readonly fault?: FaultFacet;
  /** Its cells in the bench (absent: not benchmarked). */
  readonly bench?: BenchFacet<Variant>;
}

/** Keeps each entry's facets agreeing on the lock type and the bench cells' variants. */
function lockKind<L extends ContractLock, Variant extends object>(kind: LockKind<L, Variant>): LockKind {
  return kind as unknown as LockKind;
}

/** A call (Mutex, RedlockMutex, Semaphore) that never joins its client's local batch. */
const batchedAlone = { maxLocalHolds: 1 } as Partial<LockOptions>;

/**
 * A Mutex call that never joins its client's local batch, and whose release hands the lock to the
 * oldest waiter at once rather than leaving a young one asleep (the default `handOffAfterMs`).
 */
const mutexAlone = { ...batchedAlone, handOffAfterMs: 0 } as Partial<LockOptions>;

/** Waiters of the kinds that queue them in a list (`keys.queue`). */
async function queueLength<L extends { keys: { queue: string } }>(
  lock: L,
  redis: TestClient,
): Promise<number> {
  return Number(await redis.command('LLEN', lock.keys.queue));
}

/** The cells of a lock in the single-server table: each client library, and ioredis failing fast. */
const lockCells: readonly BenchCell[] = [
  { section: 'locks', client: 'ioredis' },
  { section: 'locks', client: 'nodeRedis' },
  { section: 'fail-fast', client: 'ioredisFailFast' },
];

/** The options a bench variant of the Mutex sets. */
type MutexVariant = { readonly handOffAfterMs?: number; readonly maxLocalHolds?: number };

/**
 * The Mutex's cells: the lock's, its hand-off-after window set otherwise than by default
 * (`-h<ms>`: a release frees the lock while the oldest waiter is younger than that), and without
 * the local batch (`-alone`: `maxLocalHolds: 1`, what the batch costs a process with one caller).
 */
const mutexCells: readonly BenchCell<MutexVariant>[] = [
  ...lockCells,
  ...[0, 5, 20, 200].map((windowMs) => ({
    section: 'locks' as const,
    client: 'ioredis' as const,
    variant: {
      id: `-h${windowMs}`,
      label: `, handOffAfterMs ${windowMs}`,
      options: { handOffAfterMs: windowMs },
    },
  })),
  {
    section: 'locks',
    client: 'ioredis',
    variant: { id: '-alone', label: ', maxLocalHolds 1', options: { maxLocalHolds: 1 } },
  },
];

/**
 * An exclusive lock built as `new Lock(client, name, options)`, whose leases every harness takes as
 * they are; `names` are its name in the contract, its fault id and its bench id stem.
 */
function plainLock(
  Lock: Library['Mutex'] | Library['FairMutex'],
  names: { readonly name: string; readonly fault: string; readonly bench: string },
  cells: readonly BenchCell<MutexVariant>[] = lockCells,
): LockKind {
  return lockKind({
    name: names.name,
    create: (client, name, options) => new Lock(client, name, options),
    waiters: queueLength,
    fault: {
      id: names.fault,
      label: names.name,
      holds: (at) => leaseHolds(new Lock(at.client, at.name, at.options), at.config),
    },
    bench: {
      id: names.bench,
      label: names.name,
      cells,
      limit: 1,
      isTry: locksmithTry,
      create: (clients, key, cell) =>
        leaseCycle(new Lock(clients[cell.client], key, { ttlMs: TTL_MS, ...cell.variant?.options })),
    },
  });
}

export function lockKinds(lib: Library): readonly LockKind[] {
  return [
    {
      ...plainLock(lib.Mutex, { name: 'Mutex', fault: 'mutex', bench: 'mutex' }, mutexCells),
      alone: mutexAlone,
    },
    plainLock(lib.FairMutex, { name: 'FairMutex', fault: 'fair-mutex', bench: 'fair' }),
    lockKind({
      // Over two names (the contract's, and a partner of its own: multi-mutex.ts).
      name: 'MultiMutex',
      create: (client, name, options) => multiMutexOf(lib, client, name, options),
      waiters: multiWaiters,
      // Its oldest waiter reserves at its first attempt instead of waking once it has waited
      // handOffAfterMs to do so (a call the contract's call counts would see).
      alone: { handOffAfterMs: 0 } as Partial<LockOptions>,
      wakesEveryWaiter: true,
      fault: { id: 'multi-mutex', label: 'MultiMutex/2', holds: (at) => multiMutexHolds(lib, at) },
      bench: {
        id: 'multi',
        label: `MultiMutex, ${MULTI_PICK} random of ${MULTI_NAMES} names`,
        cells: [{ section: 'locks', client: 'ioredis' }],
        // Holders of disjoint sets hold at once: the cell's single-key overlap count does not apply
        // (the contract and fault suites judge exclusion).
        limit: Number.MAX_SAFE_INTEGER,
        isTry: locksmithTry,
        create: (clients, key, cell) => {
          const client = clients[cell.client];
          // One lock object per set of names, made on first use (as the other cells make one per
          // key): the order of a set changes nothing of all-or-none, so sets are sorted first.
          const locks = new Map<string, InstanceType<Library['MultiMutex']>>();
          return {
            async acquire() {
              const names = randomNames(key).sort();
              const id = names.join('\n');
              let lock = locks.get(id);
              if (!lock) {
                lock = new lib.MultiMutex(client, names, { ttlMs: TTL_MS });
                locks.set(id, lock);
              }
              const lease = await lock.acquire();
              return () => lease.release();
            },
          };
        },
      },
    }),
    lockKind({
      name: 'ReentrantMutex',
      create: (client, name, options) => new lib.ReentrantMutex(client, name, options),
      waiters: queueLength,
      // Each acquisition holds it twice (outer and re-entry).
      fault: { id: 'reentrant-mutex', label: 'ReentrantMutex', holds: (at) => reentrantHolds(lib, at) },
    }),
    lockKind({
      name: 'ReadWriteLock.writeLock',
      create: (client, name, options) => new lib.ReadWriteLock(client, name, options).writeLock(),
      waiters: queueLength,
      // The fault suite and the bench take both sides of one lock; they are listed here, once.
      fault: {
        id: 'read-write-lock',
        label: 'ReadWriteLock',
        limit: READ_WRITE_PERMITS,
        holds: (at) => readWriteHolds(lib, at),
      },
      bench: {
        id: 'rw',
        label: 'ReadWriteLock, 1 writer',
        cells: [{ section: 'read-write', client: 'ioredis' }],
        // Readers hold it together: the count of overlapping holders is not a violation here; the
        // parent checks instead that no writer overlapped anyone.
        limit: Number.MAX_SAFE_INTEGER,
        readWrite: true,
        isTry: locksmithTry,
        create: (clients, key, cell) => readWriteRoles(lib, clients, key, cell),
      },
    }),
    lockKind({
      // Readers share it: the contract's other party is a writer, which every reader excludes.
      name: 'ReadWriteLock.readLock',
      create: (client, name, options) => new lib.ReadWriteLock(client, name, options).readLock(),
      contender: (client, name, options) => new lib.ReadWriteLock(client, name, options).writeLock(),
      waiters: queueLength,
      // Both sides of one lock again, mixed per acquisition: the P × C cell of a read-mostly load.
      bench: {
        id: 'rw-read-mostly',
        label: `ReadWriteLock, ${READ_SHARE * 100}% reads`,
        // `-alone`: readers that never share (`maxLocalHolds: 1`), what sharing is measured against.
        cells: [
          { section: 'read-write', client: 'ioredis' },
          {
            section: 'read-write',
            client: 'ioredis',
            variant: { id: '-alone', label: ', maxLocalHolds 1', options: { maxLocalHolds: 1 } },
          },
        ],
        limit: Number.MAX_SAFE_INTEGER,
        pxcOnly: true,
        isTry: locksmithTry,
        create: (clients, key, cell) => readMostly(lib, clients, key, cell),
      },
    }),
    lockKind({
      name: 'Semaphore',
      // The contract's exclusive lock is a Semaphore of one permit.
      create: (client, name, options) => new lib.Semaphore(client, name, { ...options, limit: 1 }),
      waiters: queueLength,
      alone: batchedAlone,
      fault: {
        id: 'semaphore',
        label: `Semaphore/${FAULT_SEMAPHORE_LIMIT}`,
        limit: FAULT_SEMAPHORE_LIMIT,
        holds: (at) => semaphoreHolds(lib, at),
      },
      bench: {
        id: 'semaphore',
        label: `Semaphore/${BENCH_SEMAPHORE_LIMIT}`,
        cells: [
          { section: 'semaphores', client: 'ioredis' },
          { section: 'semaphores', client: 'nodeRedis' },
        ],
        limit: BENCH_SEMAPHORE_LIMIT,
        isTry: locksmithTry,
        create: (clients, key, cell) =>
          leaseCycle(
            new lib.Semaphore(clients[cell.client], key, { ttlMs: TTL_MS, limit: BENCH_SEMAPHORE_LIMIT }),
          ),
      },
    }),
    lockKind({
      name: 'RedlockMutex',
      create: (client, name, options) =>
        new lib.RedlockMutex([client], name, { ...CONTRACT_REDLOCK_OPTIONS, ...options }),
      waiters: async (lock, redis) => Number(await redis.command('ZCARD', lock.keys.line)),
      alone: batchedAlone,
      independentServers: true,
      fault: {
        id: 'redlock-mutex',
        label: `Redlock/${REDLOCK_NODES}`,
        nodes: REDLOCK_NODES,
        holds: (at) => redlockHolds(lib, at),
      },
      bench: {
        id: 'redlock',
        label: 'RedlockMutex',
        cells: redlockBenchCells,
        servers: 3,
        create: (clients, key, cell) =>
          redlockCycle(
            new lib.RedlockMutex(quorumOf(clients), key, { ttlMs: TTL_MS, ...cell.variant?.options }),
          ),
      },
    }),
    lockKind({
      name: 'RedlockSemaphore',
      // The contract's exclusive lock is a RedlockSemaphore of one permit, on a quorum of one.
      create: (client, name, options) =>
        new lib.RedlockSemaphore([client], name, { ...CONTRACT_REDLOCK_OPTIONS, ...options, limit: 1 }),
      waiters: queueLength,
      independentServers: true,
      fault: {
        id: 'redlock-semaphore',
        label: `RedlockSemaphore/${FAULT_REDLOCK_SEMAPHORE.limit}, ${FAULT_REDLOCK_SEMAPHORE.nodes} servers`,
        nodes: FAULT_REDLOCK_SEMAPHORE.nodes,
        limit: FAULT_REDLOCK_SEMAPHORE.limit,
        holds: (at) => redlockSemaphoreHolds(lib, at),
      },
      bench: {
        id: 'redlock-semaphore',
        label: `RedlockSemaphore/${BENCH_REDLOCK_SEMAPHORE_LIMIT}`,
        cells: redlockSemaphoreBenchCells,
        servers: 3,
        limit: BENCH_REDLOCK_SEMAPHORE_LIMIT,
        create: (clients, key) =>
          redlockCycle(
            new lib.RedlockSemaphore(quorumOf(clients), key, {
              ttlMs: TTL_MS,
              limit: BENCH_REDLOCK_SEMAPHORE_LIMIT,
            }),
          ),
      },
    }),
  ];
}
