import type { RedisClient } from '../adapters/client-types.js';
import { LockLostError } from '../errors.js';
import { holdInContext, LockOwner, runAsOwner } from '../lock-owner.js';
import {
  type AcquireOptions,
  type CallOptionTable,
  type Checks,
  callOptionsWith,
  defaultLockOptions,
  type EffectiveOptions,
  type LockOptions,
  lockChecks,
  resolveOptions,
  type TryAcquireOptions,
} from '../options.js';
import type { ScriptCall } from '../protocol/call.js';
import type { HandOffAcquireParams, HandOffAcquireResult } from '../protocol/hand-off.js';
import { reentrantKeys } from '../protocol/keys.js';
import {
  type ReentrantLockState,
  type ReentrantScriptKeys,
  reentrantAcquire,
  reentrantExtend,
  reentrantInspect,
  reentrantRelease,
} from '../protocol/reentrant-mutex.js';
import { checkFunction, describeValue } from '../validation.js';
import { BARGING_WAITER_TTL_MS, HandOffLock } from './hand-off-lock.js';
import type { LockedWork } from './lock-shell.js';

/**
 * How a ReentrantMutex behaves: the Mutex's options, plus who holds it (a per-call option too).
 */
export interface ReentrantLockOptions extends LockOptions {
  /**
   * The holder every acquisition of this lock (or this call) is made as: acquiring again as the same
   * owner adds a hold instead of waiting. Unset, a call inside a `using()` callback of the same lock
   * is made as that call's owner (found through the async context), and any other call as a new owner.
   * @default undefined
   */
  owner: LockOwner | undefined;
}

export const defaultReentrantLockOptions: Readonly<ReentrantLockOptions> = Object.freeze({
  ...defaultLockOptions,
  owner: undefined,
});

/** Per-call overrides for a ReentrantMutex's `acquire()` / `using()`: the lock's, and `owner`. */
export interface ReentrantAcquireOptions
  extends AcquireOptions,
    Partial<Pick<ReentrantLockOptions, 'owner'>> {}

/** Per-call overrides for a ReentrantMutex's `tryAcquire()`. */
export type ReentrantTryAcquireOptions = TryAcquireOptions & Partial<Pick<ReentrantLockOptions, 'owner'>>;

const reentrantLockChecks: Checks<ReentrantLockOptions> = {
  ...lockChecks,
  owner: (n, v) => {
    if (!(v instanceof LockOwner)) {
      throw new TypeError(`Expected \`${n}\` to be a LockOwner (new LockOwner()), got ${describeValue(v)}`);
    }
    return v;
  },
};

/** Checks a ReentrantMutex's options and merges them over the defaults into a new frozen object. */
export function resolveReentrantLockOptions(options: unknown): Readonly<ReentrantLockOptions> {
  return resolveOptions(options, defaultReentrantLockOptions, reentrantLockChecks);
}

/** A ReentrantMutex's per-call options: every lock's, and `owner`. */
const reentrantCallOptions: CallOptionTable = callOptionsWith('owner', reentrantLockChecks);

/**
 * A mutual-exclusion lock its holder can take again without waiting for itself, on one Redis
 * deployment. Each acquisition is a *hold* with a lease of its own; the lock is released when the
 * holder's last hold is.
 *
 * ```ts
 * const account = new ReentrantMutex(redis, 'account:7');
 * await account.using(async () => {
 *   await debit(7, 10); // takes `account` too: a second hold, not a deadlock
 * });
 * ```
 *
 * The same holder is the same `LockOwner`: the `owner` option (of the lock, or of one call), or else,
 * inside a `using()` callback of this lock, that call's owner, found through the async context
 * (`AsyncLocalStorage`), so a function that takes the lock works whether or not its caller holds it.
 * Any other call is a new owner, which waits for the holder as with a `Mutex`.
 *
 * Every hold of one holder has the same fencing token (it is one holder for the resource), its own
 * lease (`signal`, `extend`, auto-extension) and its own token: releasing it twice, or a hold that
 * expired, resolves `false` and takes nothing away from the other holds. An extension keeps every
 * hold and never shortens the lock under the others. Holds are counted in Redis (a hash of hold
 * tokens beside the lock key, expiring with it), so a crashed holder's holds all expire with its
 * lock after `ttlMs`. Waiting is the Mutex's: a release of the last hold hands the lock to the
 * longest-waiting live waiter.
 */
