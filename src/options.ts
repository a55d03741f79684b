import { type Clock, monotonicClock } from './clock.js';
import { LockOwner } from './lock-owner.js';
import {
  checkBoolean,
  checkCount,
  checkFraction,
  checkFunction,
  checkMs,
  checkOptionsObject,
  checkPermits,
  checkPrefix,
  checkSignal,
  checkTtlMs,
  describeValue,
} from './validation.js';

/**
 * How a lock behaves. Every field has a default (`defaultLockOptions`); units are in the names.
 * Options of every lock kind are declared here, once, with their checks and defaults.
 */
export interface LockOptions {
  /**
   * Lease time-to-live in milliseconds: how long the lock outlives a crashed holder.
   * @default 30_000
   */
  ttlMs: number;
  /**
   * Keep the lease alive with a watchdog (extends at about ttlMs/3) until released.
   * @default true
   */
  autoExtend: boolean;
  /**
   * How long `acquire()` waits for the lock, in milliseconds; `Infinity` waits for ever.
   * @default 10_000
   */
  timeoutMs: number;
  /**
   * How many attempts `acquire()` may make after the first; `Infinity` for no limit.
   * @default Infinity
   */
  retries: number;
  /**
   * Longest pause between two attempts while waiting, in milliseconds. A waiter wakes early when the
   * holder releases (pub/sub) and never waits past the holder's remaining TTL, so the default,
   * `Infinity`, means "only those bound it". Set it to poll at a fixed pace (redis_exp_lock's `interval`).
   * @default Infinity
   */
  retryDelayMs: number;
  /**
   * How long one round trip to Redis may take before the call counts Redis as unavailable, in
   * milliseconds (never more than `ttlMs`): `tryAcquire()` and `release()` reject with
   * `RedisUnavailableError` after it, and `acquire()` counts an attempt unanswered for that long
   * as failed, trying again while it has time. A `release()` that timed out goes on in the
   * background, retried until the lock would have expired anyway.
   * @default 2_000
   */
  replyTimeoutMs: number;
  /**
   * Random extra delay, 0..retryJitterMs milliseconds, added to timed waits so waiters spread out.
   * @default 5
   */
  retryJitterMs: number;
  /**
   * Wake waiters through the lock's release channel (one shared subscriber connection).
   * @default true
   */
  wakeOnRelease: boolean;
  /**
   * Safety margin for clock drift, as a fraction of the TTL (plus 2 ms).
   * @default 0.01
   */
  driftFactor: number;
  /**
   * Prefix of every key and channel: `prefix:{name}…`. No braces.
   * @default "locksmith"
   */
  prefix: string;
  /**
   * The clocks validity is measured with (inject one in tests): `now()` is monotonic; the optional
   * `wallNow()` lets a host suspend shorten leases too.
   * @default monotonicClock (`performance.now()`, and `Date.now()` as `wallNow()`)
   */
  clock: Clock;
}

/** How a FairMutex behaves: the Mutex's options, plus how long a queued waiter's place outlives it. */
export interface FairLockOptions extends LockOptions {
  /**
   * How long a waiter's place in the queue is kept without the waiter renewing it, in milliseconds.
   * A place never outlives the waiter's own `timeoutMs` either; only a waiter whose timeout is longer
   * than this renews its place, every `waiterTtlMs / 3`.
   * @default 30_000
   */
  waiterTtlMs: number;
}

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

/**
 * How a RedlockMutex behaves: the Mutex's options, and how long one node may take to answer. Its
 * defaults differ in one place: `retryDelayMs` is 50, since a waiter is handed the lock by several
 * servers' messages and a lost one must cost it little.
 */
export interface RedlockOptions extends LockOptions {
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
   * strictly first come, first served (measured the fastest here, see the README).
   * @default 0
   */
  handOffAfterMs: number;
  /**
   * How long a waiter's place in a server's line is kept without the waiter renewing it, in
   * milliseconds; a waiter renews it with every attempt, and at least every `waiterTtlMs / 3`.
   * Shorter than a FairMutex's, because a place whose leave missed a server that was down comes
   * back with that server's data, and would be handed the lock while nobody waits for it (held by
   * nobody for its TTL); a place this short is gone by then.
   * @default 1_000
   */
  waiterTtlMs: number;
}

/**
 * How a ReentrantMutex behaves: the Mutex's options, plus who holds it (a per-call option too).
 */
export interface ReentrantLockOptions extends LockOptions {
  /**
   * The holder every acquisition of this lock (or this call) is made as: acquiring again as the same
   * owner adds a hold instead of waiting. Unset, a call inside a `using()` callback of the same lock
   * is made as that call's owner (found through the async context), and any other call as a new owner.
   * @default undefined
   */
  owner: LockOwner | undefined;
}

