import type { RedisClient } from '../adapters/client-types.js';
import { PermitsOverLimitError } from '../errors.js';
import type { AcquireOptions, EffectiveOptions } from '../options.js';
import type { Plan } from '../plan.js';
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
  semaphoreReserveFences,
} from '../protocol/semaphore.js';
import type { Attempts } from '../waiting/attempts.js';
import type { FairLockOptions } from './fair-mutex.js';
import { queuedAttempts } from './queued-attempt.js';
import { ScriptedLock } from './scripted-lock.js';

/**
 * A lock whose holders take permits out of a limit, granted in arrival order: the Semaphore's
 * scripts and waiting (semaphore-*.lua, `queuedAttempts`). The Semaphore is this with the
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
  protected planAttempts(plan: Plan<Options>): Attempts {
    const { token, options } = plan;
    const permits = this.permitsOf(options);
    const limit = this.limitOf(options);
    // The limit a refusal message brought (setLimit lowered it below this call's request).
    let refusedAt: number | undefined;
    return queuedAttempts(plan, {
      waiterTtlMs: options.waiterTtlMs,
      queues: plan.mode === 'wait',
      channel: (accept) => this.wakeChannel(accept),
      hearOther: (message) => {
        refusedAt ??= decodeRefusal(message, token);
        return refusedAt !== undefined;
      },
      send: async (entry) => {
        if (refusedAt !== undefined) throw new PermitsOverLimitError(this.name, permits, refusedAt);
        const call = semaphoreAcquire(this.semaphoreKeys, {
          token,
          ttlMs: options.ttlMs,
          permits,
          limit,
          label: options.label,
          ...entry,
        });
        const result = await this.run(call);
        if ('overLimit' in result) throw new PermitsOverLimitError(this.name, permits, result.overLimit);
        return result;
      },
    });
  }

  /** @internal Gives the permits back (handing them to the next waiters), or leaves the queue. */
  protected sendRelease(token: string): Promise<boolean> {
    return this.run(semaphoreRelease(this.semaphoreKeys, { token, limit: this.limitOf(this.options) }));
  }

  /** @internal */
  protected sendExtend(token: string, ttlMs: number): Promise<boolean> {
    return this.run(semaphoreExtend(this.keys, { token, ttlMs }));
  }

  /**
   * @internal Compare-and-extend that reserves `count` fencing tokens for the holder's process (a
   * local batch passing this permit among its callers).
   */
  protected reserveFences(token: string, ttlMs: number, count: number): Promise<number> {
    return this.run(semaphoreReserveFences(this.keys, { token, ttlMs, count }));
  }

  /** @internal The holders and queue as the Semaphore's scripts read them. */
  protected readHolders(): Promise<SemaphoreState> {
    return this.run(semaphoreInspect(this.semaphoreKeys, { limit: this.limitOf(this.options) }));
  }

  /** @internal A token holds permits when it is among the holders (not only the first). */
  protected override async holds(token: string): Promise<boolean> {
    return (await this.readHolders()).holders.some((holder) => holder.token === token);
  }
}
