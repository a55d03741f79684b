import { LockLostError } from '../errors.js';
import { inspectCustom } from '../inspect.js';
import type { Lease, LeaseBackend } from '../lease/lease.js';
import {
  type AcquireOptions,
  type CallOptionTable,
  type EffectiveOptions,
  type LockOptions,
  lockCallOptions,
  resolveAcquireOptions,
  type TryAcquireOptions,
} from '../options.js';
import type { LockState } from '../protocol/lock-state.js';
import { newToken } from '../token.js';
import { checkFunction, checkToken, checkTtlMs } from '../validation.js';
import { type AcquisitionPlan, type AttemptOutcome, acquireWithWaiting, attemptOnce } from './acquisition.js';
import { type Granted, grantLease } from './grant-lease.js';
import type { WakeChannel } from './wake.js';

/** The work `using()` runs while holding the lock. */
export type LockedWork<T> = (signal: AbortSignal, lease: Lease) => T | Promise<T>;

/** One acquire call, as a lock kind's `planAttempts` hook sees it. */
export interface AttemptCall<Options extends LockOptions = LockOptions> {
  /** The owner token every attempt of this call uses. */
  readonly token: string;
  /** The call's effective options (the lock's, with the call's overrides). */
  readonly options: EffectiveOptions<Options>;
  /** `wait`: `acquire()`, may queue or register to be woken; `try`: `tryAcquire()`, one attempt. */
  readonly mode: 'wait' | 'try';
  /** When the call gives up, on `options.clock` (`Infinity`: never; for `try`, now). */
  readonly deadline: number;
}

/** How a lock kind makes the attempts of one call. */
export interface AttemptHooks {
  /**
   * One attempt: a round trip, or, when the lock kind already knows the outcome (a heard
   * hand-off), that outcome as is.
   */
  attempt(): AttemptOutcome | Promise<AttemptOutcome>;
  /**
   * Where a release or hand-off wakes this call (`wait` mode with `wakeOnRelease` only): one channel
   * on one client, or one per node of a quorum (a message on any of them wakes the call).
   */
  readonly wake?: readonly WakeChannel[];
  /** Whether an attempt after a wake-up counts against `retries` (false when the message is the grant). */
  readonly wakeUpIsRetry: boolean;
  /** Whether an attempt may have left state in Redis (a queue place) to clean up. */
  mayHaveLeftState(): boolean;
}

/**
 * The public shell of every lock, written once: `acquire`, `tryAcquire`, `using`, `releaseToken`,
 * `isLocked`, `inspect`, the waiting loop and the granting of leases. A lock kind implements four
 * hooks and nothing else of this:
 *
 * - `planAttempts(call)`: how one call attempts (and where it is woken);
 * - `sendRelease(token)`: give the lock held by `token` back, or leave any waiting state `token` has
 *   (used by leases, by giving up, and by `releaseToken`);
 * - `sendExtend(token, ttlMs)`: compare-and-pexpire for the lease's watchdog and `extend()`;
 * - `readState()`: the lock's state in Redis, for `inspect()`.
 *
 * `holds(token)` and `grant(granted, options)` have defaults a kind may override (a multi-permit or
 * quorum lease), and so has `callOptions()`: the per-call options (`Call`) a kind accepts beyond
 * every lock's (the Semaphore's `permits`). Nothing here knows about Redis clients: the single-node kinds get theirs from
 * `ScriptedLock`, a quorum over several servers would implement the same hooks over its nodes.
 * docs/design.md §11 checks these hooks against a semaphore, a read-write lock and Redlock.
 */
export abstract class LockShell<
  Options extends LockOptions,
  State extends LockState,
  Call extends AcquireOptions = AcquireOptions,
