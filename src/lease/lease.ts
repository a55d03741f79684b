import { boundedCall, type CallBound } from '../bounded-call.js';
import { type Clock, elapsedSince, type Instant, instantOf } from '../clock.js';
import { LockLostError, type LockLostReason, NotHeldError } from '../errors.js';
import { emitLockEvent, lockEventsObserved } from '../events.js';
import { reportGiveBack, sendGiveBack } from '../give-back.js';
import { inspectCustom } from '../inspect.js';
import type { GrantPath, LeaseSource, LockBackend, Plan, Won } from '../plan.js';
import { driftMs, validUntil } from '../timing.js';
import { checkTtlMs } from '../validation.js';
import { Watchdog } from './watchdog.js';

/** A give-back that failed on an error that may pass is sent again on this schedule. */
const GIVE_BACK_RETRY = { firstMs: 50, maxMs: 1_000 } as const;

type LeaseState = 'held' | 'released' | 'lost';

/** `budgetMs` of validity left as of `since`; it counts down by whichever clock moves further. */
interface Validity {
  readonly since: Instant;
  readonly budgetMs: number;
}

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

  /**
   * `fencingTokens`: the MultiMutex's from its grant; any other lock's, built (one entry, frozen) on
   * the first read, since most leases are never asked.
   */
  private tokensByName: Readonly<Record<string, number>> | undefined;
  /** When the grant's request was sent (monotonic), for the `released` event's `heldMs`. */
  private readonly grantedAt: number;
  private state: LeaseState = 'held';
  private ttl: number;
  private validity: Validity;
  // Created on first use of `signal`: an AbortSignal costs more than the rest of a lease, and many
  // leases (a busy lock released at once) never need one.
  private controller: AbortController | undefined;
  private lostError: LockLostError | undefined;
  private lossListeners: (() => void)[] | undefined;
  /** The last extension failed, and may have applied (it may have extended the key, then failed). */
  private extensionMayHaveApplied = false;
  private readonly watchdog: Watchdog;
  /** The last extension's tail (made by the first extension: most leases are never extended). */
  private extending: Promise<unknown> | undefined;
  /** The watchdog's extension in flight: a retry after it went unanswered waits for this one. */
  private autoExtension: Promise<'extended' | 'lost'> | undefined;
  private readonly driftFactor: number;
  /** Every round trip of this lease waits for Redis at most `replyTimeoutMs`. */
  private readonly bound: CallBound;
  private readonly backend: LockBackend;
  private readonly clock: Clock;

  /**
   * @internal Leases are made by the locks that grant them: the lease of `plan`'s call, which won
   * the lock (`won`: its grant, in how many attempts). The constructor is private (users see `private constructor()`
   * in the declarations, so `new Lease()` does not compile) and this factory is left out of the
   * published declarations with the types it names.
   */
  static grant(plan: Plan, won: Won, backend: LockBackend): Lease {
    return new Lease(plan, won, backend);
  }

  /** @internal The leases of the grants `path` wins, over `backend`: a call deals with Redis alone. */
  static from(path: GrantPath, backend: LockBackend): LeaseSource<Lease> {
    return {
      acquire: async (plan) => new Lease(plan, await path.wait(plan), backend),
      tryOnce: async (plan) => {
        const won = await path.once(plan);
        return won && new Lease(plan, won, backend);
      },
    };
  }

  private constructor(plan: Plan, won: Won, backend: LockBackend) {
    const { ttlMs, driftFactor, clock } = plan.options;
    const { grant } = won;
    this.name = plan.name;
    this.token = plan.token;
    this.fencingToken = grant.fencingToken;
    this.tokensByName = grant.fencingTokens;
    this.attempts = won.attempts;
    this.grantedAt = grant.sentAt;
    this.backend = backend;
    this.clock = clock;
    this.ttl = ttlMs;
    this.driftFactor = driftFactor;
    this.bound = {
      name: plan.name,
      clock,
      replyTimeoutMs: plan.options.replyTimeoutMs,
      disconnected: () => backend.disconnected(),
    };
    const grantTtlMs = grant.ttlMs ?? ttlMs;
    if (grant.sentAtWall !== undefined) {
      const since = { mono: grant.sentAt, wall: grant.sentAtWall };
      this.validity = { since, budgetMs: grantTtlMs - driftMs(grantTtlMs, driftFactor) };
    } else {
      const since = instantOf(clock);
      this.validity = { since, budgetMs: validUntil(grant.sentAt, grantTtlMs, driftFactor) - since.mono };
    }
    // The lease is its watchdog's hooks (`WatchdogHooks`, by its internal methods). Not declared with
    // `implements`: the published declarations strip those methods, and a strict consumer's
    // type-check would find the class failing its own interface.
    this.watchdog = new Watchdog(this, clock, plan.options.autoExtend);
    // Validity already over when the lease is built (its grant's reply came late): it is lost now,
    // not on the expiry timer's next tick, so `signal` is aborted before the caller can look at it
    // (found by the fault suite: acquire() resolved with a lease past its validity, signal live).
    if (this.validityLeft() <= 0) {
      this.markLost('expired');
      return;
    }
    this.watchdog.start(grant.sentAt);
  }

  /**
   * Each name's fencing token, by name: a lock over several names (`MultiMutex`) has one per name,
   * strictly increasing per name (`fencingToken` is then its first name's); any other lock has its
   * one name's, the same as `fencingToken`. Frozen; the same object at every read.
   */
  get fencingTokens(): Readonly<Record<string, number>> {
    this.tokensByName ??= Object.freeze({ [this.name]: this.fencingToken });
    return this.tokensByName;
  }

  /** Aborts with a `LockLostError` when the lock is lost. Never aborts because of `release()`. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.lostError) this.controller.abort(this.lostError);
    }
    return this.controller.signal;
  }

  /**
   * @internal Calls `listener` once when the lease is lost (at once if it is), as `signal` aborts:
   * the library's own watchers use this, since building an AbortSignal per lease is the largest
   * single cost of a lease passed inside a process (about 15% of its CPU, measured).
   */
  onLoss(listener: () => void): void {
    if (this.state === 'lost') listener();
    else if (this.state === 'held') {
      this.lossListeners ??= [];
      this.lossListeners.push(listener);
    }
  }

  /**
   * @internal The lock was extended from outside this lease (`extendToken` on its token) to
   * `ttlMs` from `since`: from now on the lease trusts no more than that bought.
   */
  limitValidity(since: Instant, ttlMs: number): void {
    if (this.state !== 'held') return;
    const bought: Validity = { since, budgetMs: ttlMs - driftMs(ttlMs, this.driftFactor) };
    if (bought.budgetMs - elapsedSince(this.clock, since) >= this.validityLeft()) return;
    this.validity = bought;
    this.watchdog.check();
  }

  /** @internal Its token was released from outside (`releaseToken`): the lease is lost now. */
  revoke(reason: LockLostReason): void {
    this.markLost(reason);
  }

  /** The lease TTL in milliseconds (the latest one, after `extend(ttlMs)`). */
  get ttlMs(): number {
    return this.ttl;
  }

  /**
   * Monotonic instant (`clock.now()`, by default `performance.now()` scale) until which the lock is
   * known to be held, as estimated at the time of reading: `clock.now() + remainingMs` while held.
   * It moves earlier when the wall clock shows time the monotonic clock missed (a host suspend).
   */
  get validUntil(): number {
    return this.clock.now() + this.validityLeft();
  }

  /**
   * Milliseconds of validity left (0 once lost or released). Local: no round trip. Reading it when
   * validity has run out marks the lease lost (and aborts `signal`) at once, so `isHeld: false`
   * and a live `signal` are never seen together, even right after a host resumes from a suspend.
   */
  get remainingMs(): number {
    if (this.state !== 'held') return 0;
    const left = this.validityLeft();
    if (left > 0) return left;
    this.watchdog.check();
    return 0;
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
    return boundedCall(this.bound, 'isOwned()', this.backend.isHeldBy(this.token));
  }

  /**
   * Extends the lease to `ttlMs` from now (default: its current TTL). Compare-and-pexpire: a lock
   * that expired is never re-acquired. Throws `LockLostError` (and aborts `signal`) when the lock
   * is no longer held, `NotHeldError` after `release()`, a `LockError` saying what is wrong when
   * Redis refused it. Bounded by `replyTimeoutMs`: with no reply by then, or on an error that may
   * pass (a connection refused or reset, a cluster between primaries), it rejects with
   * `RedisUnavailableError` (cause: the client's error, or its account of its connection), and the
   * caller may retry while validity remains. An extension still in flight then goes on: if Redis
   * applies it, the lease counts it.
   *
   * Validity afterwards is exactly what this extension bought: its send time + `ttlMs` − drift,
   * shorter or longer than before. A shorter one counts from the moment it is sent, and still
   * counts if it fails, because Redis may have applied it without the reply reaching us.
   */
  async extend(ttlMs: number = this.ttl): Promise<void> {
    checkTtlMs('ttlMs', ttlMs, this.driftFactor);
    if (this.state === 'released') throw new NotHeldError(this.name, 'it was released');
    if (this.remainingMs === 0) throw this.lostError as LockLostError;
    const outcome = await boundedCall(this.bound, 'the extension', this.extendOnce(ttlMs), {
      goesOn: 'it goes on in the background, and counts if Redis applies it',
    });
    if (outcome === 'lost') throw this.lostError as LockLostError;
    this.watchdog.rescheduleAfterExtend();
  }

  /**
   * Releases the lock (compare-and-delete). Resolves `true` when this lease still held it, `false`
   * when it had already expired or been lost: that is reported, never thrown, so a `finally`
   * cannot hide the error that brought you there. Calling it again resolves `false` at once.
   *
   * Bounded: it waits at most `replyTimeoutMs` for Redis, then rejects with
   * `RedisUnavailableError` (as on a connection error that may pass); the release goes on in the
   * background, retried when the connection returns, until the lock would have expired anyway. A
   * lease already lost resolves `false`, never rejects: it may still own its token in Redis (an
   * extension applied after validity ran out, the drift margin), so the compare-and-delete is sent
   * (it can only delete our own token) and waited for, at most `replyTimeoutMs`, reported as a
   * `give-back` event.
   */
  async release(): Promise<boolean> {
    if (this.state === 'released') return false;
    const lost = this.remainingMs === 0;
    this.state = 'released';
    this.lossListeners = undefined;
    this.watchdog.stop();
    if (lost) {
      // It may still own its token in Redis (the drift margin): give it back, and resolve only once
      // that is applied, so the next holder never finds this token there after `release()` said so.
      await boundedCall(this.bound, 'the give-back', this.reportedRelease()).catch(() => {});
      return false;
    }
    if (lockEventsObserved()) {
      emitLockEvent({ type: 'released', lockName: this.name, heldMs: this.clock.now() - this.grantedAt });
    }
    const sending = this.sendRelease();
    return boundedCall(this.bound, 'the release', sending, {
      goesOn: 'it goes on in the background until the lock would have expired',
      onLate: () => this.report(sending),
    });
  }

  /** @internal A short form for `console.log`: what a reader wants, none of the internals. */
  [inspectCustom](): string {
    const state = this.state === 'held' ? `remainingMs: ${Math.round(this.remainingMs)}` : this.state;
    return `Lease { name: ${JSON.stringify(this.name)}, token: '${this.token.slice(0, 8)}…', fencingToken: ${this.fencingToken}, ${state} }`;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** Validity left right now, on both clocks; ≤ 0 once it ran out. No side effects. */
  private validityLeft(): number {
    return this.validity.budgetMs - elapsedSince(this.clock, this.validity.since);
  }

  /** @internal The watchdog's view (`WatchdogHooks`, src/lease/watchdog.ts): the TTL now. */
  watchedTtlMs(): number {
    return this.ttl;
  }

  /** @internal The watchdog's view: validity left now. */
  watchedRemainingMs(): number {
    return this.validityLeft();
  }

  /** @internal The watchdog found validity gone. */
  onWatchLost(reason: LockLostReason, cause?: unknown): void {
    this.markLost(reason, cause);
  }

  /** @internal An automatic extension failed (retried in `retryInMs`, or not at all). */
  onExtendFailed(error: unknown, retryInMs: number | undefined): void {
    emitLockEvent({ type: 'extend-failed', lockName: this.name, error, retryInMs });
  }

  /**
   * @internal The watchdog's extension, bounded like any round trip: unanswered after
   * `replyTimeoutMs`, it counts as failed (the watchdog reports it and retries while validity
   * lasts), yet goes on, and counts if Redis applies it. A retry while it is still in flight waits
   * for it rather than stacking a second extension behind it.
   */
  extendAutomatically(): Promise<'extended' | 'lost'> {
    if (!this.autoExtension) {
      const extension = this.extendOnce(this.ttl);
      this.autoExtension = extension;
      const done = () => {
        if (this.autoExtension === extension) this.autoExtension = undefined;
      };
      extension.then(done, done);
    }
    return boundedCall(this.bound, 'the automatic extension', this.autoExtension, {
      goesOn: 'it goes on, and counts if Redis applies it',
    });
  }

  /**
   * One extension, serialised with any other in flight (watchdog or manual) so two never overlap
   * and the last one sent is the last one applied: its validity is the lease's.
   */
  private extendOnce(ttlMs: number): Promise<'extended' | 'lost'> {
    const run = async (): Promise<'extended' | 'lost'> => {
      if (this.state === 'held' && this.validityLeft() <= 0) this.watchdog.check();
      if (this.state !== 'held') return this.state === 'lost' ? 'lost' : 'extended';
      const bought: Validity = {
        since: instantOf(this.clock),
        budgetMs: ttlMs - driftMs(ttlMs, this.driftFactor),
      };
      // Redis may apply this extension before we hear back, or without the reply ever reaching us:
      // when it buys less than what is left, it counts from now.
      if (bought.budgetMs < this.validityLeft()) this.validity = bought;
      let extended: boolean;
      try {
        extended = await this.backend.extend(this.token, ttlMs);
      } catch (error) {
        // Lost meanwhile, and the extension may have applied: do not leave the token behind.
        if (this.lostError !== undefined) this.giveBack();
        else this.extensionMayHaveApplied = true;
        throw error;
      }
      this.extensionMayHaveApplied = false;
      if (this.lostError !== undefined) {
        // Lost while in flight (validity ran out, the host was suspended), yet Redis extended our
        // token: it would stay, owned by nobody, for a whole TTL. Give it back now.
        if (extended) this.giveBack();
        return 'lost';
      }
      // Released while in flight: its compare-and-delete was sent after this, and applies after it.
      if ((this.state as LeaseState) === 'released') return 'extended';
      if (!extended) {
        this.markLost('not-owner');
        return 'lost';
      }
      this.ttl = ttlMs;
      this.validity = bought;
      if (this.validityLeft() <= 0) {
        // The reply came after what it bought had run out (a reply delayed, a suspend).
        this.markLost('expired');
        this.giveBack();
        return 'lost';
      }
      return 'extended';
    };
    const next = (this.extending ?? Promise.resolve()).then(run, run);
    this.extending = next.catch(() => {});
    return next;
  }

  /**
   * The compare-and-delete of this lease's token, sent again after a failure that may pass (a reset
   * connection rejected it) while the token may still be in Redis: until a TTL from now, since the
   * grant or the last extension, whichever came last, was sent before now and asked for at most that.
   * Re-sending is safe: a release applied already answers as one (see `release()`).
   */
  private sendRelease(): Promise<boolean> {
    const goneBy = this.clock.now() + this.ttl;
    return sendGiveBack(
      () => this.backend.release(this.token),
      this.clock,
      GIVE_BACK_RETRY,
      (nextTryAt) => nextTryAt <= goneBy,
    );
  }

  /**
   * Best-effort, in the background: gives back a token this lease may still own in Redis though
   * the lease is lost (an extension applied late). It can only delete our own token.
   */
  private giveBack(): void {
    void this.reportedRelease();
  }

  /** The give-back of `giveBack`, reported as it ends; resolves then. */
  private reportedRelease(): Promise<void> {
    return reportGiveBack(this.name, this.token, this.sendRelease());
  }

  /** Reports how a give-back ended, as a `give-back` event. */
  private report(giveBack: Promise<boolean>): void {
    void reportGiveBack(this.name, this.token, giveBack);
  }

  private markLost(reason: LockLostReason, cause?: unknown): void {
    if (this.state !== 'held') return;
    this.state = 'lost';
    this.watchdog.stop();
    this.lostError = new LockLostError(this.name, reason, cause === undefined ? undefined : { cause });
    // An extension that failed may have renewed the key (one whose replicas did not acknowledge it
    // did): the token would keep the lock, owned by nobody, for up to a TTL.
    if (this.extensionMayHaveApplied) this.giveBack();
    emitLockEvent({ type: 'lock-lost', lockName: this.name, reason, error: cause });
    this.controller?.abort(this.lostError);
    const listeners = this.lossListeners;
    this.lossListeners = undefined;
    if (listeners) for (const listener of listeners) listener();
  }
}
