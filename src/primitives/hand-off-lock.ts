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
import type { Attempts } from '../waiting/attempts.js';
import { queuedAttempts } from './queued-attempt.js';
import { ScriptedLock } from './scripted-lock.js';

/** How a hand-off lock treats a free lock and a waiter that cannot be reached. */
export interface HandOffPolicy {
  /** Take a free lock whoever is queued (Mutex), or serve the queue first (FairMutex). */
  readonly barging: boolean;
  /** Skip a waiter whose hand-off message reached no subscriber (its process is gone). */
  readonly skipUnreached: boolean;
}

/**
 * How long a waiter's queue entry lives before its waiter renews it (it wakes to do so), for the
 * kinds without a `waiterTtlMs` option (Mutex, ReentrantMutex).
 */
export const BARGING_WAITER_TTL_MS = 60_000;

/**
 * A mutual-exclusion lock whose release hands the lock straight to the oldest live waiter, which
 * hears it on its client's channel and holds the lock without another round trip (two round trips
 * per contended acquisition: queue, release). Mutex and FairMutex are this, with two policies (see
 * `HandOffPolicy`), and the Mutex's hand-off-after window (`handOffAfterMs()`: until the oldest
 * waiter has waited that long, a release frees the lock and wakes it instead); the scripts are
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

  /** @internal */
  protected planAttempts(plan: Plan<Options>): Attempts {
    const { token, options } = plan;
    const { barging } = this.policy;
    return queuedAttempts(plan, {
      waiterTtlMs: this.waiterTtlMs(options),
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
   * waiter while it is younger than `handOffAfterMs()`), or leaves the queue.
   */
  protected sendRelease(token: string): Promise<boolean> {
    return this.run(
      handOffRelease(this.keys, {
        token,
        skipUnreached: this.policy.skipUnreached,
        handOffAfterMs: this.handOffAfterMs(),
      }),
    );
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
