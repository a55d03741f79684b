/**
 * Every lock kind the lock contract (lock-contract.ts) runs for (a shared one against what it excludes). A new lock kind that
 * promises the contract (a Semaphore with limit 1, a ReentrantMutex, a read-write lock's write
 * side, ...) registers here with one entry, and runs the whole contract for every client kind.
 */
import {
  type AcquireOptions,
  FairMutex,
  type Lease,
  type LockedWork,
  type LockOptions,
  type LockState,
  Mutex,
  ReadWriteLock,
  type RedisClient,
  RedlockMutex,
  ReentrantMutex,
  Semaphore,
  type TryAcquireOptions,
} from '../../src/index.js';
import type { TestClient } from '../fixtures/clients.js';

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
   * The lock the contract contends with while one of these is held, as \`create\`: for a shared lock
   * (a read-write lock's read side), what it excludes (the write side). Default: \`create\`.
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

export const lockKinds: readonly LockKind[] = [
  lockKind({
    name: 'Mutex',
    create: (client, name, options) => new Mutex(client, name, options),
    waiters: async (lock, redis) => Number(await redis.command('LLEN', lock.keys.queue)),
  }),
  lockKind({
    name: 'FairMutex',
    create: (client, name, options) => new FairMutex(client, name, options),
    waiters: async (lock, redis) => Number(await redis.command('LLEN', lock.keys.queue)),
  }),
  lockKind({
    name: 'ReentrantMutex',
    create: (client, name, options) => new ReentrantMutex(client, name, options),
    waiters: async (lock, redis) => Number(await redis.command('LLEN', lock.keys.queue)),
  }),
  lockKind({
    name: 'ReadWriteLock.writeLock',
    create: (client, name, options) => new ReadWriteLock(client, name, options).writeLock(),
    waiters: async (lock, redis) => Number(await redis.command('LLEN', lock.keys.queue)),
  }),
  lockKind({
    // Readers share it: the contract's other party is a writer, which every reader excludes.
    name: 'ReadWriteLock.readLock',
    create: (client, name, options) => new ReadWriteLock(client, name, options).readLock(),
    contender: (client, name, options) => new ReadWriteLock(client, name, options).writeLock(),
    waiters: async (lock, redis) => Number(await redis.command('LLEN', lock.keys.queue)),
  }),
  lockKind({
    name: 'Semaphore',
    create: (client, name, options) => new Semaphore(client, name, { ...options, limit: 1 }),
    waiters: async (lock, redis) => Number(await redis.command('LLEN', lock.keys.queue)),
  }),
  lockKind({
    // A quorum of one server: the contract of a lock, over the Redlock's line, hand-off and
    // fan-out (redlock.test.ts covers 3 and 5 servers, slow nodes and the hand-off-after window).
    // The contract's waiters never poll, so: no `retryDelayMs` (50 ms by default for this kind), and
    // places that need no renewal within a test (1 s by default: waiters renew every third); and a
    // node may take a loaded machine's time to answer (50 ms by default).
    name: 'RedlockMutex',
    create: (client, name, options) =>
      new RedlockMutex([client], name, {
        retryDelayMs: Number.POSITIVE_INFINITY,
        waiterTtlMs: 30_000,
        nodeTimeoutMs: 1_000,
        ...options,
      }),
    waiters: async (lock, redis) => Number(await redis.command('ZCARD', lock.keys.line)),
  }),
];
