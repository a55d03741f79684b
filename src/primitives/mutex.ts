import type { RedisClient } from '../adapters/client-types.js';
import { hubFor } from '../adapters/subscriber-hub.js';
import { LockLostError } from '../errors.js';
import type { Lease, LeaseBackend } from '../lease/lease.js';
import {
  type AcquireOptions,
  type LockOptions,
  resolveAcquireOptions,
  resolveLockOptions,
  type TryAcquireOptions,
  tryAcquireOptionNames,
} from '../options.js';
import { type LockKeys, lockKeys } from '../protocol/keys.js';
import { asFlagged, asInteger } from '../protocol/replies.js';
import { newToken } from '../token.js';
import { checkFunction, checkName, checkToken } from '../validation.js';
import { type AttemptOutcome, acquireWithWaiting, attemptOnce } from './acquisition.js';
import { clientId } from './client-id.js';
import { decodeLockState, type LockState, ScriptedLock } from './scripted-lock.js';

export type { LockState } from './scripted-lock.js';

/** The work `using()` runs while holding the lock. */
export type LockedWork<T> = (signal: AbortSignal, lease: Lease) => T | Promise<T>;

/**
 * A mutual-exclusion lock with a lease, on one Redis deployment.
 *
 * ```ts
 * const mutex = new Mutex(redis, 'orders:42', { ttlMs: 10_000 });
 * await using lease = await mutex.acquire();
 * await saveOrder(order, { fencingToken: lease.fencingToken, signal: lease.signal });
 * ```
 */
export class Mutex extends ScriptedLock {
  /** The effective options (defaults merged with yours); frozen. */
  readonly options: Readonly<LockOptions>;
  /** @internal The Redis keys of this lock (tests and the fault suite look at them). */
  readonly keys: LockKeys;
  /** @internal */
  protected readonly backend: LeaseBackend;
  /** Where a release wakes this client's waiters (one channel per client and lock). */
  private readonly wakeChannel: string;

  constructor(client: RedisClient, name: string, options?: Partial<LockOptions>) {
    super(client, checkName('name', name));
    this.options = resolveLockOptions(options);
    this.keys = lockKeys(this.options.prefix, name);
    this.wakeChannel = `${this.keys.releasedChannel}:${clientId(this.driver)}`;
    this.backend = {
      extend: async (token, ttlMs) =>
        asInteger('mutex-extend', await this.run('mutexExtend', [this.keys.lock], [token, String(ttlMs)])) ===
        1,
      release: async (token) =>
        asInteger(
          'mutex-release',
          await this.run(
            'mutexRelease',
            [this.keys.lock, this.keys.sleepers, this.keys.lastReleased],
            [token, this.wakeChannel],
          ),
        ) === 1,
      isHeldBy: async (token) => (await this.inspect()).ownerToken === token,
    };
  }

  /**
   * Waits for the lock and resolves with a lease. Rejects with `LockTimeoutError` after
   * `timeoutMs`, `TooManyAttemptsError` once `retries` ran out, `RedisUnavailableError` when Redis
   * could not be reached meanwhile, a `LockError` that says what to fix, or the signal's reason when
   * `signal` aborts; in every case its token is given back (best-effort when Redis is unreachable).
   */
  async acquire(options?: AcquireOptions): Promise<Lease> {
    const effective = resolveAcquireOptions(options, this.options);
    const token = newToken();
    const sleeper = { token, registered: false, wakeable: effective.wakeOnRelease };
    const deadline = deadlineOf(effective);
    const { outcome, attempts } = await acquireWithWaiting({
      name: this.name,
      token,
      ttlMs: effective.ttlMs,
      driftFactor: effective.driftFactor,
      wake: effective.wakeOnRelease
        ? { hub: hubFor(this.driver), channel: this.wakeChannel, accept: (message) => message === token }
        : undefined,
      timeoutMs: effective.timeoutMs,
      retries: effective.retries,
      retryDelayMs: effective.retryDelayMs,
      retryJitterMs: effective.retryJitterMs,
      signal: effective.signal,
      clock: effective.clock,
      wakeUpIsRetry: true,
      attempt: () => this.attempt(sleeper, effective, deadline),
      // A waiter that gives up leaves the sleepers (and passes on a wake-up that may have been
      // meant for it), so no release wastes its one wake-up on a waiter that is gone; and a token
      // whose attempt's outcome is unknown is deleted if it holds the lock.
      giveBack: () => this.backend.release(token),
      mayHaveLeftState: () => sleeper.registered,
    });
    return this.lease(
      {
        token,
        fencingToken: outcome.fencingToken,
        sentAt: outcome.sentAt,
        sentAtWall: outcome.sentAtWall,
        attempts,
      },
      effective,
    );
  }

