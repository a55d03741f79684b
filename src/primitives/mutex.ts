import type { RedisClient } from '../adapters/client-types.js';
import { type LockOptions, resolveLockOptions } from '../options.js';
import { handOffInspect } from '../protocol/hand-off.js';
import type { LockState } from '../protocol/lock-state.js';
import { BARGING_WAITER_TTL_MS, HandOffLock } from './hand-off-lock.js';

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
export class Mutex extends HandOffLock<LockOptions, LockState> {
  constructor(client: RedisClient, name: string, options?: Partial<LockOptions>) {
    super(client, name, options, resolveLockOptions, { barging: true, skipUnreached: true });
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
