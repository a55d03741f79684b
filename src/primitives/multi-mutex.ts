import type { RedisClient } from '../adapters/client-types.js';
import { CrossSlotError } from '../errors.js';
import { type Checks, defaultLockOptions, type LockOptions, lockChecks, resolveOptions } from '../options.js';
import type { Plan } from '../plan.js';
import { handOffInspect } from '../protocol/hand-off.js';
import { type LockKeys, lockKeys } from '../protocol/keys.js';
import type { LockState } from '../protocol/lock-state.js';
import { multiAcquire, multiExtend, multiRelease } from '../protocol/multi-mutex.js';
import { checkNames } from '../validation.js';
import type { Attempts, Outcome } from '../waiting/attempts.js';
import { Wake } from '../waiting/wake.js';
import { BARGING_WAITER_TTL_MS } from './hand-off-lock.js';
import { defaultMutexOptions, type MutexOptions, mutexChecks } from './mutex.js';
import { ScriptedLock } from './scripted-lock.js';

/**
 * How a MultiMutex behaves: every lock's options, and the Mutex's wait bound (`handOffAfterMs`: once
 * a waiter has waited this long, it reserves its names; see `MultiMutex`). No batching.
 */
export interface MultiMutexOptions extends LockOptions, Pick<MutexOptions, 'handOffAfterMs'> {}

/**
 * The longest a reservation lives unless its waiter's next attempt renews it (at half of it); a
 * shorter `ttlMs` is used when given, so a dead reserver blocks its names no longer than a dead
 * holder would. Below the 60 s a name's release record is kept (holder.lua), which carries the flag.
 */
export const MAX_RESERVATION_TTL_MS = 30_000;

/** A MultiMutex's state: `locked` when any name is held (an acquire would wait), each name's own. */
export interface MultiMutexState extends LockState {
  /** Each name's state, in the order of `names`. The top-level fields other than `locked` are the first name's. */
  readonly names: Readonly<Record<string, LockState>>;
}

export const defaultMultiMutexOptions: Readonly<MultiMutexOptions> = Object.freeze({
  ...defaultLockOptions,
  handOffAfterMs: defaultMutexOptions.handOffAfterMs,
});

const multiMutexChecks: Checks<MultiMutexOptions> = {
  ...lockChecks,
  handOffAfterMs: mutexChecks.handOffAfterMs,
};

/** Checks a MultiMutex's options and merges them over the defaults into a new frozen object. */
export function resolveMultiMutexOptions(options: unknown): Readonly<MultiMutexOptions> {
  return resolveOptions(options, defaultMultiMutexOptions, multiMutexChecks);
}

/** The Redis Cluster hash tag of a name's keys (`prefix:{name}…`): the name up to its first `}`. */
export function nameHashTag(name: string): string {
  const close = name.indexOf('}');
  return close === -1 ? name : name.slice(0, close);
}

/**
 * A lock over several names at once, all or none: a caller holds every name or none of them. Each
 * name is a `Mutex`'s own lock (the same keys), so a `Mutex` on `"a"` and a MultiMutex on
 * `["a", "b"]` exclude each other.
 *
 * ```ts
 * const skus = new MultiMutex(redis, ['sku:1', 'sku:7', 'sku:9'], { ttlMs: 10_000 });
 * await using lease = await skus.acquire();
 * lease.fencingTokens['sku:7']; // each name's fencing token
 * ```
 *
 * Each attempt is one script over every name: it takes them all when all are free, else takes
 * nothing and registers the caller on one name that stopped it, the one whose holder would expire
 * last. A caller never holds a part while waiting for the rest, so overlapping sets cannot deadlock,
 * in any order. The caller is woken (pub/sub, no polling) when a release (a MultiMutex's or a
 * Mutex's) leaves that name free, and asks again at the latest when its holder would expire. It never joins a
 * name's Mutex queue: a Mutex release hands a name to the Mutex's own queued waiters, never to a
 * MultiMutex waiter. Wait bound (`handOffAfterMs`, 50 ms by default, the Mutex's option): until
 * then a waiter barges like a Mutex's free-lock acquire; once it has waited that long, its next
 * attempt reserves every one of its names, all or none (an older waiter's reservation of one of
 * them wins), and nobody else takes a reserved name (a Mutex queues behind it; a release frees it
 * for the reserver and wakes it). It then waits at most for the holds in progress on its names and
 * for older reservers of them (docs/api.md, "MultiMutex"). A reserver holds nothing, so
 * overlapping reservations cannot deadlock; a reservation lapses unless renewed (a dead reserver).
 *
 * Its `name` (and its leases') is the first name; `names` has them all. The lease's `fencingTokens`
 * has each name's token; `fencingToken` is the first name's. `isLocked()` is true when any name is
 * held; `inspect()` has each name's state in `names`. Its
 * watchdog extends every name in one script, all or none: a name lost is the lease lost.
 *
 * On a Redis Cluster client every name must share one hash tag (one slot), else the constructor
 * throws a `CrossSlotError`.
 */
export class MultiMutex extends ScriptedLock<MultiMutexOptions, MultiMutexState> {
  /** The names, in the order given (a frozen copy). */
  readonly names: readonly string[];
  /** @internal Each name's keys, in the order of `names`. */
  readonly nameKeys: readonly LockKeys[];