  /**
   * One attempt: resolves with a lease, or `null` when someone else holds the lock (or when the
   * reply came too late for the lease to have any validity left; that grant is given back).
   * Rejects only for infrastructure faults, never for contention: `RedisUnavailableError` when no
   * reply came within `ttlMs` or the attempt failed (then the token is given back best-effort), or
   * the `LockError` that says what is wrong.
   */
  async tryAcquire(options?: TryAcquireOptions): Promise<Lease | null> {
    const effective = resolveAcquireOptions(options, this.options, tryAcquireOptionNames);
    effective.signal?.throwIfAborted();
    const token = newToken();
    const outcome = await attemptOnce({
      name: this.name,
      token,
      ttlMs: effective.ttlMs,
      driftFactor: effective.driftFactor,
      signal: effective.signal,
      clock: effective.clock,
      attempt: () => this.attempt({ token, registered: false, wakeable: false }, effective, 0),
      giveBack: () => this.backend.release(token),
    });
    if (!outcome.acquired) return null;
    if (effective.signal?.aborted) {
      await this.backend.release(token).catch(() => {});
      throw effective.signal.reason;
    }
    return this.lease(
      {
        token,
        fencingToken: outcome.fencingToken,
        sentAt: outcome.sentAt,
        sentAtWall: outcome.sentAtWall,
        attempts: 1,
      },
      effective,
    );
  }

  /**
   * Acquires the lock, runs `work(signal, lease)`, and always releases in `finally`. An error
   * thrown by `work` is the one you get back, whatever happens to the release. `signal` aborts
   * with a `LockLostError` if the lock is lost while `work` runs.
   */
  async using<T>(work: LockedWork<T>, options?: AcquireOptions): Promise<T> {
    checkFunction('work', work);
    const lease = await this.acquire(options);
    return runHolding(lease, work);
  }

  /**
   * Compare-and-delete by owner token, for a token kept elsewhere (another process, the book's
   * `release_lock`). Resolves `true` when that token held the lock and it is now free.
   */
  async releaseToken(token: string): Promise<boolean> {
    return this.backend.release(checkToken('token', token));
  }

  /** Asks Redis whether anyone holds the lock (redis_exp_lock's `key_locked?`). */
  async isLocked(): Promise<boolean> {
    return (await this.inspect()).locked;
  }

  /** The lock's state in Redis, in one round trip. */
  async inspect(): Promise<LockState> {
    const reply = await this.run('mutexInspect', [this.keys.lock, this.keys.fence], []);
    return decodeLockState('mutex-inspect', reply)[0];
  }

  /**
   * One attempt. When the lock is taken and the caller can be woken, the script registers it as a
   * sleeper whose entry lives until `deadline` (capped, and renewed by the next attempt): a
   * release then wakes one sleeper instead of every waiter.
   */
  private async attempt(
    sleeper: Sleeper,
    options: Readonly<LockOptions>,
    deadline: number,
  ): Promise<AttemptOutcome> {
    const { clock, ttlMs } = options;
    const sentAt = clock.now();
    const sentAtWall = clock.wallNow?.();
    const lifetimeMs = sleeper.wakeable
      ? Math.max(1, Math.ceil(Math.min(deadline - sentAt, MAX_SLEEPER_MS)))
      : 0;
    // The script may register us even if its reply is lost: count on it from the moment we ask, so
    // a stale entry is removed on success and on giving up (it would swallow a release's wake-up).
    if (lifetimeMs > 0) sleeper.registered = true;
    const reply = await this.run(
      'mutexAcquire',
      [this.keys.lock, this.keys.fence, this.keys.sleepers],
      [sleeper.token, String(ttlMs), String(lifetimeMs), this.wakeChannel, sleeper.registered ? '1' : '0'],
    );
    const { ok, value } = asFlagged('mutex-acquire', reply);
    if (!ok) {
      // Wake before the entry expires, to renew it (a renewal, not a retry).
      const renewInMs =
        lifetimeMs > 0 && lifetimeMs < deadline - sentAt ? lifetimeMs : Number.POSITIVE_INFINITY;
      return { acquired: false, holderPttlMs: value, renewInMs };
    }
    // A grant whose reply came after its validity ran out is given back by the waiting loop, which
    // alone knows whether this attempt is still the call's current one (see usableOrGivenBack).
    return { acquired: true, fencingToken: value, sentAt, sentAtWall };
  }
}

/** Runs `work` with a held lease and releases it in `finally`, never hiding `work`'s own error. */
export async function runHolding<T>(lease: Lease, work: LockedWork<T>): Promise<T> {
  // Acquisition never hands out a lease without validity; this guards the gap before `work` starts.
  if (!lease.isHeld) {
    await lease.release().catch(() => {});
    throw new LockLostError(lease.name, 'expired');
  }
  let result: T;
  try {
    result = await work(lease.signal, lease);
  } catch (error) {
    await lease.release().catch(() => {});
    throw error;
  }
  await lease.release();
  return result;
}

/** How long a sleeper entry lives at most before its waiter renews it (a waiter wakes to do so). */
const MAX_SLEEPER_MS = 60_000;

/** One acquire call, as the sleepers set knows it. */
interface Sleeper {
  readonly token: string;
  /** An attempt may have added this call to the sleepers (so success or giving up must remove it). */
  registered: boolean;
  /** Whether a release can wake this call (it listens on its wake channel). */
  readonly wakeable: boolean;
}

function deadlineOf(options: Readonly<LockOptions>): number {
  return options.clock.now() + options.timeoutMs;
}
