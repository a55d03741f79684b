import type { RedisClient } from '../adapters/client-types.js';
import { BatchJoin, type Joined } from '../batching/batch-join.js';
import {
  defaultLocalBatchOptions,
  type LocalBatchOptions,
  localBatchChecks,
} from '../batching/batch-options.js';
import type { BatchBackend, LocalBatch } from '../batching/local-batch.js';
import { type Checks, defaultLockOptions, type LockOptions, lockChecks, resolveOptions } from '../options.js';
import type { GrantPath, Plan } from '../plan.js';
import { handOffInspect } from '../protocol/hand-off.js';
import type { LockState } from '../protocol/lock-state.js';
import { checkMs } from '../validation.js';
import { BARGING_WAITER_TTL_MS, HandOffLock } from './hand-off-lock.js';

/**
 * How a Mutex behaves: every lock's options, plus when a release stops letting others barge, and
 * how long its process may keep it among its own callers.
 */
export interface MutexOptions extends LockOptions, LocalBatchOptions {
  /**
   * The Mutex's wait bound when barging, in milliseconds: once the oldest waiter has waited this
   * long, a release hands the lock to it directly. Until then a release frees the lock without waking anyone, and
   * whoever asks first takes it: the releaser asking again at once (the lock stays in its process,
   * no cross-process wake-up), or a new caller. A releaser that does not ask again hands the lock to
   * the oldest waiter a moment (1 ms) later, and a waiter wakes by itself once it has waited this
   * long (if the releaser's process died), so a free lock never idles while someone waits. No waiter
   * waits much longer than this plus the holds of the waiters ahead of it. 0: every release hands the
   * lock to the oldest live waiter (arrival order among waiters, a cross-process hand-off per
   * contended acquisition). The default, 50, is the measured knee: 5.5× the throughput of 0 at ten
   * processes, with a longest wait within the window (docs/performance.md, "Mutex: handOffAfterMs").
   * @default 50
   */
  handOffAfterMs: number;
}

export const defaultMutexOptions: Readonly<MutexOptions> = Object.freeze({
  ...defaultLockOptions,
  ...defaultLocalBatchOptions,
  handOffAfterMs: 50,
});

export const mutexChecks: Checks<MutexOptions> = {
  ...lockChecks,
  ...localBatchChecks,
  handOffAfterMs: (n, v) => checkMs(n, v, { allowZero: true }),
};

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
 * joins the waiters in the same round trip. A release then works as Go's `sync.Mutex`, without its
 * futile wake-ups: while the longest-waiting waiter has waited less than `handOffAfterMs` (50 ms by default),
 * the release frees the lock quietly and whoever asks first takes it (barging: a releaser that asks
 * again at once keeps the lock in its process); if the releasing lock object does not ask again
 * within a millisecond, it hands the lock to that waiter. Once the waiter has waited `handOffAfterMs`, it
 * wakes by itself, and the next release hands the lock straight to it: it holds the lock without
 * asking again, and a releaser asking again queues behind it. Waiters whose process is gone (the
 * message reached no subscriber) are skipped; one that is frozen is handed the lock, which frees
 * itself after that waiter's `ttlMs`, as with a crashed holder. Strict arrival order for every
 * caller, `tryAcquire()` included, is `FairMutex`.
 */
export class Mutex extends HandOffLock<MutexOptions, LockState> {
  /** @internal What this process's batch of the lock calls back into. */
  private readonly batchBackend: BatchBackend = {
    ...this.backend,
    reserveFences: (token, ttlMs, count) => this.reserveFences(token, ttlMs, count),
    handOver: (token) => this.sendRelease(token, 0),
  };

  constructor(client: RedisClient, name: string, options?: Partial<MutexOptions>) {
    super(client, name, options, resolveMutexOptions, {
      barging: true,
      skipUnreached: true,
      multiNames: true,
    });
  }

  /**
   * How its calls join their process's batch. Its name among its client's: the lock and its release
   * policy, since a batch releases in Redis through the first lock object that made it (two Mutex
   * objects of one name with other `handOffAfterMs` batch apart).
   */
  private readonly batching = new BatchJoin<MutexOptions>(
    this.context,
    `${this.keys.lock} handOffAfterMs=${this.options.handOffAfterMs}`,
    this.batchBackend,
  );

  /** @internal A waiting call joins its process's batch unless it counts its attempts. */
  protected override localBatch(plan: Plan<MutexOptions>, path: GrantPath): Joined | undefined {
    return this.batching.join(plan, path);
  }

  /** @internal */
  protected override existingBatch(): LocalBatch | undefined {
    return this.batching.existing();
  }

  /** @internal */
  protected override handOffAfterMs(): number {
    return this.options.handOffAfterMs;
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