/** Per-call overrides for `acquire()` / `tryAcquire()` / `using()`. */
export interface AcquireOptions
  extends Partial<
    Pick<
      LockOptions,
      'ttlMs' | 'autoExtend' | 'timeoutMs' | 'retries' | 'retryDelayMs' | 'retryJitterMs' | 'replyTimeoutMs'
    >
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
  replyTimeoutMs: 2_000,
  wakeOnRelease: true,
  driftFactor: 0.01,
  prefix: 'locksmith',
  clock: monotonicClock,
});

export const defaultFairLockOptions: Readonly<FairLockOptions> = Object.freeze({
  ...defaultLockOptions,
  waiterTtlMs: 30_000,
});

export const defaultRedlockOptions: Readonly<RedlockOptions> = Object.freeze({
  ...defaultLockOptions,
  retryDelayMs: 50,
  nodeTimeoutMs: 50,
  handOffAfterMs: 0,
  waiterTtlMs: 1_000,
});

export const defaultReentrantLockOptions: Readonly<ReentrantLockOptions> = Object.freeze({
  ...defaultLockOptions,
  owner: undefined,
});

/** Per-call overrides for a ReentrantMutex's `acquire()` / `using()`: the lock's, and `owner`. */
export interface ReentrantAcquireOptions
  extends AcquireOptions,
    Partial<Pick<ReentrantLockOptions, 'owner'>> {}

/** Per-call overrides for a ReentrantMutex's `tryAcquire()`. */
export type ReentrantTryAcquireOptions = TryAcquireOptions & Partial<Pick<ReentrantLockOptions, 'owner'>>;

/** Per-call overrides for a Semaphore's `acquire()` / `using()`: the lock's, and `permits`. */
export interface SemaphoreAcquireOptions extends AcquireOptions, Partial<Pick<SemaphoreOptions, 'permits'>> {}

/** Per-call overrides for a Semaphore's `tryAcquire()`. */
export type SemaphoreTryAcquireOptions = TryAcquireOptions & Partial<Pick<SemaphoreOptions, 'permits'>>;

/** A Semaphore's defaults; `limit` has none (it must be given). */
export const defaultSemaphoreOptions: Readonly<Omit<SemaphoreOptions, 'limit'>> = Object.freeze({
  ...defaultFairLockOptions,
  permits: 1,
});

const acquireOptionNames: (keyof AcquireOptions)[] = [
  'ttlMs',
  'autoExtend',
  'timeoutMs',
  'retries',
  'retryDelayMs',
  'retryJitterMs',
  'replyTimeoutMs',
  'signal',
];

type Checks<T> = { [K in keyof T]-?: (name: string, value: unknown) => T[K] };

