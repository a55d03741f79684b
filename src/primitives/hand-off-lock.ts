import type { RedisClient } from '../adapters/client-types.js';
import type { AcquireOptions, LockOptions } from '../options.js';
import type { Plan } from '../plan.js';
import type { ScriptCall } from '../protocol/call.js';
import {
  type HandOffAcquireParams,
  type HandOffAcquireResult,
  handOffAcquire,
  handOffExtend,
  handOffRelease,
  handOffReserveFences,
} from '../protocol/hand-off.js';
import type { LockState } from '../protocol/lock-state.js';
import { newToken } from '../token.js';
import type { Attempts } from '../waiting/attempts.js';
import { queuedAttempts } from './queued-attempt.js';
import { ScriptedLock } from './scripted-lock.js';

/** How a hand-off lock treats a free lock and a waiter that cannot be reached. */
export interface HandOffPolicy {
  /** Take a free lock whoever is queued (Mutex), or serve the queue first (FairMutex). */
  readonly barging: boolean;
  /** Skip a waiter whose hand-off message reached no subscriber (its process is gone). */
  readonly skipUnreached: boolean;
  /**
   * Its names may be a MultiMutex's too (the Mutex's): a release reads the MultiMutex's waiters and
   * reservation of the name. Without (FairMutex), a hand-off pays for neither.
   */
  readonly multiNames: boolean;
}

/**
 * How long a waiter's queue entry lives before its waiter renews it (it wakes to do so), for the
 * kinds without a `waiterTtlMs` option (Mutex, ReentrantMutex).
 */
export const BARGING_WAITER_TTL_MS = 60_000;

/**
 * How long after a quiet release (one that freed the lock and left the oldest waiter asleep, since
 * it was not yet due) its lock object wakes that waiter, unless it asked for the lock again first:
 * a caller that releases and acquires again at once keeps the lock without any wake-up, and a free
 * lock never idles longer than this while a live waiter is queued (or, if this process is gone, than
 * that waiter's own due time).
 */
export const WAKE_AFTER_QUIET_RELEASE_MS = 1;

/**
 * A mutual-exclusion lock whose release hands the lock straight to the oldest live waiter, which
 * hears it on its client's channel and holds the lock without another round trip (two round trips
 * per contended acquisition: queue, release). Mutex and FairMutex are this, with two policies (see
 * `HandOffPolicy`), and the Mutex's hand-off-after window (`handOffAfterMs()`: until the oldest
 * waiter has waited that long, a release frees the lock quietly, and the waiter wakes when it is
 * due, or when this lock object wakes it a moment later without having asked again); the scripts are
 * hand-off-acquire/-release/-extend.lua, the lock value the holder (holder.lua).
 */
export abstract class HandOffLock<
  Options extends LockOptions,
  State extends LockState,
  Call extends AcquireOptions = AcquireOptions,
> extends ScriptedLock<Options, State, Call> {
  constructor(
    client: RedisClient,
    name: string,
    options: unknown,
    resolveOptions: (options: unknown) => Readonly<Options>,
    private readonly policy: HandOffPolicy,
  ) {
    super(client, name, options, resolveOptions);
  }

  /**
   * @internal How long a waiter's queue entry lives without being renewed. Internal like its
   * implementations: left in the declarations alone, it made every kind fail a strict consumer's
   * type-check (TS2515, "does not implement inherited abstract member").
   */
  protected abstract waiterTtlMs(options: Readonly<Options>): number;

  /**
   * @internal How long the oldest waiter lets a release free the lock (and wake it) rather than hand
   * it over, in ms; 0 (the default): every release hands over.
   */
  protected handOffAfterMs(): number {
    return 0;
  }

  /** @internal The enqueue-or-acquire script call of one attempt (a reentrant kind re-enters in it too). */
  protected acquireCall(params: HandOffAcquireParams): ScriptCall<HandOffAcquireResult> {
    return handOffAcquire(this.keys, params);
  }

  /** The wake a quiet release left for later (see `WAKE_AFTER_QUIET_RELEASE_MS`). */
  private wakeTimer: NodeJS.Timeout | undefined;
  /** Wakes (hands the lock to) the oldest waiter, as a release by a token nobody holds or queues. */
  private readonly wakeToken = `wake:${newToken()}`;

  /** @internal */
  protected planAttempts(plan: Plan<Options>): Attempts {
    const { token, options } = plan;
    const { barging } = this.policy;
    // This process asks for the lock again: a waiter left asleep by its release stays asleep (the
    // lock is taken back, or, if another caller took it, that caller's release decides).
    clearTimeout(this.wakeTimer);
    const window = this.handOffAfterMs();
    return queuedAttempts(plan, {
      waiterTtlMs: this.waiterTtlMs(options),
      // A release within the window leaves a waiter asleep, so one that waits for messages wakes by
      // itself once it is due (one with a retry delay asks at its own pace, and counts its attempts).
      dueAfterMs: window > 0 && !Number.isFinite(options.retryDelayMs) ? window : undefined,
      // A barging waiter that does not listen does not queue at all: it polls at its own pace, and
      // a free lock is anyone's. A fair waiter queues regardless (else it would never be served).
      queues: plan.mode === 'wait' && (options.wakeOnRelease || !barging),
      channel: (accept) => this.wakeChannel(accept),
      send: (entry, maybeQueued, arrivalMs) =>
        this.run(
          this.acquireCall({
            token,
            ttlMs: options.ttlMs,
            ...entry,
            maybeQueued,
            barging,
            label: options.label,
            arrivalMs,
          }),
        ),
    });
  }

  /**
   * @internal Releases (handing the lock to the next live waiter, or freeing it and waking that
   * waiter while it is younger than `window`, `handOffAfterMs()` unless given), or leaves the queue.
   */
  protected sendRelease(token: string, window = this.handOffAfterMs()): Promise<boolean> {
    const released = this.run(
      handOffRelease(this.keys, {
        token,
        skipUnreached: this.policy.skipUnreached,
        handOffAfterMs: window,
        quiet: window > 0,
        multiNames: this.policy.multiNames,
      }),
    );
    return released.then((outcome) => {
      if (outcome === 'waiter-asleep') this.wakeLater();
      return outcome !== 'not-held';
    });
  }

  /**
   * After a quiet release: wakes the oldest waiter in a moment, unless this lock object asks for the
   * lock again first (planAttempts). The wake is a release by `wakeToken` with no window: it finds
   * the lock free and hands it to the oldest live waiter (taken meanwhile: nothing happens, its
   * holder's release decides). Best-effort: a wake that fails leaves the waiter to its due time.
   */
  private wakeLater(): void {
    clearTimeout(this.wakeTimer);
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = undefined;
      const wake = handOffRelease(this.keys, {
        token: this.wakeToken,
        skipUnreached: this.policy.skipUnreached,
        handOffAfterMs: 0,
        multiNames: this.policy.multiNames,
      });
      this.run(wake).catch(() => {});
    }, WAKE_AFTER_QUIET_RELEASE_MS);
    this.wakeTimer.unref();
  }

  /** @internal Compare-and-extend (the holder's value records its expiry for the waiters). */
  protected sendExtend(token: string, ttlMs: number): Promise<boolean> {
    return this.run(handOffExtend(this.keys, { token, ttlMs }));
  }

  /** @internal Compare-and-extend that reserves `count` fencing tokens for the holder's process. */
  protected reserveFences(token: string, ttlMs: number, count: number): Promise<number> {
    return this.run(handOffReserveFences(this.keys, { token, ttlMs, count }));
  }
}
