import type { BatchBounds, ProcessBatch } from '../batching/local-batch.js';
import { boundedCall, type CallBound } from '../bounded-call.js';
import { LockLostError } from '../errors.js';
import { emitLockEvent, lockEventsObserved } from '../events.js';
import { inspectCustom } from '../inspect.js';
import { Lease } from '../lease/lease.js';
import {
  type AcquireOptions,
  type CallOptionTable,
  type EffectiveOptions,
  type LockOptions,
  lockCallOptions,
  resolveAcquireOptions,
  type TryAcquireOptions,
} from '../options.js';
import type { GrantPath, LeaseSource, LockBackend, Plan } from '../plan.js';
import type { LockState } from '../protocol/lock-state.js';
import { newToken } from '../token.js';
import { checkFunction, checkToken, checkTtlMs } from '../validation.js';
import type { Attempts } from '../waiting/attempts.js';
import { waitingPath } from '../waiting/loop.js';
import { ReplicaConfirmation } from './replica-confirmation.js';

/** The work `using()` runs while holding the lock. */
export type LockedWork<T> = (signal: AbortSignal, lease: Lease) => T | Promise<T>;

/**
 * The public shell of every lock, written once: `acquire`, `tryAcquire`, `using`, `releaseToken`,
 * `isLocked`, `inspect`, the waiting loop and the granting of leases. A lock kind implements four
 * hooks and nothing else of this:
 *
 * - `planAttempts(plan)`: how one call attempts (and where it is woken);
 * - `sendRelease(token)`: give the lock held by `token` back, or leave any waiting state `token` has
 *   (used by leases, by giving up, and by `releaseToken`);
 * - `sendExtend(token, ttlMs)`: compare-and-pexpire for the lease's watchdog and `extend()`;
 * - `readState()`: the lock's state in Redis, for `inspect()`.
 *
 * `holds(token)`, `callOptions()` (the per-call options a kind accepts beyond every lock's: the
 * Semaphore's `permits`) and `newCallToken(options)` have defaults a kind may override. Nothing here
 * knows about Redis clients: the single-node kinds get theirs from `ScriptedLock`, and the
 * RedlockMutex implements the same hooks over its nodes.
 */
export abstract class LockShell<
  Options extends LockOptions,
  State extends LockState,
  Call extends AcquireOptions = AcquireOptions,
