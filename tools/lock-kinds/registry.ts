/**
 * The lock kinds of the library, one entry each, with what the harnesses need of them: the lock
 * contract (test/suites/lock-contract.ts, the exit test) and the fault suite (test/faults/). A new
 * lock kind is one entry here; what a harness does with a kind beyond
 * its constructor lives in the kind's own file next to this one.
 *
 * The entries are built for a given library: the tests run the sources, the bench the built package
 * (bench/locksmith.ts), so nothing here imports the library itself.
 */
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
import { READ_WRITE_PERMITS, readWriteHolds } from './read-write-lock.js';
import { CONTRACT_REDLOCK_OPTIONS, REDLOCK_NODES, redlockHolds } from './redlock-mutex.js';
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

export interface LockKind<L extends ContractLock = ContractLock> {
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
  /** How the fault suite's workers hold it (absent: the fault suite does not run it). */
  readonly fault?: FaultFacet;
}

/** Keeps each entry's facets agreeing on the lock type. */
function lockKind<L extends ContractLock>(kind: LockKind<L>): LockKind {
  return kind as unknown as LockKind;
}

/** Waiters of the kinds that queue them in a list (`keys.queue`). */
async function queueLength<L extends { keys: { queue: string } }>(
  lock: L,
  redis: TestClient,
): Promise<number> {
  return Number(await redis.command('LLEN', lock.keys.queue));
}

/**
 * An exclusive lock built as `new Lock(client, name, options)`, whose leases every harness takes as
 * they are; `names` are its name in the contract and its fault id.
 */
function plainLock(
  Lock: Library['Mutex'] | Library['FairMutex'],
  names: { readonly name: string; readonly fault: string },
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
  });
}

export function lockKinds(lib: Library): readonly LockKind[] {
  return [
    plainLock(lib.Mutex, { name: 'Mutex', fault: 'mutex' }),
    plainLock(lib.FairMutex, { name: 'FairMutex', fault: 'fair-mutex' }),
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
      // The fault suite takes both sides of one lock; it is listed here, once.
      fault: {
        id: 'read-write-lock',
        label: 'ReadWriteLock',
        limit: READ_WRITE_PERMITS,
        holds: (at) => readWriteHolds(lib, at),
      },
    }),
    lockKind({
      // Readers share it: the contract's other party is a writer, which every reader excludes.
      name: 'ReadWriteLock.readLock',
      create: (client, name, options) => new lib.ReadWriteLock(client, name, options).readLock(),
      contender: (client, name, options) => new lib.ReadWriteLock(client, name, options).writeLock(),
      waiters: queueLength,
    }),
    lockKind({
      name: 'Semaphore',
      // The contract's exclusive lock is a Semaphore of one permit.
      create: (client, name, options) => new lib.Semaphore(client, name, { ...options, limit: 1 }),
      waiters: queueLength,
      fault: {
        id: 'semaphore',
        label: `Semaphore/${FAULT_SEMAPHORE_LIMIT}`,
        limit: FAULT_SEMAPHORE_LIMIT,
        holds: (at) => semaphoreHolds(lib, at),
      },
    }),
    lockKind({
      name: 'RedlockMutex',
      create: (client, name, options) =>
        new lib.RedlockMutex([client], name, { ...CONTRACT_REDLOCK_OPTIONS, ...options }),
      waiters: async (lock, redis) => Number(await redis.command('ZCARD', lock.keys.line)),
      fault: {
        id: 'redlock-mutex',
        label: `Redlock/${REDLOCK_NODES}`,
        nodes: REDLOCK_NODES,
        holds: (at) => redlockHolds(lib, at),
      },
    }),
  ];
}