export class ReentrantMutex extends HandOffLock<
  ReentrantLockOptions,
  ReentrantLockState,
  ReentrantAcquireOptions
> {
  /** @internal The keys its scripts name (the holds beside the lock's). */
  readonly reentrantKeys: ReentrantScriptKeys;

  constructor(client: RedisClient, name: string, options?: Partial<ReentrantLockOptions>) {
    super(client, name, options, resolveReentrantLockOptions, {
      barging: true,
      skipUnreached: true,
      multiNames: false,
    });
    this.reentrantKeys = Object.freeze({ ...this.keys, ...reentrantKeys(this.keys) });
  }

  /**
   * Acquires the lock (or adds a hold, when its owner holds it already), runs `work(signal, lease)`
   * as that owner, and releases this hold in `finally`. Calls of this lock inside `work`, however
   * deeply nested, are holds of the same owner unless they name another.
   */
  override async using<T>(work: LockedWork<T>, options?: ReentrantAcquireOptions): Promise<T> {
    checkFunction('work', work);
    // Options that are not an object are the shell's to refuse, before anything reaches Redis.
    if (options !== undefined && (options === null || typeof options !== 'object')) {
      return super.using(work, options);
    }
    const owner = options?.owner ?? this.ownerOf(undefined);
    const key = this.keys.lock;
    return super.using((signal, lease) => runAsOwner(key, owner, lease, () => work(signal, lease)), {
      ...options,
      owner,
    });
  }

  /** @internal A waiter renews its entry once a minute, as a Mutex's. */
  protected waiterTtlMs(): number {
    return BARGING_WAITER_TTL_MS;
  }

  /** @internal */
  protected override callOptions(): CallOptionTable {
    return reentrantCallOptions;
  }

  /** @internal A hold token of the call's owner. */
  protected override newCallToken(options: EffectiveOptions<ReentrantLockOptions>): string {
    return this.ownerOf(options.owner).holdToken();
  }

  /** @internal */
  protected override acquireCall(params: HandOffAcquireParams): ScriptCall<HandOffAcquireResult> {
    return reentrantAcquire(this.reentrantKeys, params);
  }

  /** @internal Gives back one hold (the last releases the lock, handing it on), or leaves the queue. */
  protected override sendRelease(token: string): Promise<boolean> {
    return this.run(reentrantRelease(this.reentrantKeys, { token, skipUnreached: true }));
  }

  /** @internal */
  protected override sendExtend(token: string, ttlMs: number): Promise<boolean> {
    return this.run(reentrantExtend(this.reentrantKeys, { token, ttlMs }));
  }

  /** @internal */
  protected readState(): Promise<ReentrantLockState> {
    return this.run(reentrantInspect(this.reentrantKeys));
  }

  /** @internal A token holds the lock when it is one of the holder's holds. */
  protected override async holds(token: string): Promise<boolean> {
    return (await this.readState()).holdTokens.includes(token);
  }

  /**
   * The owner a call acts as: given, the lock's, the enclosing `using()`'s, or a new one. Inside a
   * `using()` whose lease was lost, a nested call throws `LockLostError` at once: taking the lock
   * afresh there would give the one holder two fencing tokens. A hold released early by its caller
   * no longer counts: the call is a new one.
   */
  private ownerOf(given: LockOwner | undefined): LockOwner {
    const named = given ?? this.options.owner;
    if (named !== undefined) return named;
    const hold = holdInContext(this.keys.lock);
    if (hold === undefined) return new LockOwner();
    const held = hold.lease.isHeld; // reading it marks a lease whose validity ran out as lost
    const lost: unknown = hold.lease.signal.reason;
    if (hold.lease.signal.aborted) {
      throw new LockLostError(this.name, lost instanceof LockLostError ? lost.reason : 'expired', {
        cause: lost,
      });
    }
    return held ? hold.owner : new LockOwner();
  }
}
