import type { RedisClient } from '../adapters/client-types.js';
import { type EffectiveOptions, type FairLockOptions, resolveFairLockOptions } from '../options.js';
import {
  type FairLockState,
  fairAcquire,
  fairExtend,
  fairInspect,
  fairRelease,
} from '../protocol/fair-mutex.js';
import type { AttemptOutcome } from './acquisition.js';
import { Waiter } from './fair-waiter.js';
import type { AttemptCall, AttemptHooks } from './lock-shell.js';
import { ScriptedLock } from './scripted-lock.js';

/**
 * A mutual-exclusion lock that serves waiters strictly in arrival order, on one Redis deployment.
 *
 * A waiter that finds the lock taken joins a FIFO queue in the same round trip. Releasing hands the
 * lock directly to the oldest live waiter: the release script sets the lock to that waiter's token
 * with that waiter's TTL, increments the fencing counter, and publishes to the waiter, which then
 * holds the lock without another round trip (an acquisition under contention costs two: enqueue and
 * release). Leases are the Mutex's: fencing tokens, auto-extension, a lost-lock `AbortSignal`.
 *
 * Waiters that die or give up: a waiter that times out or is aborted leaves the queue, and if the
 * lock was handed to it meanwhile it hands it on; it never ends up holding the lock. A waiter that
 * crashed keeps its place until its entry's deadline (its acquire deadline, or `waiterTtlMs` after
 * its last renewal, whichever comes first); entries past their deadline are skipped for free. If the
 * lock reaches a crashed waiter before that, it is handed to it and frees itself after that waiter's
 * `ttlMs`, exactly as when a holder crashes. So one crashed waiter delays the queue by at most its
 * `ttlMs` (plus up to `retryJitterMs`), and not at all once its entry's deadline has passed.
 *
 * `tryAcquire()` never queues: it takes the lock only when it is free and nobody is waiting.
 * `releaseToken()` of a queued token takes it out of the queue.
 *
 * Do not mix a FairMutex and a Mutex on the same name: a Mutex takes a free lock without looking
 * at the queue.
 */
export class FairMutex extends ScriptedLock<FairLockOptions, FairLockState> {
  /** Where this client's waiters hear their hand-offs (one channel per client and lock). */
  private readonly grantedChannel: string;

  constructor(client: RedisClient, name: string, options?: Partial<FairLockOptions>) {
    super(client, name, options, resolveFairLockOptions);
    this.grantedChannel = this.clientChannel(this.keys.grantedChannelPrefix);
  }

  /** @internal */
  protected planAttempts({ token, options, mode, deadline }: AttemptCall<FairLockOptions>): AttemptHooks {
    const waiter = new Waiter(token, options.clock);
    return {
      attempt: () => this.attempt(waiter, options, mode === 'wait' ? deadline : undefined),
      wake: { hub: this.hub(), channel: this.grantedChannel, accept: (message) => waiter.hear(message) },
      // The message is the grant itself: hearing it is not another attempt.
      wakeUpIsRetry: false,
      mayHaveLeftState: () => true,
    };
  }

  /** @internal Releases (handing the lock to the next live waiter), or leaves the queue. */
  protected sendRelease(token: string): Promise<boolean> {
    return this.run(fairRelease(this.keys, { token }));
  }

  /** @internal Compare-and-extend (the holder's value records its expiry for the waiters). */
  protected override sendExtend(token: string, ttlMs: number): Promise<boolean> {
    return this.run(fairExtend(this.keys, { token, ttlMs }));
  }

  /** @internal */
  protected readState(): Promise<FairLockState> {
    return this.run(fairInspect(this.keys));
  }

  /**
   * Enqueue (first call), or renew the place and check for a hand-off whose message was missed
   * (later calls). Once the hand-off message has been heard, no round trip at all. Without a
   * `deadline` (a single try) it never queues.
   */
  private async attempt(
    waiter: Waiter,
    options: EffectiveOptions<FairLockOptions>,
    deadline: number | undefined,
  ): Promise<AttemptOutcome> {
    const handOff = waiter.handOff();
    // A grant with no validity left (a hand-off heard too late, a reply after a pause) is handed on
    // by the waiting loop, which alone knows whether this attempt is the call's current one.
    if (handOff) return { acquired: true, ...handOff };
    const { clock } = options;
    const sentAt = clock.now();
    const sentAtWall = clock.wallNow?.();
    const remainingMs = deadline === undefined ? 0 : deadline - sentAt;
    const entryTtlMs =
      deadline === undefined ? 0 : Math.max(1, Math.ceil(Math.min(remainingMs, options.waiterTtlMs)));
    const result = await this.run(
      fairAcquire(this.keys, {
        token: waiter.token,
        ttlMs: options.ttlMs,
        entryTtlMs,
        grantChannel: this.grantedChannel,
        maybeQueued: waiter.noteAttempt(),
      }),
    );
    // Acquired in this reply: the script set the TTL (or restarted it, after a hand-off whose message
    // we missed) while serving this request, so counting from its send time errs on the safe side.
    if (result.acquired) {
      waiter.noteGrant(result.fencingToken);
      return { acquired: true, fencingToken: result.fencingToken, sentAt, sentAtWall };
    }
    waiter.anchor(sentAt, result.serverTimeMs);
    // Wake to renew the place before it expires (only when it is shorter than our own deadline), and
    // when the holder's TTL runs out: a crashed holder releases nothing, so a waiter's next attempt
    // is what hands the lock on.
    const renewInMs =
      entryTtlMs > 0 && entryTtlMs < remainingMs
        ? Math.max(1, Math.floor(entryTtlMs / 3))
        : Number.POSITIVE_INFINITY;
    // PTTL 0 is a lock in its last millisecond (Redis rounds down): try again at once, since a holder
    // that crashed will never hand it on. Only a lock without expiry (-1) leaves us to the message.
    const bound = result.waitBoundMs;
    const holderPttlMs = bound >= 0 ? Math.max(1, bound) : Number.POSITIVE_INFINITY;
    return { acquired: false, holderPttlMs, renewInMs };
  }
}
