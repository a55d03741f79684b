import type { RedisClient } from '../adapters/client-types.js';
import {
  batchBounds,
  defaultLocalBatchOptions,
  type LocalBatchOptions,
  localBatchChecks,
} from '../batching/batch-options.js';
import type { BatchBackend, BatchBounds, ProcessBatch } from '../batching/local-batch.js';
import { existingSharedHolds, sharedHoldsFor } from '../batching/shared-holds.js';
import { WaitingWriters, writerWaiting } from '../batching/waiting-writers.js';
import { WouldDeadlockError } from '../errors.js';
import { inspectCustom } from '../inspect.js';
import type { Lease } from '../lease/lease.js';
import { holdInContext, LockOwner, runAsOwner } from '../lock-owner.js';
import {
  type AcquireOptions,
  type Checks,
  type EffectiveOptions,
  resolveOptions,
  type TryAcquireOptions,
} from '../options.js';
import type { GrantPath, LockBackend, Plan } from '../plan.js';
import { type ReadWriteLockState, rwDowngrade } from '../protocol/read-write-lock.js';
import { checkFunction } from '../validation.js';
import { defaultFairLockOptions, type FairLockOptions, fairLockChecks } from './fair-mutex.js';
import type { LockedWork } from './lock-shell.js';
import { PermitLock } from './permit-lock.js';

/**
 * How many permits a read-write lock has: a writer takes them all, a reader one. Readers are
 * therefore unlimited in practice (2^31 − 1 at once).
 */
const ALL_PERMITS = 2_147_483_647;

/**
 * How a ReadWriteLock behaves: the FairMutex's options, plus how long its process's readers may go
 * on joining its read hold in Redis (`maxLocalHolds`, `maxLocalBatchMs`: see `ReadLock`).
 */
export interface ReadWriteLockOptions extends FairLockOptions, LocalBatchOptions {}

/** A ReadWriteLock's defaults. */
export const defaultReadWriteLockOptions: Readonly<ReadWriteLockOptions> = Object.freeze({
  ...defaultFairLockOptions,
  ...defaultLocalBatchOptions,
});

const readWriteLockChecks: Checks<ReadWriteLockOptions> = { ...fairLockChecks, ...localBatchChecks };

function resolveReadWriteLockOptions(options: unknown): Readonly<ReadWriteLockOptions> {
  return resolveOptions(options, defaultReadWriteLockOptions, readWriteLockChecks);
}

/** A writer passes nothing on among its process's callers: its turn's bounds are never read. */
const WRITER_BOUNDS: BatchBounds = Object.freeze({ holds: 1, ms: 0 });

/** Marks an async context as inside a `using()` of a read-write lock (either side). */
const HELD = new LockOwner();

/**
 * A lock with shared and exclusive holders, on one Redis deployment: any number of readers at once,
 * or one writer. `readLock()` and `writeLock()` are its two sides, each a lock with the `Mutex`'s
 * API (`acquire`, `tryAcquire`, `using`, leases with TTL, auto-extension, a lost-lock `signal` and a
 * fencing token of their own).
 *
 * ```ts
 * const catalog = new ReadWriteLock(redis, 'catalog');
 * await catalog.readLock().using(async () => render(await load())); // many at once
 * await catalog.writeLock().using(async () => save(await rebuild())); // alone
 * ```
 *
 * Fair: readers and writers wait in one FIFO queue, and nobody overtakes a waiter ahead of them, so
 * a writer waits only for the holders and waiters that were there before it, never behind a stream
 * of readers arriving after it (those queue behind the writer). A release hands the lock straight to
 * the head of the queue: a writer, or every reader up to the next queued writer.
 *
 * `downgrade(writeLease)` turns a write lease into a read lease in one step, so no other writer gets
 * in between. There is no upgrade: two readers upgrading at once would each wait for the other.
 * Asking for either side inside a `using()` of the same lock (an upgrade, or a nested read that
 * could queue behind a writer waiting for the outer read) rejects with `WouldDeadlockError` before
 * anything is sent.
 *
 * It is the Semaphore's machinery: holders in a sorted set scored by the server's clock, a writer
 * holding every permit and a reader one, so crashed holders expire by themselves after their TTL.
 */
export class ReadWriteLock {
  private readonly reader: ReadLock;
  private readonly writer: WriteLock;

  constructor(client: RedisClient, name: string, options?: Partial<ReadWriteLockOptions>) {
    this.reader = new ReadLock(client, name, options);
    this.writer = new WriteLock(client, name, options);
  }

  /** The lock's name, as given. */
  get name(): string {
    return this.reader.name;
  }

  /** @internal A short form for `console.log`: the name, not its two sides' internals. */
  [inspectCustom](): string {
    return `ReadWriteLock { name: ${JSON.stringify(this.name)} }`;
  }

  /** The shared side: held by any number of readers at once, never while a writer holds it. */
  readLock(): ReadLock {
    return this.reader;
  }

  /** The exclusive side: held by one writer, with no reader. */
  writeLock(): WriteLock {
    return this.writer;
  }

  /**
   * Turns `lease`, a write lease of this lock, into a read lease, atomically: the same lease (token,
   * fencing token, signal, watchdog) now holds the lock as a reader, readers queued at the head are
   * let in, and no writer can take the lock in between. Resolves `false` when `lease` does not hold
   * the write lock (released, lost, or a read lease): nothing changes then.
   */
  async downgrade(lease: Lease): Promise<boolean> {
    return this.writer.downgrade(lease);
  }

  /** The lock's state in Redis, in one round trip: readers, writer, queue. */
  inspect(): Promise<ReadWriteLockState> {
    return this.reader.inspect();
  }
}