> {
  /** @internal What the leases of this lock call back into. */
  protected readonly backend: LeaseBackend = {
    extend: (token, ttlMs) => this.sendExtend(token, ttlMs),
    release: (token) => this.sendRelease(token),
    isHeldBy: (token) => this.holds(token),
    disconnected: () => this.disconnected(),
  };

  constructor(
    /** The lock's name, as given. */
    readonly name: string,
    /** The effective options (defaults merged with yours); frozen. */
    readonly options: Readonly<Options>,
  ) {}

  /** @internal A short form for `console.log`: the kind and the name, not the client. */
  [inspectCustom](): string {
    return `${this.constructor.name} { name: ${JSON.stringify(this.name)} }`;
  }

  /** @internal */
  protected abstract planAttempts(call: AttemptCall<Options>): AttemptHooks;
  /** @internal */
  protected abstract sendRelease(token: string): Promise<boolean>;
  /** @internal */
  protected abstract sendExtend(token: string, ttlMs: number): Promise<boolean>;
  /** @internal */
  protected abstract readState(): Promise<State>;

  /**
   * @internal Why this lock's client has no connection right now, when it knows (it is
   * reconnecting): the cause a call without a reply reports. Undefined by default.
   */
  protected disconnected(): string | undefined {
    return undefined;
  }

  /** @internal Whether `token` holds the lock in Redis now. */
  protected async holds(token: string): Promise<boolean> {
    return (await this.readState()).ownerToken === token;
  }

  /** @internal The per-call options this kind accepts and their checks (names of `Options` fields). */
  protected callOptions(): CallOptionTable {
    return lockCallOptions;
  }

  /**
   * @internal The owner token of one call (every attempt of it uses it; its lease's `token`): 128
   * random bits, unless a kind's tokens say more (a reentrant lock's name their owner).
   */
  protected newCallToken(_options: EffectiveOptions<Options>): string {
    return newToken();
  }

  /** @internal Turns a grant into the lease the caller receives. */
  protected grant(granted: Granted, options: Readonly<LockOptions>): Lease {
    return grantLease(this.name, this.backend, granted, options);
  }

  /**
   * Waits for the lock and resolves with a lease. Rejects with `LockTimeoutError` after
   * `timeoutMs`, `TooManyAttemptsError` once `retries` ran out, `RedisUnavailableError` when Redis
   * could not be reached meanwhile, a `LockError` that says what to fix, or the signal's reason when
   * `signal` aborts; in every case its token is given back and any waiting state left (best-effort
   * when Redis is unreachable).
   */
  async acquire(options?: Call): Promise<Lease> {
    const table = this.callOptions();
    const effective = resolveAcquireOptions(options, this.options, table.acquire, table.checks);
    const token = this.newCallToken(effective);
    const deadline = effective.clock.now() + effective.timeoutMs;
    const hooks = this.planAttempts({ token, options: effective, mode: 'wait', deadline });
    const { outcome, attempts } = await acquireWithWaiting(this.callPlan(token, effective, hooks));
    return this.grant(grantedBy(token, outcome, attempts), effective);
  }

  /**
   * One attempt that never waits: resolves with a lease, or `null` when the lock is not free for
   * this caller (or when the reply came too late for the lease to have any validity left: that
   * grant is given back). Rejects only for infrastructure faults, never for contention:
   * `RedisUnavailableError` when no reply came within `ttlMs` or the attempt failed (then the token
   * is given back best-effort), or the `LockError` that says what is wrong.
   */
  async tryAcquire(options?: TryAcquireOptions & Omit<Call, keyof AcquireOptions>): Promise<Lease | null> {
    const table = this.callOptions();
    const effective = resolveAcquireOptions(options, this.options, table.tryAcquire, table.checks);
    effective.signal?.throwIfAborted();
    const token = this.newCallToken(effective);
    const deadline = effective.clock.now();
    const hooks = this.planAttempts({ token, options: effective, mode: 'try', deadline });
    const outcome = await attemptOnce(this.callPlan(token, effective, hooks));
    if (!outcome.acquired) return null;
    if (effective.signal?.aborted) {
      await this.sendRelease(token).catch(() => {});
      throw effective.signal.reason;
    }
    return this.grant(grantedBy(token, outcome, 1), effective);
  }

  /**
   * Everything the waiting loop (and a single try, which reads only the `AttemptPlan` part) needs to
   * know about one call. One literal, field by field: a busy lock's profile showed the spread it
   * replaced (a generic object copy) as the costliest line of an acquisition.
   */
  private callPlan(token: string, options: EffectiveOptions<Options>, hooks: AttemptHooks): AcquisitionPlan {
    return {
      name: this.name,
      token,
      ttlMs: options.ttlMs,
      replyTimeoutMs: options.replyTimeoutMs,
      disconnected: () => this.disconnected(),
      driftFactor: options.driftFactor,
      signal: options.signal,
      clock: options.clock,
      attempt: () => hooks.attempt(),
      giveBack: () => this.sendRelease(token),
      wake: options.wakeOnRelease ? hooks.wake : undefined,
      timeoutMs: options.timeoutMs,
      retries: options.retries,
      retryDelayMs: options.retryDelayMs,
      retryJitterMs: options.retryJitterMs,
      wakeUpIsRetry: hooks.wakeUpIsRetry,
      mayHaveLeftState: () => hooks.mayHaveLeftState(),
    };
  }

  /**
   * Acquires the lock, runs `work(signal, lease)`, and always releases in `finally`. An error
   * thrown by `work` is the one you get back, whatever happens to the release. `signal` aborts
   * with a `LockLostError` if the lock is lost while `work` runs.
   */
  async using<T>(work: LockedWork<T>, options?: Call): Promise<T> {
    checkFunction('work', work);
    const lease = await this.acquire(options);
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

  /**
   * Releases the lock held by `token`, kept elsewhere (another process, the book's `release_lock`),
   * or takes `token` out of any waiting state. Resolves `true` when that token held the lock and
   * it is now released (or handed to the next waiter).
   */
  async releaseToken(token: string): Promise<boolean> {
    return this.sendRelease(checkToken('token', token));
  }

  /**
   * Extends the lock held by `token`, kept elsewhere (the book's `refresh_fair_semaphore`), to
   * `ttlMs` from now. Resolves `true` when that token held the lock and now holds it for `ttlMs`;
   * `false` when it did not (expired, or taken over): nothing is re-created.
   */
  async extendToken(token: string, ttlMs: number): Promise<boolean> {
    checkToken('token', token);
    return this.sendExtend(token, checkTtlMs('ttlMs', ttlMs, this.options.driftFactor));
  }

  /** Asks Redis whether anyone holds the lock (redis_exp_lock's `key_locked?`). */
  async isLocked(): Promise<boolean> {
    return (await this.readState()).locked;
  }

  /** The lock's state in Redis, in one round trip. */
  inspect(): Promise<State> {
    return this.readState();
  }
}

/** The grant an acquired outcome makes (fields named, not spread: this runs once per acquisition). */
function grantedBy(
  token: string,
  outcome: Extract<AttemptOutcome, { acquired: true }>,
  attempts: number,
): Granted {
  return {
    token,
    fencingToken: outcome.fencingToken,
    sentAt: outcome.sentAt,
    sentAtWall: outcome.sentAtWall,
    attempts,
  };
}