> {
  /** @internal The kind's hooks as a backend, for the waiting loop, the leases and a batch. */
  protected readonly backend: LockBackend = {
    extend: (token, ttlMs) => this.sendExtend(token, ttlMs),
    release: (token) => this.sendRelease(token),
    isHeldBy: (token) => this.holds(token),
    disconnected: () => this.disconnected(),
  };

  /** @internal How long this lock's own calls (`inspect`, `releaseToken`, ...) wait for Redis. */
  protected get bound(): CallBound {
    return {
      name: this.name,
      clock: this.options.clock,
      replyTimeoutMs: this.options.replyTimeoutMs,
      disconnected: () => this.disconnected(),
    };
  }

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
  protected abstract planAttempts(plan: Plan<Options>): Attempts;
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

  /**
   * @internal The process's batch of this lock's callers (see `LocalBatch`) that `plan`'s call joins,
   * and for how long (holds, ms) it may pass the lock on; a batch it makes asks Redis by `path`, and
   * a lease it makes of a grant alone runs over `backend`. Undefined, or a kind without it: the call
   * deals with Redis alone.
   */
  protected localBatch?(
    plan: Plan<Options>,
    path: GrantPath,
    backend: LockBackend,
  ): { batch: ProcessBatch; bounds: BatchBounds } | undefined;

  /** @internal This lock's batch in this process, if there is one now (never makes one). */
  protected existingBatch(): ProcessBatch | undefined {
    return undefined;
  }

  /**
   * @internal `WAIT count timeoutMs` on this lock's client: how many replicas acknowledged its writes.
   * Only a lock on one deployment can ask (`ScriptedLock`); the others refuse `minReplicaAcks`.
   */
  protected waitForReplicas(_count: number, _timeoutMs: number): Promise<number> {
    return Promise.reject(new TypeError(`${this.constructor.name} cannot wait for replicas`));
  }

  /**
   * This lock's way to Redis, the same for every call: its backend, its path to a grant (the waiting
   * loop over the kind's attempts) and the plain leases of that path, each wrapped by the replica
   * confirmation when `minReplicaAcks` asks for it. Made on first use: the options are set after
   * the fields.
   */
  private get route(): Route {
    if (!this.routeMade) {
      let backend = this.backend;
      let path = waitingPath((plan) => this.planAttempts(plan as Plan<Options>), backend);
      const { minReplicaAcks, replicaAckTimeoutMs } = this.options;
      if (minReplicaAcks > 0) {
        const replicas = { bound: this.bound, waitForReplicas: this.waitForReplicas.bind(this) };
        const confirmation = new ReplicaConfirmation(backend, replicas, minReplicaAcks, replicaAckTimeoutMs);
        backend = confirmation.backend();
        path = confirmation.path(path);
      }
      this.routeMade = { backend, path, leases: Lease.from(path, backend) };
    }
    return this.routeMade;
  }
  private routeMade: Route | undefined;

  /** Where `plan`'s lease comes from: its process's batch, when the kind batches it, or Redis alone. */
  private leases(plan: Plan<Options>): LeaseSource<Lease> {
    const { path, backend, leases } = this.route;
    const batched = this.localBatch?.(plan, path, backend);
    return batched ? batched.batch.leases(batched.bounds, Lease.grant) : leases;
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

  /**
   * Waits for the lock and resolves with a lease. Rejects with `LockTimeoutError` after
   * `timeoutMs`, `TooManyAttemptsError` once `retries` ran out, `RedisUnavailableError` when Redis
   * could not be reached meanwhile, a `LockError` that says what to fix, or the signal's reason when
   * `signal` aborts; in every case its token is given back and any waiting state left (best-effort
   * when Redis is unreachable).
   */
  async acquire(options?: Call): Promise<Lease> {
    let plan = this.plan(options, 'wait');
    const startedAt = lockEventsObserved() ? plan.options.clock.now() : undefined;
    const leases = this.leases(plan);
    for (;;) {
      const lease = await leases.acquire(plan);
      // Validity may run out between the grant and here (a reply that came late, a stalled
      // process): such a lease is given back, never handed out, and the call goes on with a new
      // token (a give-back still on its way must not meet this call's next grant).
      if (lease.isHeld) {
        if (startedAt !== undefined) this.reportAcquired(plan, lease, startedAt);
        return lease;
      }
      await lease.release();
      plan = { ...plan, token: this.newCallToken(plan.options) };
    }
  }

  /**
   * One attempt that never waits: resolves with a lease, or `null` when the lock is not free for
   * this caller (or when the reply came too late for the lease to have any validity left: that
   * grant is given back). Rejects only for infrastructure faults, never for contention:
   * `RedisUnavailableError` when no reply came within `replyTimeoutMs` or the attempt failed (then
   * the token is given back best-effort), or the `LockError` that says what is wrong.
   */
  async tryAcquire(options?: TryAcquireOptions & Omit<Call, keyof AcquireOptions>): Promise<Lease | null> {
    const plan = this.plan(options, 'try');
    const startedAt = lockEventsObserved() ? plan.options.clock.now() : undefined;
    // Held by another caller of this process: known without asking Redis.
    if (this.existingBatch()?.heldHere) return null;
    const lease = await this.leases(plan).tryOnce(plan);
    if (!lease) return null;
    if (!lease.isHeld) {
      // No validity left by now (see `acquire`): given back, and not free for this caller.
      await lease.release();
      return null;
    }
    if (startedAt !== undefined) this.reportAcquired(plan, lease, startedAt);
    return lease;
  }

  /** The `acquired` event (only built while someone listens). */
  private reportAcquired(plan: Plan<Options>, lease: Lease, startedAt: number): void {
    emitLockEvent({
      type: 'acquired',
      lockName: this.name,
      kind: this.constructor.name,
      waitMs: plan.options.clock.now() - startedAt,
      attempts: lease.attempts,
      fencingToken: lease.fencingToken,
    });
  }

  /**
   * The plan of one call: its options checked and merged over the lock's, its token and deadline.
   * Built once; the kind, the waiting loop and the lease all read this one object.
   */
  private plan(options: unknown, mode: 'wait' | 'try'): Plan<Options> {
    const table = this.callOptions();
    const names = mode === 'wait' ? table.acquire : table.tryAcquire;
    return this.planWith(resolveAcquireOptions(options, this.options, names, table.checks), mode);
  }

  private planWith(options: EffectiveOptions<Options>, mode: 'wait' | 'try'): Plan<Options> {
    if (mode === 'try') options.signal?.throwIfAborted();
    const now = options.clock.now();
    const deadline = mode === 'wait' ? now + options.timeoutMs : now;
    return { name: this.name, token: this.newCallToken(options), mode, deadline, options };
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
    checkToken('token', token);
    // A run of this process's batch released from outside its leases ends here too.
    this.existingBatch()?.forget(token);
    return boundedCall(this.bound, 'releaseToken()', this.sendRelease(token), {
      goesOn: 'Redis may still apply it',
    });
  }

  /**
   * Extends the lock held by `token`, kept elsewhere (the book's `refresh_fair_semaphore`), to
   * `ttlMs` from now. Resolves `true` when that token held the lock and now holds it for `ttlMs`;
   * `false` when it did not (expired, or taken over): nothing is re-created.
   */
  async extendToken(token: string, ttlMs: number): Promise<boolean> {
    checkToken('token', token);
    checkTtlMs('ttlMs', ttlMs, this.options.driftFactor);
    const { minReplicaAcks, replicaAckTimeoutMs } = this.options;
    // A run of this process's batch holds by this token: its holders must not trust more than this
    // extension bought (it may shorten the lease), nor go on after it found the token gone.
    const batch = this.existingBatch();
    const settled = batch?.extendedFromOutside(token, ttlMs);
    const extended = await boundedCall(this.bound, 'extendToken()', this.route.backend.extend(token, ttlMs), {
      extraMs: minReplicaAcks > 0 ? replicaAckTimeoutMs : 0,
      goesOn: 'Redis may still apply it',
    });
    settled?.(extended);
    return extended;
  }

  /** Asks Redis whether anyone holds the lock (redis_exp_lock's `key_locked?`). */
  async isLocked(): Promise<boolean> {
    return (await this.inspect()).locked;
  }

  /** The lock's state in Redis, in one round trip. */
  inspect(): Promise<State> {
    return boundedCall(this.bound, 'inspect()', this.readState());
  }
}

/** A lock's way to Redis (see `LockShell.route`). */
interface Route {
  readonly backend: LockBackend;
  readonly path: GrantPath;
  readonly leases: LeaseSource<Lease>;
}