/** What one side of a read-write lock shares with the other: the permits, the state, the guard. */
abstract class ReadWriteSide extends PermitLock<ReadWriteLockOptions, ReadWriteLockState> {
  /** Which side this is, in messages and in the async context. */
  protected abstract readonly side: 'read' | 'write';

  constructor(client: RedisClient, name: string, options: unknown) {
    super(client, name, options, resolveReadWriteLockOptions);
  }

  override async acquire(options?: AcquireOptions): Promise<Lease> {
    this.refuseNested();
    return super.acquire(options);
  }

  override async tryAcquire(options?: TryAcquireOptions): Promise<Lease | null> {
    this.refuseNested();
    return super.tryAcquire(options);
  }

  /** Runs `work` holding this side; calls of either side of the lock inside it are refused. */
  override async using<T>(work: LockedWork<T>, options?: AcquireOptions): Promise<T> {
    checkFunction('work', work);
    this.refuseNested();
    const key = this.contextKey();
    return super.using((signal, lease) => runAsOwner(key, HELD, lease, () => work(signal, lease)), options);
  }

  /** @internal */
  protected limitOf(): number {
    return ALL_PERMITS;
  }

  /** @internal */
  protected async readState(): Promise<ReadWriteLockState> {
    const state = await this.readHolders();
    const writer = state.holders.find((holder) => holder.permits === ALL_PERMITS);
    return {
      locked: state.locked,
      ownerToken: state.ownerToken,
      remainingTtlMs: state.remainingTtlMs,
      lastFencingToken: state.lastFencingToken,
      holderLabel: state.holderLabel,
      readers: state.holders.filter((holder) => holder.permits === 1).length,
      writer: writer?.token,
      queueLength: state.queueLength,
    };
  }

  /** Rejects a call made inside a `using()` of this lock: it would wait for its own caller. */
  private refuseNested(): void {
    if (holdInContext(this.contextKey()) === undefined) return;
    throw new WouldDeadlockError(
      this.name,
      this.side === 'write'
        ? 'the write lock was asked for inside a using() of this lock (an upgrade, or a nested write), ' +
            'which would wait for itself: release the read lock first, or take the write lock and downgrade()'
        : 'the read lock was asked for inside a using() of this lock, which would wait for itself ' +
            '(behind its own writer, or behind a writer queued after its outer read): use the lease you hold',
    );
  }

  /** The async-context key both sides mark while their `using()` runs. */
  private contextKey(): string {
    return `${this.keys.lock}\u0000read-write`;
  }
}

/**
 * The shared side of a `ReadWriteLock`. A waiting reader shares the read hold its process has in
 * Redis with the process's other readers (`SharedHolds`): it joins it while the hold is within its
 * bounds (`maxLocalHolds`, `maxLocalBatchMs`) and no writer of the process waits, with a lease and
 * fencing token of its own; else it asks Redis for a hold, which the readers after it join.
 */
export class ReadLock extends ReadWriteSide {
  protected readonly side = 'read';

  /** @internal What this process's shared read holds call back into. */
  private readonly batchBackend: BatchBackend = {
    ...this.backend,
    reserveFences: (token, ttlMs, count) => this.reserveFences(token, ttlMs, count),
    yieldsNow: () => writerWaiting(this.context, this.keys.lock),
  };

  /** Its shared holds' name among its client's: the lock's read side. */
  private readonly batchKey = `${this.keys.lock} read`;

  /** @internal A waiting read shares its process's read hold unless it counts its attempts. */
  protected override localBatch(
    plan: Plan<ReadWriteLockOptions>,
    path: GrantPath,
  ): { batch: ProcessBatch; bounds: BatchBounds } | undefined {
    const bounds = batchBounds(plan.options);
    return bounds && { batch: sharedHoldsFor(this.context, this.batchKey, this.batchBackend, path), bounds };
  }

  /** @internal */
  protected override existingBatch(): ProcessBatch | undefined {
    return existingSharedHolds(this.context, this.batchKey);
  }

  /** @internal A reader takes one permit. */
  protected permitsOf(): number {
    return 1;
  }
}

/** The exclusive side of a `ReadWriteLock`. */
export class WriteLock extends ReadWriteSide {
  protected readonly side = 'write';

  /**
   * @internal A waiting writer is counted among its process's (`WaitingWriters`): while it waits,
   * nobody joins this process's read hold, which ends when its readers are done, and the readers
   * arriving meanwhile ask Redis, which queues them behind it.
   */
  protected override localBatch(
    _plan: Plan<ReadWriteLockOptions>,
    path: GrantPath,
    backend: LockBackend,
  ): { batch: ProcessBatch; bounds: BatchBounds } {
    // The shell's route (path and backend) is made once: so is this answer, not one per call.
    this.writers ??= {
      batch: new WaitingWriters(this.context, this.keys.lock, path, backend),
      bounds: WRITER_BOUNDS,
    };
    return this.writers;
  }

  private writers: { batch: ProcessBatch; bounds: BatchBounds } | undefined;

  /** @internal A writer takes every permit. */
  protected permitsOf(_options: EffectiveOptions<ReadWriteLockOptions>): number {
    return ALL_PERMITS;
  }

  /** @internal See `ReadWriteLock.downgrade`. */
  async downgrade(lease: Lease): Promise<boolean> {
    if (lease.name !== this.name || !lease.isHeld) return false;
    return this.run(rwDowngrade(this.semaphoreKeys, { token: lease.token, limit: ALL_PERMITS }));
  }
}
