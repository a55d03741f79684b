import type { RedisClient } from '../adapters/client-types.js';
import {
  batchBounds,
  defaultLocalBatchOptions,
  type LocalBatchOptions,
  localBatchChecks,
} from '../batching/batch-options.js';
import {
  type BatchBackend,
  type BatchBounds,
  type LocalBatch,
  localBatchFor,
} from '../batching/local-batch.js';
import { type Checks, defaultLockOptions, type LockOptions, lockChecks, resolveOptions } from '../options.js';
import type { Plan } from '../plan.js';
import { handOffInspect } from '../protocol/hand-off.js';
import type { LockState } from '../protocol/lock-state.js';
import { BARGING_WAITER_TTL_MS, HandOffLock } from './hand-off-lock.js';

/** How a Mutex behaves: every lock's options, plus how long its process may keep it among its own callers. */
export interface MutexOptions extends LockOptions, LocalBatchOptions {}

export const defaultMutexOptions: Readonly<MutexOptions> = Object.freeze({
  ...defaultLockOptions,
  ...defaultLocalBatchOptions,
});

export const mutexChecks: Checks<MutexOptions> = { ...lockChecks, ...localBatchChecks };

/** Checks a Mutex's options and merges them over the defaults into a new frozen object. */
export function resolveMutexOptions(options: unknown): Readonly<MutexOptions> {
  return resolveOptions(options, defaultMutexOptions, mutexChecks);
}

/**
 * A mutual-exclusion lock with a lease, on one Redis deployment.
 *
 * ```ts
 * const mutex = new Mutex(redis, 'orders:42', { ttlMs: 10_000 });
 * await using lease = await mutex.acquire();
 * await saveOrder(order, { fencingToken: lease.fencingToken, signal: lease.signal });
 * ```
 *
 * A caller that finds the lock free takes it at once, whoever is waiting. One that finds it taken
 * joins the waiters in the same round trip, and a release hands the lock straight to the
 * longest-waiting one whose process is still there (its hand-off message reached a subscriber):
 * the woken waiter holds the lock without asking again, so a releaser that asks again at once
 * queues behind it instead of winning the race. Waiters whose process is gone are skipped; one
 * that is frozen is handed the lock, which frees itself after that waiter's `ttlMs`, as with a
 * crashed holder. Strict arrival order for every caller, `tryAcquire()` included, is `FairMutex`.
 */
export class Mutex extends HandOffLock<MutexOptions, LockState> {
  /** @internal What this process's batch of the lock calls back into. */
  private readonly batchBackend: BatchBackend = {
    ...this.backend,
    reserveFences: (token, ttlMs, count) => this.reserveFences(token, ttlMs, count),
  };

  constructor(client: RedisClient, name: string, options?: Partial<MutexOptions>) {
    super(client, name, options, resolveMutexOptions, { barging: true, skipUnreached: true });
  }

  /** @internal A waiting call joins its process's batch unless it counts its attempts. */
  protected override localBatch(
    plan: Plan<MutexOptions>,
  ): { batch: LocalBatch; bounds: BatchBounds } | undefined {
    const bounds = batchBounds(plan.options);
    return bounds && { batch: localBatchFor(this.context, this.keys.lock, this.batchBackend), bounds };
  }

  /** @internal A waiter renews its entry once a minute (the Mutex has no `waiterTtlMs` option). */
  protected waiterTtlMs(): number {
    return BARGING_WAITER_TTL_MS;
  }

  /** @internal */
  protected async readState(): Promise<LockState> {
    const { locked, ownerToken, remainingTtlMs, lastFencingToken, holderLabel } = await this.run(
      handOffInspect(this.keys),
    );
    return { locked, ownerToken, remainingTtlMs, lastFencingToken, holderLabel };
  }
}
