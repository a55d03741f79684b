import {
  type CallOptionTable,
  type Checks,
  callOptionsWith,
  defaultLockOptions,
  type LockOptions,
  lockChecks,
  resolveOptions,
} from '../options.js';
import { checkCount, checkOptionsObject, checkPermits } from '../validation.js';
import type { QuorumWaitOptions } from './quorum-acquire.js';
import { defaultRedlockOptions, quorumChecks } from './redlock-options.js';

/**
 * How a RedlockSemaphore behaves: every lock's options, the quorum's (how long one node may take
 * to answer, how long a waiter's place lives unrenewed: the RedlockMutex's, same defaults), and
 * the Semaphore's `limit` and `permits`. It has no local batch and no hand-off-after window: each
 * call deals with the servers itself, and permits go to the queue strictly in arrival order.
 */
export interface RedlockSemaphoreOptions extends LockOptions, QuorumWaitOptions {
  /**
   * How many permits exist (required): at most this many are held at once, by any number of
   * processes, as a quorum of the servers counts them.
   */
  limit: number;
  /**
   * How many permits one acquisition takes, all or none (a per-call option too).
   * @default 1
   */
  permits: number;
}

/** A RedlockSemaphore's defaults; `limit` has none (it must be given). */
export const defaultRedlockSemaphoreOptions: Readonly<Omit<RedlockSemaphoreOptions, 'limit'>> = Object.freeze(
  {
    ...defaultLockOptions,
    retryDelayMs: defaultRedlockOptions.retryDelayMs,
    nodeTimeoutMs: defaultRedlockOptions.nodeTimeoutMs,
    waiterTtlMs: defaultRedlockOptions.waiterTtlMs,
    permits: 1,
  },
);

const redlockSemaphoreChecks: Checks<RedlockSemaphoreOptions> = {
  ...lockChecks,
  ...quorumChecks,
  limit: (n, v) => checkCount(n, v, { min: 1 }),
  permits: (n, v) => checkCount(n, v, { min: 1 }),
};

/**
 * Checks a RedlockSemaphore's options (`limit` is required, `permits` at most `limit`) and merges
 * them over the defaults into a new frozen object.
 */
export function resolveRedlockSemaphoreOptions(options: unknown): Readonly<RedlockSemaphoreOptions> {
  const names = [...Object.keys(defaultRedlockSemaphoreOptions), 'limit'] as (keyof RedlockSemaphoreOptions &
    string)[];
  const { limit } = checkOptionsObject<RedlockSemaphoreOptions>('options', options, names);
  const defaults = { ...defaultRedlockSemaphoreOptions, limit: redlockSemaphoreChecks.limit('limit', limit) };
  const resolved = resolveOptions(options, defaults, redlockSemaphoreChecks);
  checkPermits('permits', resolved.permits, resolved.limit);
  return resolved;
}

/** A RedlockSemaphore's per-call options: every lock's, and `permits`. */
export const redlockSemaphoreCallOptions: CallOptionTable = callOptionsWith(
  'permits',
  redlockSemaphoreChecks,
);
