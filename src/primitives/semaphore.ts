import type { RedisClient } from '../adapters/client-types.js';
import {
  type AcquireOptions,
  type CallOptionTable,
  type Checks,
  callOptionsWith,
  type EffectiveOptions,
  resolveOptions,
  type TryAcquireOptions,
} from '../options.js';
import type { Plan } from '../plan.js';
import { type SemaphoreState, semaphoreSetLimit } from '../protocol/semaphore.js';
import { checkCount, checkOptionsObject, checkPermits } from '../validation.js';
import type { Attempts } from '../waiting/attempts.js';
import { defaultFairLockOptions, type FairLockOptions, fairLockChecks } from './fair-mutex.js';
import { PermitLock } from './permit-lock.js';

/**
 * How a Semaphore behaves: the FairMutex's options (a queued waiter's place outlives it by
 * `waiterTtlMs`), plus how many holders it admits and how many permits a call takes.
 */
export interface SemaphoreOptions extends FairLockOptions {
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
  permits: 1,
});

const semaphoreChecks: Checks<SemaphoreOptions> = {
  ...fairLockChecks,
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
