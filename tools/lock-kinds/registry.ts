/**
 * The lock kinds of the library, one entry each, with what the harnesses need of them: the lock
 * contract (test/suites/lock-contract.ts, the exit test). A new lock kind is one entry here; what a
 * harness does with a kind beyond its constructor lives in the kind's own file next to this one.
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
import type { TestClient } from '../../test/fixtures/clients.js';
import { CONTRACT_REDLOCK_OPTIONS } from './redlock-mutex.js';

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
}

/** Keeps each entry's `create` and `waiters` agreeing on the lock type. */
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

export function lockKinds(lib: Library): readonly LockKind[] {
  return [
    lockKind({
      name: 'Mutex',
      create: (client, name, options) => new lib.Mutex(client, name, options),
      waiters: queueLength,
    }),
    lockKind({
      name: 'FairMutex',
      create: (client, name, options) => new lib.FairMutex(client, name, options),
      waiters: queueLength,
    }),
    lockKind({
      name: 'ReentrantMutex',
      create: (client, name, options) => new lib.ReentrantMutex(client, name, options),
      waiters: queueLength,
    }),
    lockKind({
      name: 'ReadWriteLock.writeLock',
      create: (client, name, options) => new lib.ReadWriteLock(client, name, options).writeLock(),
      waiters: queueLength,
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
    }),
    lockKind({
      name: 'RedlockMutex',
      create: (client, name, options) =>
        new lib.RedlockMutex([client], name, { ...CONTRACT_REDLOCK_OPTIONS, ...options }),
      waiters: async (lock, redis) => Number(await redis.command('ZCARD', lock.keys.line)),
    }),
  ];
}
