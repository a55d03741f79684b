import type { RedisClient } from '../adapters/client-types.js';
import { PermitsOverLimitError } from '../errors.js';
import type { AcquireOptions, EffectiveOptions, FairLockOptions } from '../options.js';
import type { FairAcquireResult } from '../protocol/fair-mutex.js';
import { semaphoreKeys } from '../protocol/keys.js';
import type { LockState } from '../protocol/lock-state.js';
import {
  decodeRefusal,
  type SemaphoreScriptKeys,
  type SemaphoreState,
  semaphoreAcquire,
  semaphoreExtend,
  semaphoreInspect,
  semaphoreRelease,
} from '../protocol/semaphore.js';
import { Waiter } from './fair-waiter.js';
import type { AttemptCall, AttemptHooks } from './lock-shell.js';
import { queuedAttempt } from './queued-attempt.js';
import { ScriptedLock } from './scripted-lock.js';

/**
 * A lock whose holders take permits out of a limit, granted in arrival order: the Semaphore's
 * scripts and waiting (semaphore-*.lua, `queuedAttempt` + `Waiter`). The Semaphore is this with the
 * caller's `limit` and `permits`; a read-write lock's sides are this with a fixed limit, a reader
 * taking one permit and a writer all of them.
 */
export abstract class PermitLock<
  Options extends FairLockOptions,
  State extends LockState,
  Call extends AcquireOptions = AcquireOptions,
> extends ScriptedLock<Options, State, Call> {
  /** @internal The keys its scripts name (the lock key holds the holders). */
  readonly semaphoreKeys: SemaphoreScriptKeys;

  constructor(
    client: RedisClient,
    name: string,
    options: unknown,
    resolveOptions: (options: unknown) => Readonly<Options>,
  ) {
    super(client, name, options, resolveOptions);
    this.semaphoreKeys = Object.freeze({ ...this.keys, ...semaphoreKeys(this.keys) });
  }

  /** @internal How many permits exist (the limit in force when none is stored with `setLimit`). */
  protected abstract limitOf(options: Readonly<Options>): number;
  /** @internal How many permits one call takes. */
  protected abstract permitsOf(options: EffectiveOptions<Options>): number;

  /** @internal */
  protected planAttempts(call: AttemptCall<Options>): AttemptHooks {
    const { token, options, mode, deadline } = call;
    const waiter = new Waiter(token, options.clock);
    const hub = this.hub();
    // Queued without a channel when it will not hear it (see HandOffLock.planAttempts).
    const queueOptions = {
      clock: options.clock,
      waiterTtlMs: options.waiterTtlMs,
      hub,
      channel: this.grantedChannel,
      listening: options.wakeOnRelease,
    };
    // The limit a refusal message brought (setLimit lowered it below this call's request).
    let refusedAt: number | undefined;
    const hear = (message: string) => {
      if (waiter.hear(message)) return true;
      refusedAt ??= decodeRefusal(message, token);
      return refusedAt !== undefined;
    };
    return {
      attempt: () => {
        if (refusedAt !== undefined) {
          throw new PermitsOverLimitError(this.name, this.permitsOf(options), refusedAt);
        }
        return queuedAttempt(waiter, queueOptions, mode === 'wait' ? deadline : undefined, (place) =>
          this.send(token, options, place),
        );
      },
      wake: [{ hub, channel: this.grantedChannel, accept: hear }],
      // The message is the grant itself: hearing it is not another attempt.
      wakeUpIsRetry: false,
      mayHaveLeftState: () => true,
    };
  }

  /** @internal Gives the permits back (handing them to the next waiters), or leaves the queue. */
  protected sendRelease(token: string): Promise<boolean> {
    return this.run(semaphoreRelease(this.semaphoreKeys, { token, limit: this.limitOf(this.options) }));
  }

  /** @internal */
  protected sendExtend(token: string, ttlMs: number): Promise<boolean> {
    return this.run(semaphoreExtend(this.keys, { token, ttlMs }));
  }

  /** @internal The holders and queue as the Semaphore's scripts read them. */
  protected readHolders(): Promise<SemaphoreState> {
    return this.run(semaphoreInspect(this.semaphoreKeys, { limit: this.limitOf(this.options) }));
  }

  /** @internal A token holds permits when it is among the holders (not only the first). */
  protected override async holds(token: string): Promise<boolean> {
    return (await this.readHolders()).holders.some((holder) => holder.token === token);
  }

  /** One enqueue-or-acquire script call; a request above a lowered limit fails for good. */
  private async send(
    token: string,
    options: EffectiveOptions<Options>,
    place: { grantChannel: string; entryTtlMs: number },
  ): Promise<FairAcquireResult> {
    const permits = this.permitsOf(options);
    const result = await this.run(
      semaphoreAcquire(this.semaphoreKeys, {
        token,
        ttlMs: options.ttlMs,
        permits,
        limit: this.limitOf(options),
        ...place,
      }),
    );
    if ('overLimit' in result) throw new PermitsOverLimitError(this.name, permits, result.overLimit);
    return result;
  }
}
