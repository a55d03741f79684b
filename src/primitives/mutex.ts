import type { RedisClient } from '../adapters/client-types.js';
import { type LockOptions, resolveLockOptions } from '../options.js';
import type { LockState } from '../protocol/lock-state.js';
import { mutexAcquire, mutexInspect, mutexRelease } from '../protocol/mutex.js';
import type { AttemptOutcome } from './acquisition.js';
import type { AttemptCall, AttemptHooks } from './lock-shell.js';
import { ScriptedLock } from './scripted-lock.js';

/**
 * A mutual-exclusion lock with a lease, on one Redis deployment.
 *
 * ```ts
 * const mutex = new Mutex(redis, 'orders:42', { ttlMs: 10_000 });
 * await using lease = await mutex.acquire();
 * await saveOrder(order, { fencingToken: lease.fencingToken, signal: lease.signal });
 * ```
 *
 * A waiter that finds the lock taken registers as a sleeper; a release wakes one sleeper, which
 * then tries like anyone else (not fair: use `FairMutex` for arrival order).
 */
export class Mutex extends ScriptedLock<LockOptions, LockState> {
  /** Where a release wakes this client's waiters (one channel per client and lock). */
  private readonly wakeChannel: string;

  constructor(client: RedisClient, name: string, options?: Partial<LockOptions>) {
    super(client, name, options, resolveLockOptions);
    this.wakeChannel = this.clientChannel(`${this.keys.releasedChannel}:`);
  }

  /** @internal */
  protected planAttempts({ token, options, mode, deadline }: AttemptCall): AttemptHooks {
    const sleeper: Sleeper = { token, registered: false, wakeable: mode === 'wait' && options.wakeOnRelease };
    return {
      attempt: () => this.attempt(sleeper, options, deadline),
      wake: { hub: this.hub(), channel: this.wakeChannel, accept: (message) => message === token },
      wakeUpIsRetry: true,
      // A waiter that gives up leaves the sleepers (and passes on a wake-up that may have been meant
      // for it), so no release wastes its one wake-up on a waiter that is gone.
      mayHaveLeftState: () => sleeper.registered,
    };
  }

  /** @internal */
  protected sendRelease(token: string): Promise<boolean> {
    return this.run(mutexRelease(this.keys, { token, wakeChannel: this.wakeChannel }));
  }

  /** @internal */
  protected readState(): Promise<LockState> {
    return this.run(mutexInspect(this.keys));
  }

  /**
   * One attempt. When the lock is taken and the caller can be woken, the script registers it as a
   * sleeper whose entry lives until `deadline` (capped, and renewed by the next attempt): a
   * release then wakes one sleeper instead of every waiter.
   */
  private async attempt(
    sleeper: Sleeper,
    options: Readonly<LockOptions>,
    deadline: number,
  ): Promise<AttemptOutcome> {
    const { clock, ttlMs } = options;
    const sentAt = clock.now();
    const sentAtWall = clock.wallNow?.();
    const lifetimeMs = sleeper.wakeable
      ? Math.max(1, Math.ceil(Math.min(deadline - sentAt, MAX_SLEEPER_MS)))
      : 0;
    // The script may register us even if its reply is lost: count on it from the moment we ask, so
    // a stale entry is removed on success and on giving up (it would swallow a release's wake-up).
    const mayBeRegistered = sleeper.registered || lifetimeMs > 0;
    sleeper.registered = mayBeRegistered;
    const result = await this.run(
      mutexAcquire(this.keys, {
        token: sleeper.token,
        ttlMs,
        sleeperLifetimeMs: lifetimeMs,
        wakeChannel: this.wakeChannel,
        mayBeRegistered,
      }),
    );
    if (!result.acquired) {
      // Wake before the entry expires, to renew it (a renewal, not a retry).
      const renewInMs =
        lifetimeMs > 0 && lifetimeMs < deadline - sentAt ? lifetimeMs : Number.POSITIVE_INFINITY;
      return { acquired: false, holderPttlMs: result.waitBoundMs, renewInMs };
    }
    // A grant whose reply came after its validity ran out is given back by the waiting loop, which
    // alone knows whether this attempt is still the call's current one (see usableOrGivenBack).
    return { acquired: true, fencingToken: result.fencingToken, sentAt, sentAtWall };
  }
}

/** How long a sleeper entry lives at most before its waiter renews it (a waiter wakes to do so). */
const MAX_SLEEPER_MS = 60_000;

/** One acquire call, as the sleepers set knows it. */
interface Sleeper {
  readonly token: string;
  /** An attempt may have added this call to the sleepers (so success or giving up must remove it). */
  registered: boolean;
  /** Whether a release can wake this call (it waits, and listens on its wake channel). */
  readonly wakeable: boolean;
}
