import type { RedisClient } from '../adapters/client-types.js';
import { PermitsOverLimitError } from '../errors.js';
import {
  type CallOptionTable,
  type EffectiveOptions,
  resolveSemaphoreOptions,
  type SemaphoreAcquireOptions,
  type SemaphoreOptions,
  semaphoreCallOptions,
} from '../options.js';
import type { FairAcquireResult } from '../protocol/fair-mutex.js';
import { semaphoreKeys } from '../protocol/keys.js';
import {
  type SemaphoreScriptKeys,
  type SemaphoreState,
  semaphoreAcquire,
  semaphoreExtend,
  semaphoreInspect,
  semaphoreRelease,
  semaphoreSetLimit,
} from '../protocol/semaphore.js';
import { checkCount, checkPermits } from '../validation.js';
import { Waiter } from './fair-waiter.js';
import type { AttemptCall, AttemptHooks } from './lock-shell.js';
import { queuedAttempt } from './queued-attempt.js';
import { ScriptedLock } from './scripted-lock.js';

/**
 * A counting semaphore on one Redis deployment: at most `limit` permits are held at once, across
 * every process, and they are granted strictly in arrival order.
 *
 * ```ts
 * const uploads = new Semaphore(redis, 'uploads', { limit: 3, ttlMs: 10_000 });
 * await using lease = await uploads.acquire();
 * await upload(file, { signal: lease.signal });
 * ```
 *
 * Each acquisition takes `permits` (default 1) all or none, and resolves with a `Lease` like the
 * Mutex's: its own fencing token, validity, a lost-permits `AbortSignal`, `extend`, `release`,
 * auto-extension. Holders expire by the server's clock (`TIME`), never a client's, so no client's
 * clock can let more than `limit` holders in.
 *
 * Fair: a waiter that finds too few permits free joins a FIFO queue in the same round trip, and a
 * release hands the permits straight to the waiters at the head (one message each, no polling). A
 * request at the head that does not fit yet is not overtaken by smaller ones behind it. Waiters that
 * give up leave the queue; one that crashed keeps its place until its entry's deadline (its acquire
 * deadline, or `waiterTtlMs` after its last renewal, whichever comes first), and if permits reach it
 * before that they come back after its `ttlMs`, as with a crashed holder.
 *
 * `setLimit()` changes the limit for every Semaphore on the name; holders above a lowered limit keep
 * their permits until they release. `tryAcquire()` never queues: it takes permits only when enough
 * are free and nobody is waiting.
 */
export class Semaphore extends ScriptedLock<SemaphoreOptions, SemaphoreState, SemaphoreAcquireOptions> {
  /** @internal The keys its scripts name (the lock key holds the holders). */
  readonly semaphoreKeys: SemaphoreScriptKeys;
  /** Where this client's waiters hear their hand-offs (one channel per client and lock). */
  private readonly grantedChannel: string;

  constructor(
    client: RedisClient,
    name: string,
    options: Partial<SemaphoreOptions> & Pick<SemaphoreOptions, 'limit'>,
  ) {
    super(client, name, options, resolveSemaphoreOptions);
    this.semaphoreKeys = Object.freeze({ ...this.keys, ...semaphoreKeys(this.keys) });
    this.grantedChannel = this.clientChannel(this.keys.grantedChannelPrefix);
  }

  /**
   * Stores `limit` for this name, in force for every Semaphore on it (whatever their `limit`
   * option) from now on, and hands the permits a raised limit frees to the waiters at the head of
   * the queue. Holders above a lowered limit keep their permits until they release. Resolves with
   * the permits held now.
   */
  async setLimit(limit: number): Promise<number> {
    const checked = checkCount('limit', limit, { min: 1 });
    return this.run(semaphoreSetLimit(this.semaphoreKeys, { limit: checked }));
  }

  /** @internal */
  protected override callOptions(): CallOptionTable {
    return semaphoreCallOptions;
  }

  /** @internal */
  protected planAttempts({ token, options, mode, deadline }: AttemptCall<SemaphoreOptions>): AttemptHooks {
    checkPermits('permits', options.permits, options.limit);
    const waiter = new Waiter(token, options.clock);
    return {
      attempt: () =>
        queuedAttempt(waiter, options, mode === 'wait' ? deadline : undefined, (entryTtlMs) =>
          this.send(token, options, entryTtlMs),
        ),
      wake: [{ hub: this.hub(), channel: this.grantedChannel, accept: (message) => waiter.hear(message) }],
      // The message is the grant itself: hearing it is not another attempt.
      wakeUpIsRetry: false,
      mayHaveLeftState: () => true,
    };
  }

  /** @internal Gives the permits back (handing them to the next waiters), or leaves the queue. */
  protected sendRelease(token: string): Promise<boolean> {
    return this.run(semaphoreRelease(this.semaphoreKeys, { token, limit: this.options.limit }));
  }

  /** @internal */
  protected override sendExtend(token: string, ttlMs: number): Promise<boolean> {
    return this.run(semaphoreExtend(this.keys, { token, ttlMs }));
  }

  /** @internal */
  protected readState(): Promise<SemaphoreState> {
    return this.run(semaphoreInspect(this.semaphoreKeys, { limit: this.options.limit }));
  }

  /** @internal A token holds permits when it is among the holders (not only the first). */
  protected override async holds(token: string): Promise<boolean> {
    return (await this.readState()).holders.some((holder) => holder.token === token);
  }

  /** One enqueue-or-acquire script call; a request above a lowered limit fails for good. */
  private async send(
    token: string,
    options: EffectiveOptions<SemaphoreOptions>,
    entryTtlMs: number,
  ): Promise<FairAcquireResult> {
    const result = await this.run(
      semaphoreAcquire(this.semaphoreKeys, {
        token,
        ttlMs: options.ttlMs,
        permits: options.permits,
        limit: options.limit,
        entryTtlMs,
        grantChannel: this.grantedChannel,
      }),
    );
    if ('overLimit' in result) throw new PermitsOverLimitError(this.name, options.permits, result.overLimit);
    return result;
  }
}
