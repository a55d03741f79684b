import {
  defaultLocalBatchOptions,
  type LocalBatchOptions,
  localBatchChecks,
} from '../batching/batch-options.js';
import { type Checks, defaultLockOptions, type LockOptions, lockChecks, resolveOptions } from '../options.js';
import { checkMs } from '../validation.js';

/**
 * How a RedlockMutex behaves: the Mutex's options (its process's batch included), and how long one
 * node may take to answer. Its
 * defaults differ in one place: `retryDelayMs` is 50, since a waiter is handed the lock by several
 * servers' messages and a lost one must cost it little.
 */
export interface RedlockOptions extends LockOptions, LocalBatchOptions {
  /**
   * How long one node may take to answer one request, in milliseconds, before it counts as not
   * answering (far below the TTL, so a slow node cannot eat the lease's validity). Capped at a third
   * of each call's `ttlMs`.
   * @default 50
   */
  nodeTimeoutMs: number;
  /**
   * How long the first waiter in line lets releases free the lock rather than hand it over, in
   * milliseconds: until it has waited this long, a caller that asks while the lock is free takes it
   * first (a holder that releases and asks again at once keeps it); from then on it is served
   * before any newcomer, and it wakes by itself when its window ends. A window longer than a round
   * of hand-offs through every waiter lets a busy holder keep the lock in its own process for up to
   * that long; a shorter one only costs each waiter one more attempt. 0: every release hands over,
   * strictly first come, first served (measured the fastest here: docs/performance.md).
   * @default 0
   */
  handOffAfterMs: number;
  /**
   * How long a waiter's place in a server's line is kept without the waiter renewing it, in
   * milliseconds; a waiter renews it with every attempt, and at least every `waiterTtlMs / 3`.
   * Shorter than a FairMutex's, because an entry whose leave missed a server that was down comes
   * back with that server's data, and would be handed the lock while nobody waits for it (held by
   * nobody for its TTL); an entry this short is gone by then.
   * @default 1_000
   */
  waiterTtlMs: number;
}

export const defaultRedlockOptions: Readonly<RedlockOptions> = Object.freeze({
  ...defaultLockOptions,
  ...defaultLocalBatchOptions,
  retryDelayMs: 50,
  nodeTimeoutMs: 50,
  handOffAfterMs: 0,
  waiterTtlMs: 1_000,
});

/** The checks of the options every Redlock kind has (its quorum's), beyond every lock's. */
export const quorumChecks: Checks<Pick<RedlockOptions, 'nodeTimeoutMs' | 'waiterTtlMs' | 'minReplicaAcks'>> =
  {
    nodeTimeoutMs: (n, v) => checkMs(n, v),
    waiterTtlMs: (n, v) => checkMs(n, v),
    // Its servers are independent primaries: a replica acknowledgement is not what a quorum counts.
    minReplicaAcks: (n, v) => {
      if (v !== 0) {
        throw new RangeError(
          `Expected \`${n}\` to be 0: a Redlock's servers are independent primaries, and its quorum is what keeps a lock through one server's loss`,
        );
      }
      return 0;
    },
  };

const redlockChecks: Checks<RedlockOptions> = {
  ...lockChecks,
  ...localBatchChecks,
  ...quorumChecks,
  handOffAfterMs: (n, v) => checkMs(n, v, { allowZero: true }),
};

/** Checks a RedlockMutex's options and merges them over the defaults into a new frozen object. */
export function resolveRedlockOptions(options: unknown): Readonly<RedlockOptions> {
  return resolveOptions(options, defaultRedlockOptions, redlockChecks);
}