  constructor(client: RedisClient, names: readonly string[], options?: Partial<MultiMutexOptions>) {
    const checked = checkNames('names', names);
    // Its `name` (the leases', the events') and its own keys and channel are the first name's.
    super(client, checked[0] as string, options, resolveMultiMutexOptions);
    this.names = checked;
    this.nameKeys = Object.freeze(checked.map((name) => lockKeys(this.options.prefix, name)));
    if (this.context.driver.topology === 'cluster' && new Set(checked.map(nameHashTag)).size > 1) {
      throw new CrossSlotError(checked);
    }
  }

  /** @internal */
  protected planAttempts(plan: Plan<MultiMutexOptions>): Attempts {
    const { token, options } = plan;
    const { clock, wakeOnRelease } = options;
    const wakeMessage = `${token}:free`;
    const channel = this.wakeChannel((message) => message === wakeMessage);
    // A single try registers nothing; a waiter that does not listen waits on its timer alone.
    const registers = plan.mode === 'wait' && wakeOnRelease;
    const entryTtlMs = registers ? BARGING_WAITER_TTL_MS : 0;
    const { names } = this;
    const reservationTtlMs = Math.min(options.ttlMs, MAX_RESERVATION_TTL_MS);
    // A first attempt cannot be registered anywhere (its token is new): it skips the unregistering.
    let sentBefore = false;
    // The server ms of the call's first attempt (0 until its reply): its age counts from there.
    let arrivalMs = 0;
    return {
      attempt: async (): Promise<Outcome> => {
        const sentAt = clock.now();
        const sentAtWall = clock.wallNow?.();
        const call = multiAcquire(this.nameKeys, {
          token,
          ttlMs: options.ttlMs,
          entryTtlMs,
          channel: registers ? channel.channel : '',
          label: options.label,
          sentBefore,
          arrivalMs,
          handOffAfterMs: options.handOffAfterMs,
          reservationTtlMs,
        });
        sentBefore = true;
        const result = await this.run(call);
        if (result.acquired) {
          const fencingTokens: Record<string, number> = {};
          names.forEach((name, i) => {
            fencingTokens[name] = result.fencingTokens[i] as number;
          });
          return {
            acquired: true,
            fencingToken: result.fencingTokens[0] as number,
            fencingTokens: Object.freeze(fencingTokens),
            sentAt,
            sentAtWall,
          };
        }
        if (arrivalMs === 0) arrivalMs = result.serverTimeMs;
        const bound = result.waitBoundMs;
        // Not yet due: ask again when it is (1 ms past, for TIME's truncation), to reserve. Due: a
        // reservation it may hold is renewed by the next attempt, before it lapses. One with a retry
        // delay asks at its own pace, and counts its attempts (as a Mutex waiter does).
        const dueInMs = Number.isFinite(options.retryDelayMs)
          ? 0
          : arrivalMs + options.handOffAfterMs - result.serverTimeMs;
        const renewInMs = Math.min(entryTtlMs / 2, dueInMs > 0 ? dueInMs + 1 : reservationTtlMs / 2);
        return {
          acquired: false,
          holderPttlMs: bound >= 0 ? Math.max(1, bound) : Number.POSITIVE_INFINITY,
          // The registration and reservation are renewed by the next attempt: wake before they lapse.
          ...(registers ? { renewInMs, leftState: true } : {}),
        };
      },
      wake: wakeOnRelease ? new Wake([channel]) : undefined,
    };
  }

  /** @internal Releases every name `token` holds (each handed to its Mutex waiters, or freed). */
  protected sendRelease(token: string): Promise<boolean> {
    return this.run(multiRelease(this.nameKeys, token));
  }

  /** @internal Extends every name, all or none. */
  protected sendExtend(token: string, ttlMs: number): Promise<boolean> {
    return this.run(multiExtend(this.nameKeys, token, ttlMs));
  }

  /**
   * @internal The lock's state as `inspect()` shows it: each name's, read at once (not one
   * snapshot: a name may change between the reads); `locked` when any name is held.
   */
  protected async readState(): Promise<MultiMutexState> {
    const states = await Promise.all(this.nameKeys.map((keys) => this.run(handOffInspect(keys))));
    const names: Record<string, LockState> = {};
    this.names.forEach((name, i) => {
      const { locked, ownerToken, remainingTtlMs, lastFencingToken, holderLabel } = states[i] as LockState;
      names[name] = Object.freeze({ locked, ownerToken, remainingTtlMs, lastFencingToken, holderLabel });
    });
    const first = names[this.names[0] as string] as LockState;
    return { ...first, locked: states.some((state) => state.locked), names: Object.freeze(names) };
  }

  /**
   * @internal Whether `token` holds every name (one extension by 0 ms would change them: ask each),
   * each name read at once, as `readState` does: one round trip, not one per name.
   */
  protected override async holds(token: string): Promise<boolean> {
    const states = await Promise.all(this.nameKeys.map((keys) => this.run(handOffInspect(keys))));
    return states.every((state) => state.ownerToken === token);
  }
}
