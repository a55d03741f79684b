import type { RedisClient } from '../adapters/client-types.js';
import { BatchJoin, type Joined } from '../batching/batch-join.js';
import {
  batchBounds,
  defaultLocalBatchOptions,
  type LocalBatchOptions,
  localBatchChecks,
} from '../batching/batch-options.js';
import type { BatchBackend, BatchBounds, LocalBatch } from '../batching/local-batch.js';
import {
  type AcquireOptions,
  type CallOptionTable,
  type Checks,
  callOptionsWith,
  type EffectiveOptions,
  resolveOptions,
  type TryAcquireOptions,
} from '../options.js';
import type { GrantPath, Plan } from '../plan.js';
import { type SemaphoreState, semaphoreSetLimit } from '../protocol/semaphore.js';
import { checkCount, checkOptionsObject, checkPermits } from '../validation.js';
import type { Attempts } from '../waiting/attempts.js';
import { defaultFairLockOptions, type FairLockOptions, fairLockChecks } from './fair-mutex.js';
import { PermitLock } from './permit-lock.js';

/**
 * How a Semaphore behaves: the FairMutex's options (a queued waiter's place outlives it by
 * `waiterTtlMs`), plus how many holders it admits, how many permits a call takes, and how long its
 * process may pass a permit among its own callers (`maxLocalHolds`, `maxLocalBatchMs`: calls taking
 * one permit).
 */
export interface SemaphoreOptions extends FairLockOptions, LocalBatchOptions {
  /**
   * How many permits exist (required): at most this many are held at once, by any number of
   * processes. A limit stored with `setLimit()` takes precedence, for every Semaphore on the name.
   */
  limit: number;
  /**
   * How many permits one acquisition takes, all or none (a per-call option too).
   * @default 1
   */
  permits: number;
}

/** Per-call overrides for a Semaphore's `acquire()` / `using()`: the lock's, and `permits`. */
export interface SemaphoreAcquireOptions extends AcquireOptions, Partial<Pick<SemaphoreOptions, 'permits'>> {}

/** Per-call overrides for a Semaphore's `tryAcquire()`. */
export type SemaphoreTryAcquireOptions = TryAcquireOptions & Partial<Pick<SemaphoreOptions, 'permits'>>;

/** A Semaphore's defaults; `limit` has none (it must be given). */
export const defaultSemaphoreOptions: Readonly<Omit<SemaphoreOptions, 'limit'>> = Object.freeze({
  ...defaultFairLockOptions,
  ...defaultLocalBatchOptions,
  permits: 1,
});

const semaphoreChecks: Checks<SemaphoreOptions> = {
  ...fairLockChecks,
  ...localBatchChecks,
  limit: (n, v) => checkCount(n, v, { min: 1 }),
  permits: (n, v) => checkCount(n, v, { min: 1 }),
};

/**
 * Checks a Semaphore's options (`limit` is required) and merges them over the defaults into a new
 * frozen object.
 */
export function resolveSemaphoreOptions(options: unknown): Readonly<SemaphoreOptions> {
  const names = [...Object.keys(defaultSemaphoreOptions), 'limit'] as (keyof SemaphoreOptions & string)[];
  const { limit } = checkOptionsObject<SemaphoreOptions>('options', options, names);
  const defaults = { ...defaultSemaphoreOptions, limit: semaphoreChecks.limit('limit', limit) };
  const resolved = resolveOptions(options, defaults, semaphoreChecks);
  checkPermits('permits', resolved.permits, resolved.limit);
  return resolved;
}

/**
 * The bounds of a Semaphore call's turns in its process's batch: a Mutex's call's (batchBounds), for
 * a call taking one permit. A call taking more deals with Redis alone: a run passes one permit on,
 * and several callers holding parts of one acquisition's permits would each need the whole.
 */
function semaphoreBatchBounds(options: EffectiveOptions<SemaphoreOptions>): BatchBounds | undefined {
  return options.permits === 1 ? batchBounds(options) : undefined;
}

/** A Semaphore's per-call options: every lock's, and `permits`. */
export const semaphoreCallOptions: CallOptionTable = callOptionsWith('permits', semaphoreChecks);