const lockChecks: Checks<LockOptions> = {
  ttlMs: (n, v) => checkMs(n, v),
  autoExtend: checkBoolean,
  timeoutMs: (n, v) => checkMs(n, v, { allowZero: true, allowInfinity: true }),
  retries: (n, v) => checkCount(n, v, { allowInfinity: true }),
  retryDelayMs: (n, v) => checkMs(n, v, { allowZero: true, allowInfinity: true }),
  retryJitterMs: (n, v) => checkMs(n, v, { allowZero: true }),
  replyTimeoutMs: (n, v) => checkMs(n, v),
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

const fairLockChecks: Checks<FairLockOptions> = { ...lockChecks, waiterTtlMs: (n, v) => checkMs(n, v) };

const semaphoreChecks: Checks<SemaphoreOptions> = {
  ...fairLockChecks,
  limit: (n, v) => checkCount(n, v, { min: 1 }),
  permits: (n, v) => checkCount(n, v, { min: 1 }),
};

const redlockChecks: Checks<RedlockOptions> = {
  ...lockChecks,
  nodeTimeoutMs: (n, v) => checkMs(n, v),
  handOffAfterMs: (n, v) => checkMs(n, v, { allowZero: true }),
  waiterTtlMs: (n, v) => checkMs(n, v),
};
const reentrantLockChecks: Checks<ReentrantLockOptions> = {
  ...lockChecks,
  owner: (n, v) => {
    if (!(v instanceof LockOwner)) {
      throw new TypeError(`Expected \`${n}\` to be a LockOwner (new LockOwner()), got ${describeValue(v)}`);
    }
    return v;
  },
};

function checkFields<T extends object>(given: Partial<T>, table: Partial<Checks<T>>): void {
  for (const [key, value] of Object.entries(given)) {
    if (value === undefined) continue;
    table[key as keyof T]?.(key, value);
  }
}

/** Checks a Mutex's options and merges them over the defaults into a new frozen object. */
export function resolveLockOptions(options: unknown): Readonly<LockOptions> {
  return resolveOptions(options, defaultLockOptions, lockChecks);
}

/** Checks a FairMutex's options and merges them over the defaults into a new frozen object. */
export function resolveFairLockOptions(options: unknown): Readonly<FairLockOptions> {
  return resolveOptions(options, defaultFairLockOptions, fairLockChecks);
}

/** Checks a RedlockMutex's options and merges them over the defaults into a new frozen object. */
export function resolveRedlockOptions(options: unknown): Readonly<RedlockOptions> {
  return resolveOptions(options, defaultRedlockOptions, redlockChecks);
}

/** Checks a ReentrantMutex's options and merges them over the defaults into a new frozen object. */
export function resolveReentrantLockOptions(options: unknown): Readonly<ReentrantLockOptions> {
  return resolveOptions(options, defaultReentrantLockOptions, reentrantLockChecks);
}

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

/** Checks options against a lock kind's table; the caller's object is never changed. */
function resolveOptions<T extends LockOptions>(
  options: unknown,
  defaults: Readonly<T>,
  checks: Checks<T>,
): Readonly<T> {
  const given = checkOptionsObject<T>('options', options, Object.keys(defaults) as (keyof T & string)[]);
  checkFields(given, checks);
  const resolved = { ...defaults, ...withoutUndefined(given) };
  // Checked once both are known: the least usable TTL depends on the drift factor.
  checkTtlMs('ttlMs', resolved.ttlMs, resolved.driftFactor);
  return Object.freeze(resolved);
}

/** One call's effective options: the lock's, with that call's overrides and its signal. */
export type EffectiveOptions<T extends LockOptions = LockOptions> = Readonly<T> & {
  readonly signal: AbortSignal | undefined;
};

/** Per-call overrides for `tryAcquire()`: a single attempt has nothing to wait for. */
export type TryAcquireOptions = Pick<AcquireOptions, 'ttlMs' | 'autoExtend' | 'replyTimeoutMs' | 'signal'>;

export const tryAcquireOptionNames: (keyof TryAcquireOptions)[] = [
  'ttlMs',
  'autoExtend',
  'replyTimeoutMs',
  'signal',
];

/** A check per option name (a lock kind's table, as `checkFields` runs it). */
type CheckTable = Readonly<Record<string, (name: string, value: unknown) => unknown>>;

/**
 * The per-call options of a lock kind: the names `acquire()`/`using()` and `tryAcquire()` accept,
 * and the checks they run. Each name is an option of the lock too (the call overrides it).
 */
export interface CallOptionTable {
  readonly acquire: readonly string[];
  readonly tryAcquire: readonly string[];
  readonly checks: CheckTable;
}

/** Every lock kind's per-call options, unless it adds its own. */
export const lockCallOptions: CallOptionTable = Object.freeze({
  acquire: acquireOptionNames,
  tryAcquire: tryAcquireOptionNames,
  checks: lockChecks,
});

/** A ReentrantMutex's per-call options: every lock's, and `owner`. */
export const reentrantCallOptions: CallOptionTable = Object.freeze({
  acquire: [...acquireOptionNames, 'owner'],
  tryAcquire: [...tryAcquireOptionNames, 'owner'],
  checks: reentrantLockChecks,
});

/** A Semaphore's per-call options: every lock's, and `permits`. */
export const semaphoreCallOptions: CallOptionTable = Object.freeze({
  acquire: [...acquireOptionNames, 'permits'],
  tryAcquire: [...tryAcquireOptionNames, 'permits'],
  checks: semaphoreChecks,
});

/** Checks per-call options; returns the effective options for this call (caller's object untouched). */
export function resolveAcquireOptions<T extends LockOptions>(
  options: unknown,
  base: Readonly<T>,
  known: readonly string[] = acquireOptionNames,
  checks: CheckTable = lockChecks,
): EffectiveOptions<T> {
  // No per-call options (the common call): the lock's own options, as one frozen object per lock.
  if (options === undefined) {
    let cached = withoutOverrides.get(base) as EffectiveOptions<T> | undefined;
    if (!cached) {
      cached = Object.freeze({ ...base, signal: undefined });
      withoutOverrides.set(base, cached);
    }
    return cached;
  }
  const given = checkOptionsObject<AcquireOptions>('options', options, known as (keyof AcquireOptions)[]);
  const { signal, ...rest } = given;
  checkFields(rest as Record<string, unknown>, checks);
  if (signal !== undefined) checkSignal('signal', signal);
  const resolved = { ...base, ...withoutUndefined(rest), signal };
  checkTtlMs('ttlMs', resolved.ttlMs, resolved.driftFactor);
  return Object.freeze(resolved);
}

/**
 * The effective options of calls without per-call options, per lock options object: built once,
 * since every such call would build the same one (a busy lock's profile showed the copy).
 */
const withoutOverrides = new WeakMap<object, EffectiveOptions>();

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
