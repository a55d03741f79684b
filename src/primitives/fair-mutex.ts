import type { RedisClient } from '../adapters/client-types.js';
import { type Checks, defaultLockOptions, type LockOptions, lockChecks, resolveOptions } from '../options.js';
import { type FairLockState, handOffInspect } from '../protocol/hand-off.js';
import { checkMs } from '../validation.js';
import { HandOffLock } from './hand-off-lock.js';

/** How a FairMutex behaves: the Mutex's options, plus how long a queued waiter's place outlives it. */
export interface FairLockOptions extends LockOptions {
  /**
   * How long a waiter's entry in the queue is kept without the waiter renewing it, in milliseconds.
   * A place never outlives the waiter's own `timeoutMs` either; only a waiter whose timeout is longer
   * than this renews its entry, every `waiterTtlMs / 3`.
   * @default 30_000
   */
  waiterTtlMs: number;
}

export const defaultFairLockOptions: Readonly<FairLockOptions> = Object.freeze({
  ...defaultLockOptions,
  waiterTtlMs: 30_000,
});

export const fairLockChecks: Checks<FairLockOptions> = {
  ...lockChecks,
  waiterTtlMs: (n, v) => checkMs(n, v),
};

/** Checks a FairMutex's options and merges them over the defaults into a new frozen object. */
export function resolveFairLockOptions(options: unknown): Readonly<FairLockOptions> {
  return resolveOptions(options, defaultFairLockOptions, fairLockChecks);
}

/**
 * A mutual-exclusion lock that serves waiters strictly in arrival order, on one Redis deployment.
 *
 * A waiter that finds the lock taken joins a FIFO queue in the same round trip. Releasing hands the
 * lock directly to the oldest live waiter: the release script sets the lock to that waiter's token
 * with that waiter's TTL, increments the fencing counter, and publishes to the waiter, which then
 * holds the lock without another round trip (an acquisition under contention costs two: enqueue and
 * release). Leases are the Mutex's: fencing tokens, auto-extension, a lost-lock `AbortSignal`.
 *
 * Waiters that die or give up: a waiter that times out or is aborted leaves the queue, and if the
 * lock was handed to it meanwhile it hands it on; it never ends up holding the lock. A waiter that
 * crashed stays queued until its entry's deadline (its acquire deadline, or `waiterTtlMs` after
 * its last renewal, whichever comes first); entries past their deadline are skipped for free. If the
 * lock reaches a crashed waiter before that, it is handed to it and frees itself after that waiter's
 * `ttlMs`, exactly as when a holder crashes. So one crashed waiter delays the queue by at most its
 * `ttlMs` (plus up to `retryJitterMs`), and not at all once its entry's deadline has passed.
 *
 * `tryAcquire()` never queues: it takes the lock only when it is free and nobody is waiting.
 * `releaseToken()` of a queued token takes it out of the queue.
 *
 * A Mutex on the same name shares the queue but takes a free lock without looking at it, so the
 * arrival order holds only among FairMutex callers: do not mix them on one name.
 */
export class FairMutex extends HandOffLock<FairLockOptions, FairLockState> {
  constructor(client: RedisClient, name: string, options?: Partial<FairLockOptions>) {
    super(client, name, options, resolveFairLockOptions, {
      barging: false,
      skipUnreached: false,
      multiNames: false,
    });
  }

  /** @internal */
  protected waiterTtlMs(options: Readonly<FairLockOptions>): number {
    return options.waiterTtlMs;
  }

  /** @internal */
  protected readState(): Promise<FairLockState> {
    return this.run(handOffInspect(this.keys));
  }
}
