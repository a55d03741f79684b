import { hostname } from 'node:os';
import { type Clock, monotonicClock } from './clock.js';
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

/**
 * How a lock behaves. Every field has a default (`defaultLockOptions`); units are in the names.
 * These are the options every lock kind shares, with their checks and defaults; a kind's own
 * options live next to its class and extend these.
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
  /**
   * A short label stored with the lock while this lock's leases hold it, for people and tools
   * reading it (`inspect()`'s `holderLabel`, the `locksmith` command): at most 100 characters; ''
   * stores none. It travels in the acquire call itself, at no extra round trip.
   * @default "<host name>:<process id>"
   */
  label: string;
  /**
   * Replicas that must acknowledge a grant and each extension (Redis `WAIT`) before Locksmith counts
   * it: a shortfall within `replicaAckTimeoutMs` gives the lock back and rejects the acquisition
   * with `NotReplicatedError`, or fails the extension (retried while the lease is valid). `0`: off.
   * For a primary with replicas (Sentinel, or each shard of a Redis Cluster, where `WAIT` goes to
   * the primary of the lock's slot); it narrows, but does not close, the window in which a
   * failover loses a lock. Each guarded grant costs two more round trips, each extension one.
   * @default 0
   */
  minReplicaAcks: number;
  /**
   * How long `WAIT` may wait for `minReplicaAcks` replicas, in milliseconds. WAIT holds up the
   * client's connection while it waits, so every other command on that client waits behind it.
   * @default 200
   */
  replicaAckTimeoutMs: number;
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
  label: `${hostname()}:${process.pid}`,
  minReplicaAcks: 0,
  replicaAckTimeoutMs: 200,
});

export const acquireOptionNames: (keyof AcquireOptions)[] = [
  'ttlMs',
  'autoExtend',
  'timeoutMs',
  'retries',
  'retryDelayMs',
  'retryJitterMs',
  'replyTimeoutMs',
  'signal',
];

/** A check per option of `T` (a lock kind's table). */
export type Checks<T> = { [K in keyof T]-?: (name: string, value: unknown) => T[K] };

export const lockChecks: Checks<LockOptions> = {
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
  label: (n, v) => {
    if (typeof v !== 'string' || v.length > 100)
      throw new TypeError(`Expected \`${n}\` to be a string of at most 100 characters`);
    return v;
  },
  minReplicaAcks: (n, v) => checkCount(n, v),
  replicaAckTimeoutMs: (n, v) => checkMs(n, v),
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

/** Checks options against a lock kind's table; the caller's object is never changed. */
export function resolveOptions<T extends LockOptions>(
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
export type CheckTable = Readonly<Record<string, (name: string, value: unknown) => unknown>>;

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

/** The per-call options of a kind that accepts one more than every lock's (`owner`, `permits`). */
export function callOptionsWith(name: string, checks: CheckTable): CallOptionTable {
  return Object.freeze({
    acquire: [...acquireOptionNames, name],
    tryAcquire: [...tryAcquireOptionNames, name],
    checks,
  });
}

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
  const { signal, ...rest } = checkOptionsObject<AcquireOptions>(
    'options',
    options,
    known as (keyof AcquireOptions)[],
  );
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
