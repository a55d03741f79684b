import type { Clock } from '../clock.js';
import { LockLostError, type LockLostReason, NotHeldError } from '../errors.js';
import { validUntil } from '../timing.js';
import { checkMs } from '../validation.js';
import { Watchdog } from './watchdog.js';

/**
 * What a lease needs from the primitive that granted it. The lease never knows which lock kind or
 * which Redis client it talks to.
 */
export interface LeaseBackend {
  /** Compare-and-pexpire: true when still held by `token` and now extended to `ttlMs`. */
  extend(token: string, ttlMs: number): Promise<boolean>;
  /** Compare-and-delete: true when `token` held the lock and it is now released. */
  release(token: string): Promise<boolean>;
  /** Asks Redis whether `token` holds the lock now. */
  isHeldBy(token: string): Promise<boolean>;
}

export interface LeaseGrant {
  readonly name: string;
  readonly token: string;
  readonly fencingToken: number;
  readonly ttlMs: number;
  /** Monotonic time at which the successful request was sent. */
  readonly sentAt: number;
  readonly attempts: number;
  readonly autoExtend: boolean;
  readonly driftFactor: number;
}

type LeaseState = 'held' | 'released' | 'lost';

/**
 * A held lock. Returned by `acquire()`; give it back with `release()` or `await using`.
 *
 * - `fencingToken` grows with every acquisition of the same lock name: pass it to the resource you
 *   protect so it can refuse writes from a holder that lost the lock without knowing.
 * - `signal` aborts with a `LockLostError` as soon as the lease is known to be lost (its validity
 *   ran out, or Redis no longer holds its token). Pass it to the work the lock protects.
 */
export class Lease implements AsyncDisposable {
  readonly name: string;
  /** The random 128-bit owner token stored in Redis while this lease holds the lock. */
  readonly token: string;
  /** Strictly increasing per lock name; compare it at the protected resource. */
  readonly fencingToken: number;
  /** How many attempts the acquisition took (redis_exp_lock's `lock` return value). */
  readonly attempts: number;

  private state: LeaseState = 'held';
  private ttl: number;
  private deadline: number;
  // Created on first use of `signal`: an AbortSignal costs more than the rest of a lease, and many
  // leases (a busy lock released at once) never need one.
  private controller: AbortController | undefined;
  private lostError: LockLostError | undefined;
  private readonly watchdog: Watchdog;
  private extending: Promise<unknown> = Promise.resolve();
  private readonly driftFactor: number;

  constructor(
    grant: LeaseGrant,
    private readonly backend: LeaseBackend,
    private readonly clock: Clock,
  ) {
    this.name = grant.name;
    this.token = grant.token;
    this.fencingToken = grant.fencingToken;
    this.attempts = grant.attempts;
    this.ttl = grant.ttlMs;
    this.driftFactor = grant.driftFactor;
    this.deadline = validUntil(grant.sentAt, grant.ttlMs, grant.driftFactor);
    this.watchdog = new Watchdog({
      clock,
      autoExtend: grant.autoExtend,
      ttlMs: () => this.ttl,
      validUntil: () => this.deadline,
      extend: () => this.extendOnce(this.ttl),
      onLost: (reason, cause) => this.markLost(reason, cause),
    });
    // Validity already over when the lease is built (its grant's reply came late): it is lost now,
    // not on the expiry timer's next tick, so `signal` is aborted before the caller can look at it
    // (found by the fault suite: acquire() resolved with a lease past its validity, signal live).
    if (this.deadline <= clock.now()) {
      this.markLost('expired');
      return;
    }
    this.watchdog.start(grant.sentAt);
  }

  /** Aborts with a `LockLostError` when the lock is lost. Never aborts because of `release()`. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.lostError) this.controller.abort(this.lostError);
    }
    return this.controller.signal;
  }

  /** The lease TTL in milliseconds (the latest one, after `extend(ttlMs)`). */
  get ttlMs(): number {
    return this.ttl;
  }

  /** Monotonic instant (`performance.now()` scale) until which the lock is known to be held. */
  get validUntil(): number {
    return this.deadline;
  }

  /** Milliseconds of validity left (0 once lost or released). Local: no round trip. */
  get remainingMs(): number {
    if (this.state !== 'held') return 0;
    return Math.max(0, this.deadline - this.clock.now());
  }

  /**
   * Whether this lease believes it holds the lock: not released, not lost, validity left.
   * Local: no round trip (redis_exp_lock's `locked?`). Ask Redis with `isOwned()`.
   */
  get isHeld(): boolean {
    return this.remainingMs > 0;
  }

  /** Asks Redis whether this lease's token holds the lock right now (redis_exp_lock's `key_owned?`). */
  async isOwned(): Promise<boolean> {
    if (this.state === 'released') return false;
    return this.backend.isHeldBy(this.token);
  }

  /**
   * Extends the lease to `ttlMs` from now (default: its current TTL). Compare-and-pexpire: a lock
   * that expired is never re-acquired. Throws `LockLostError` (and aborts `signal`) when the lock
   * is no longer held, `NotHeldError` after `release()`; a Redis error rejects without changing
   * the lease, so the caller may retry while validity remains.
   */
  async extend(ttlMs: number = this.ttl): Promise<void> {
    checkMs('ttlMs', ttlMs);
    if (this.state === 'released') throw new NotHeldError(this.name, 'it was released');
    if (this.state === 'lost') throw this.lostError as LockLostError;
    const outcome = await this.extendOnce(ttlMs);
    if (outcome === 'lost') throw this.lostError as LockLostError;
    this.watchdog.rescheduleAfterExtend();
  }

  /**
   * Releases the lock (compare-and-delete). Resolves `true` when this lease still held it, `false`
   * when it had already expired or been lost: that is reported, never thrown, so a `finally`
   * cannot hide the error that brought you there. Calling it again resolves `false` at once.
   * Rejects only when Redis cannot be reached (the lock then expires by its TTL).
   */
  async release(): Promise<boolean> {
    if (this.state !== 'held') return false;
    this.state = 'released';
    this.watchdog.stop();
    return this.backend.release(this.token);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** One extension, serialised with any other in flight so two never overlap. */
  private extendOnce(ttlMs: number): Promise<'extended' | 'lost'> {
    const run = async (): Promise<'extended' | 'lost'> => {
      if (this.state !== 'held') return this.state === 'lost' ? 'lost' : 'extended';
      const sentAt = this.clock.now();
      const extended = await this.backend.extend(this.token, ttlMs);
      if (this.state !== 'held') return this.state === 'lost' ? 'lost' : 'extended';
      if (!extended) {
        this.markLost('not-owner');
        return 'lost';
      }
      this.ttl = ttlMs;
      this.deadline = Math.max(this.deadline, validUntil(sentAt, ttlMs, this.driftFactor));
      return 'extended';
    };
    const next = this.extending.then(run, run);
    this.extending = next.catch(() => {});
    return next;
  }

  private markLost(reason: LockLostReason, cause?: unknown): void {
    if (this.state !== 'held') return;
    this.state = 'lost';
    this.watchdog.stop();
    this.lostError = new LockLostError(this.name, reason, cause === undefined ? undefined : { cause });
    this.controller?.abort(this.lostError);
  }
}
