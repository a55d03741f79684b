import type { Checks, EffectiveOptions, LockOptions } from '../options.js';
import { checkCount, checkMs } from '../validation.js';
import type { BatchBounds } from './local-batch.js';

/** The options of a kind whose callers in one process take turns behind one waiter in Redis. */
export interface LocalBatchOptions {
  /**
   * How many holds in a row this process may pass the lock on among its own callers (concurrent
   * `acquire()` calls on the same client and name) before releasing it in Redis, where another
   * process's waiter gets it first. Its callers queue locally behind one waiter in Redis; each
   * local holder gets its own lease and fencing token. `1` turns it off: every call deals with Redis
   * alone. Calls with a finite `retries`, or `wakeOnRelease: false`, never join.
   * @default 256
   */
  maxLocalHolds: number;
  /**
   * How long, in milliseconds from the process's grant in Redis, it may go on passing the lock
   * among its own callers (the other bound of `maxLocalHolds`): a waiter of another process waits
   * for at most this, plus one critical section and a hand-off, per process ahead of it.
   * @default 10
   */
  maxLocalBatchMs: number;
}

export const defaultLocalBatchOptions: Readonly<LocalBatchOptions> = Object.freeze({
  maxLocalHolds: 256,
  maxLocalBatchMs: 10,
});

export const localBatchChecks: Checks<LocalBatchOptions> = {
  maxLocalHolds: (n, v) => checkCount(n, v, { min: 1 }),
  maxLocalBatchMs: (n, v) => checkMs(n, v, { allowZero: true }),
};

/**
 * The bounds of a call's turns in its process's batch, or undefined when it deals with Redis alone:
 * batching is off, or the call counts its attempts (`retries`: each would be one) or asked not to
 * be woken by a release, or its grants must wait for replicas (`minReplicaAcks`: a pass inside the
 * process would hand out a lease no replica acknowledged).
 */
export function batchBounds(
  options: EffectiveOptions<LockOptions & LocalBatchOptions>,
): BatchBounds | undefined {
  const { maxLocalHolds, maxLocalBatchMs, retries, wakeOnRelease, minReplicaAcks } = options;
  if (maxLocalHolds <= 1 || !wakeOnRelease || Number.isFinite(retries) || minReplicaAcks > 0) {
    return undefined;
  }
  return { holds: maxLocalHolds, ms: maxLocalBatchMs };
}