/**
 * A counting semaphore on one Redis deployment: at most `limit` permits are held at once, across
 * every process, and they are granted strictly in arrival order.
 *
 * ```ts
 * const uploads = new Semaphore(redis, 'uploads', { limit: 3, ttlMs: 10_000 });
 * await using lease = await uploads.acquire();
 * await upload(file, { signal: lease.signal });
 * ```
 *
 * Each acquisition takes `permits` (default 1) all or none, and resolves with a `Lease` like the
 * Mutex's: its own fencing token, validity, a lost-permits `AbortSignal`, `extend`, `release`,
 * auto-extension. Holders expire by the server's clock (`TIME`), never a client's, so no client's
 * clock can let more than `limit` holders in.
 *
 * Fair: a waiter that finds too few permits free joins a FIFO queue in the same round trip, and a
 * release hands the permits straight to the waiters at the head (one message each, no polling). A
 * request at the head that does not fit yet is not overtaken by smaller ones behind it. Waiters that
 * give up leave the queue; one that crashed stays queued until its entry's deadline (its acquire
 * deadline, or `waiterTtlMs` after its last renewal, whichever comes first), and if permits reach it
 * before that they come back after its `ttlMs`, as with a crashed holder.
 *
 * `setLimit()` changes the limit for every Semaphore on the name; holders above a lowered limit keep
 * their permits until they release. `tryAcquire()` never queues: it takes permits only when enough
 * are free and nobody is waiting.
 */
export class Semaphore extends PermitLock<SemaphoreOptions, SemaphoreState, SemaphoreAcquireOptions> {
  /**
   * @internal What this process's batch of the lock calls back into: a run per permit, up to
   * `limit` (a release always hands permits to the oldest waiters: no hand-over of its own).
   */
  private readonly batchBackend: BatchBackend = {
    ...this.backend,
    reserveFences: (token, ttlMs, count) => this.reserveFences(token, ttlMs, count),
    runs: this.options.limit,
  };

  /**
   * How its calls join their process's batch. Its name among its client's: the lock and its
   * `limit`, which its releases send (two Semaphore objects of one name with other limits batch
   * apart).
   */
  private readonly batching = new BatchJoin<SemaphoreOptions>(
    this.context,
    `${this.keys.lock} limit=${this.options.limit}`,
    this.batchBackend,
    semaphoreBatchBounds,
  );

  constructor(
    client: RedisClient,
    name: string,
    options: Partial<SemaphoreOptions> & Pick<SemaphoreOptions, 'limit'>,
  ) {
    super(client, name, options, resolveSemaphoreOptions);
  }

  /**
   * Stores `limit` for this name, in force for every Semaphore on it (whatever their `limit`
   * option) from now on, and hands the permits a raised limit frees to the waiters at the head of
   * the queue. Holders above a lowered limit keep their permits until they release. Resolves with
   * the permits held now.
   */
  async setLimit(limit: number): Promise<number> {
    const checked = checkCount('limit', limit, { min: 1 });
    return this.run(semaphoreSetLimit(this.semaphoreKeys, { limit: checked }));
  }

  /** @internal */
  protected override callOptions(): CallOptionTable {
    return semaphoreCallOptions;
  }

  /** @internal */
  protected override planAttempts(plan: Plan<SemaphoreOptions>): Attempts {
    checkPermits('permits', plan.options.permits, plan.options.limit);
    return super.planAttempts(plan);
  }

  /** @internal A waiting call for one permit joins its process's batch (see `semaphoreBatchBounds`). */
  protected override localBatch(plan: Plan<SemaphoreOptions>, path: GrantPath): Joined | undefined {
    return this.batching.join(plan, path);
  }

  /** @internal */
  protected override existingBatch(): LocalBatch | undefined {
    return this.batching.existing();
  }

  /** @internal */
  protected limitOf(options: Readonly<SemaphoreOptions>): number {
    return options.limit;
  }

  /** @internal */
  protected permitsOf(options: EffectiveOptions<SemaphoreOptions>): number {
    return options.permits;
  }

  /** @internal */
  protected readState(): Promise<SemaphoreState> {
    return this.readHolders();
  }
}
