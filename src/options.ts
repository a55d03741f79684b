import { type Clock, monotonicClock } from './clock.js';
import { DEFAULT_PREFIX } from './protocol/keys.js';
import {
  checkBoolean,
  checkCount,
  checkFraction,
  checkFunction,
  checkMs,
  checkOptionsObject,
  checkPrefix,
  checkSignal,
  checkTtlMs,
} from './validation.js';

/** How a lock behaves. Every field has a default; units are in the names. */
export interface LockOptions {
  /** Lease time-to-live in milliseconds: how long the lock outlives a crashed holder. Default 30,000. */
  ttlMs: number;
  /** Keep the lease alive with a watchdog (extends at about ttlMs/3) until released. Default true. */
  autoExtend: boolean;
  /** How long `acquire()` waits for the lock, in milliseconds; `Infinity` waits for ever. Default 10,000. */
  timeoutMs: number;
  /** How many attempts `acquire()` may make after the first; `Infinity` for no limit. Default Infinity. */
  retries: number;
  /**
   * Longest pause between two attempts while waiting, in milliseconds. A waiter wakes early when the
   * holder releases (pub/sub) and never waits past the holder's remaining TTL, so the default,
   * `Infinity`, means "only those bound it". Set it to poll at a fixed pace (redis_exp_lock's `interval`).
   */
  retryDelayMs: number;
  /** Random extra delay, 0..retryJitterMs milliseconds, added to timed waits so waiters spread out. Default 5. */
  retryJitterMs: number;
  /** Wake waiters through the lock's release channel (one shared subscriber connection). Default true. */
  wakeOnRelease: boolean;
  /** Safety margin for clock drift, as a fraction of the TTL (plus 2 ms). Default 0.01. */
  driftFactor: number;
  /** Prefix of every key and channel: `prefix:{name}…`. Default "locksmith". */
  prefix: string;
  /**
   * The clocks validity is measured with (inject one in tests). Default: `performance.now()` and,
   * for host suspends, `Date.now()` as `wallNow()`.
   */
  clock: Clock;
}

/** Per-call overrides for `acquire()` / `tryAcquire()` / `using()`. */
export interface AcquireOptions
  extends Partial<
    Pick<LockOptions, 'ttlMs' | 'autoExtend' | 'timeoutMs' | 'retries' | 'retryDelayMs' | 'retryJitterMs'>
  > {
  /** Cancels the wait: the promise rejects with `signal.reason` and nothing is left locked. */
  signal?: AbortSignal;
}

export const defaultLockOptions: Readonly<LockOptions> = Object.freeze({
  ttlMs: 30_000,
  autoExtend: true,
  timeoutMs: 10_000,
  retries: Number.POSITIVE_INFINITY,
  retryDelayMs: Number.POSITIVE_INFINITY,
  retryJitterMs: 5,
  wakeOnRelease: true,
  driftFactor: 0.01,
  prefix: DEFAULT_PREFIX,
  clock: monotonicClock,
});

const lockOptionNames = Object.keys(defaultLockOptions) as (keyof LockOptions)[];
const acquireOptionNames: (keyof AcquireOptions)[] = [
  'ttlMs',
  'autoExtend',
  'timeoutMs',
  'retries',
  'retryDelayMs',
  'retryJitterMs',
  'signal',
];

type Checks<T> = { [K in keyof T]-?: (name: string, value: unknown) => T[K] };

const checks: Checks<LockOptions> = {
  ttlMs: (n, v) => checkMs(n, v),
  autoExtend: checkBoolean,
  timeoutMs: (n, v) => checkMs(n, v, { allowZero: true, allowInfinity: true }),
  retries: (n, v) => checkCount(n, v, { allowInfinity: true }),
  retryDelayMs: (n, v) => checkMs(n, v, { allowZero: true, allowInfinity: true }),
  retryJitterMs: (n, v) => checkMs(n, v, { allowZero: true }),
  wakeOnRelease: checkBoolean,
  driftFactor: (n, v) => checkFraction(n, v, 0, 0.5),
  prefix: checkPrefix,
  clock: (n, v) => {
    if (v === null || typeof v !== 'object')
      throw new TypeError(`Expected \`${n}\` to be an object with now()`);
    checkFunction(`${n}.now`, (v as Clock).now);
    if ((v as Clock).wallNow !== undefined) checkFunction(`${n}.wallNow`, (v as Clock).wallNow);
    return v as Clock;
  },
};

function checkFields<T extends object>(given: Partial<T>, table: Partial<Checks<T>>): void {
  for (const [key, value] of Object.entries(given)) {
    if (value === undefined) continue;
    table[key as keyof T]?.(key, value);
  }
}

/** Checks lock options and merges them over the defaults into a new frozen object. */
export function resolveLockOptions(
  options: unknown,
  defaults: Readonly<LockOptions> = defaultLockOptions,
): Readonly<LockOptions> {
  const given = checkOptionsObject<LockOptions>('options', options, lockOptionNames);
  checkFields(given, checks);
  const resolved = { ...defaults, ...withoutUndefined(given) };
  // Checked once both are known: the least usable TTL depends on the drift factor.
  checkTtlMs('ttlMs', resolved.ttlMs, resolved.driftFactor);
  return Object.freeze(resolved);
}

/** Per-call overrides for `tryAcquire()`: a single attempt has nothing to wait for. */
export type TryAcquireOptions = Pick<AcquireOptions, 'ttlMs' | 'autoExtend' | 'signal'>;

export const tryAcquireOptionNames: (keyof TryAcquireOptions)[] = ['ttlMs', 'autoExtend', 'signal'];

/** Checks per-call options; returns the effective options for this call (caller's object untouched). */
export function resolveAcquireOptions(
  options: unknown,
  base: Readonly<LockOptions>,
  known: readonly (keyof AcquireOptions)[] = acquireOptionNames,
): Readonly<LockOptions> & { signal: AbortSignal | undefined } {
  const given = checkOptionsObject<AcquireOptions>('options', options, known);
  const { signal, ...rest } = given;
  checkFields(rest as Partial<LockOptions>, checks);
  if (signal !== undefined) checkSignal('signal', signal);
  const resolved = { ...base, ...withoutUndefined(rest), signal };
  checkTtlMs('ttlMs', resolved.ttlMs, resolved.driftFactor);
  return Object.freeze(resolved);
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
