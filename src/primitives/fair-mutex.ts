import type { RedisClient } from '../adapters/client-types.js';
import { hubFor } from '../adapters/subscriber-hub.js';
import type { Lease, LeaseBackend } from '../lease/lease.js';
import {
  type AcquireOptions,
  type LockOptions,
  resolveAcquireOptions,
  resolveLockOptions,
  type TryAcquireOptions,
  tryAcquireOptionNames,
} from '../options.js';
import { type LockKeys, lockKeys } from '../protocol/keys.js';
import { asArray, asInteger } from '../protocol/replies.js';
import { newToken } from '../token.js';
import { checkFunction, checkMs, checkName, checkToken } from '../validation.js';
import { type AttemptOutcome, acquireWithWaiting, attemptOnce } from './acquisition.js';
import { clientId } from './client-id.js';
import { Waiter } from './fair-waiter.js';
import { type LockedWork, runHolding } from './mutex.js';
import { decodeLockState, type LockState, ScriptedLock } from './scripted-lock.js';

/** How a FairMutex behaves: the Mutex's options, plus how long a queued waiter's place outlives it. */
export interface FairLockOptions extends LockOptions {
  /**
   * How long a waiter's place in the queue is kept without the waiter renewing it, in milliseconds.
   * A place never outlives the waiter's own `timeoutMs` either; only a waiter whose timeout is longer
   * than this renews its place, every `waiterTtlMs / 3`. Default 30,000.
   */
  waiterTtlMs: number;
}

/** A FairMutex's state in Redis: the lock's, and how many waiters are queued. */
export interface FairLockState extends LockState {
  /** Entries in the queue (those of waiters that died are counted until they are dropped). */
  readonly queueLength: number;
}

const DEFAULT_WAITER_TTL_MS = 30_000;

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
 * Do not mix a FairMutex and a Mutex on the same name: a Mutex takes a free lock without looking
 * at the queue.
 */
export class FairMutex extends ScriptedLock {
  /** The effective options (defaults merged with yours); frozen. */
  readonly options: Readonly<FairLockOptions>;
  /** @internal The Redis keys of this lock (tests and the fault suite look at them). */
  readonly keys: LockKeys;
  /** @internal */
  protected readonly backend: LeaseBackend;
  private readonly grantedChannel: string;

  constructor(client: RedisClient, name: string, options?: Partial<FairLockOptions>) {
    super(client, checkName('name', name));
    const { waiterTtlMs, lockOptions } = splitOptions(options);
    this.options = Object.freeze({ ...resolveLockOptions(lockOptions), waiterTtlMs });
    this.keys = lockKeys(this.options.prefix, name);
    this.grantedChannel = `${this.keys.grantedChannelPrefix}${clientId(this.driver)}`;
    this.backend = {
      extend: async (token, ttlMs) =>
        asInteger('mutex-extend', await this.run('mutexExtend', [this.keys.lock], [token, String(ttlMs)])) ===
        1,
      release: (token) => this.releaseOrLeave(token),
      isHeldBy: async (token) => (await this.inspect()).ownerToken === token,
    };
  }

  /**
   * Joins the queue and resolves with a lease once the lock is handed over. Rejects with
   * `LockTimeoutError` after `timeoutMs`, `TooManyAttemptsError` once `retries` ran out,
   * `RedisUnavailableError` when Redis could not be reached meanwhile, or the signal's reason when
   * `signal` aborts; in every case the waiter leaves the queue (in the background, best-effort when
   * Redis is unreachable) and holds nothing. Queue renewals and hand-offs do not use up `retries`.
   */
  async acquire(options?: AcquireOptions): Promise<Lease> {
    const effective = resolveAcquireOptions(options, this.options);
    const token = newToken();
    const deadline = effective.clock.now() + effective.timeoutMs;
    const waiter = new Waiter(token, effective.clock);
    // A waiter that gives up leaves the queue, and hands the lock on if it reached it meanwhile; the
    // loop waits for that only briefly, so a Redis that cannot be reached does not hold the rejection
    // back (the entry then expires by its deadline).
    const { outcome, attempts } = await acquireWithWaiting({
      name: this.name,
      token,
      ttlMs: effective.ttlMs,
      driftFactor: effective.driftFactor,
      wake: effective.wakeOnRelease
        ? { hub: hubFor(this.driver), channel: this.grantedChannel, accept: (m) => waiter.hear(m) }
        : undefined,
      timeoutMs: effective.timeoutMs,
      retries: effective.retries,
      retryDelayMs: effective.retryDelayMs,
      retryJitterMs: effective.retryJitterMs,
      signal: effective.signal,
      clock: effective.clock,
      wakeUpIsRetry: false,
      attempt: () => this.attempt(waiter, effective, deadline),
      giveBack: () => this.releaseOrLeave(token),
      mayHaveLeftState: () => true,
    });
    return this.lease(
      {
        token,
        fencingToken: outcome.fencingToken,
        sentAt: outcome.sentAt,
        sentAtWall: outcome.sentAtWall,
        attempts,
      },
      effective,
    );
  }

  /**
   * One attempt that never queues: resolves with a lease when the lock is free and nobody is
   * waiting for it (or when the reply came too late for any validity to be left: that grant is
   * handed on), else `null`. Rejects only for infrastructure faults, as `Mutex.tryAcquire()` does.
   */
  async tryAcquire(options?: TryAcquireOptions): Promise<Lease | null> {
    const effective = resolveAcquireOptions(options, this.options, tryAcquireOptionNames);
    effective.signal?.throwIfAborted();
    const token = newToken();
    const outcome = await attemptOnce({
      name: this.name,
      token,
      ttlMs: effective.ttlMs,
      driftFactor: effective.driftFactor,
      signal: effective.signal,
      clock: effective.clock,
      attempt: async () => {
        const sentAt = effective.clock.now();
        const sentAtWall = effective.clock.wallNow?.();
        const reply = await this.run('fairAcquire', this.fairKeys(), [
          token,
          String(effective.ttlMs),
          '0',
          this.grantedChannel,
        ]);
        const { acquired, value } = decodeAcquire(reply);
        if (!acquired) return { acquired: false, holderPttlMs: value };
        return { acquired: true, fencingToken: value, sentAt, sentAtWall };
      },
      giveBack: () => this.releaseOrLeave(token),
    });
    if (!outcome.acquired) return null;
    if (effective.signal?.aborted) {
      await this.releaseOrLeave(token).catch(() => {});
      throw effective.signal.reason;
    }
    return this.lease(
      {
        token,
        fencingToken: outcome.fencingToken,
        sentAt: outcome.sentAt,
        sentAtWall: outcome.sentAtWall,
        attempts: 1,
      },
      effective,
    );
  }

  /**
   * Acquires the lock, runs `work(signal, lease)`, and always releases in `finally` (handing the
   * lock to the next waiter). An error thrown by `work` is the one you get back.
   */
  async using<T>(work: LockedWork<T>, options?: AcquireOptions): Promise<T> {
    checkFunction('work', work);
    const lease = await this.acquire(options);
    return runHolding(lease, work);
  }

  /**
   * Releases the lock held by `token` (handing it to the next waiter), or removes `token` from the
   * queue. Resolves `true` when that token held the lock.
   */
  async releaseToken(token: string): Promise<boolean> {
    return this.releaseOrLeave(checkToken('token', token));
  }

  /** Asks Redis whether anyone holds the lock. */
  async isLocked(): Promise<boolean> {
    return (await this.inspect()).locked;
  }

  /** The lock's state and queue length in Redis, in one round trip. */
  async inspect(): Promise<FairLockState> {
    const reply = await this.run('fairInspect', [this.keys.lock, this.keys.fence, this.keys.queue], []);
    const [state, [queueLength]] = decodeLockState('fair-inspect', reply, 1);
    return { ...state, queueLength: queueLength as number };
  }

  /**
   * Enqueue (first call), or renew the place and check for a hand-off whose message was missed
   * (later calls). Once the hand-off message has been heard, no round trip at all.
   */
  private async attempt(
    waiter: Waiter,
    options: Readonly<LockOptions>,
    deadline: number,
  ): Promise<AttemptOutcome> {
    const handOff = waiter.handOff();
    // A grant with no validity left (a hand-off heard too late, a reply after a pause) is handed on
    // by the waiting loop, which alone knows whether this attempt is the call's current one.
    if (handOff) return { acquired: true, ...handOff };
    const { clock } = options;
    const sentAt = clock.now();
    const sentAtWall = clock.wallNow?.();
    const remainingMs = deadline - sentAt;
    const entryTtlMs = Math.max(1, Math.ceil(Math.min(remainingMs, this.options.waiterTtlMs)));
    const reply = await this.run('fairAcquire', this.fairKeys(), [
      waiter.token,
      String(options.ttlMs),
      String(entryTtlMs),
      this.grantedChannel,
    ]);
    const { acquired, value, serverTimeMs } = decodeAcquire(reply);
    // Acquired in this reply: the script set the TTL (or restarted it, after a hand-off whose message
    // we missed) while serving this request, so counting from its send time errs on the safe side.
    if (acquired) return { acquired: true, fencingToken: value, sentAt, sentAtWall };
    waiter.anchor(sentAt, serverTimeMs);
    // Wake to renew the place before it expires (only when it is shorter than our own deadline), and
    // when the holder's TTL runs out: a crashed holder releases nothing, so a waiter's next attempt
    // is what hands the lock on.
    const renewInMs =
      entryTtlMs < remainingMs ? Math.max(1, Math.floor(entryTtlMs / 3)) : Number.POSITIVE_INFINITY;
    // PTTL 0 is a lock in its last millisecond (Redis rounds down): try again at once, since a holder
    // that crashed will never hand it on. Only a lock without expiry (-1) leaves us to the message.
    const holderPttlMs = value >= 0 ? Math.max(1, value) : Number.POSITIVE_INFINITY;
    return { acquired: false, holderPttlMs, renewInMs };
  }

  private fairKeys(): string[] {
    return [this.keys.lock, this.keys.fence, this.keys.queue, this.keys.waiters];
  }

  private async releaseOrLeave(token: string): Promise<boolean> {
    const keys = [...this.fairKeys(), this.keys.lastReleased];
    return asInteger('fair-release', await this.run('fairRelease', keys, [token])) === 1;
  }
}

function decodeAcquire(reply: unknown): { acquired: boolean; value: number; serverTimeMs: number } {
  const [flag, value, serverTimeMs] = asArray('fair-acquire', reply, 3);
  return {
    acquired: asInteger('fair-acquire', flag) === 1,
    value: asInteger('fair-acquire', value),
    serverTimeMs: asInteger('fair-acquire', serverTimeMs),
  };
}

function splitOptions(options: unknown): { waiterTtlMs: number; lockOptions: unknown } {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    return { waiterTtlMs: DEFAULT_WAITER_TTL_MS, lockOptions: options };
  }
  const { waiterTtlMs, ...lockOptions } = options as Record<string, unknown>;
  return {
    waiterTtlMs: waiterTtlMs === undefined ? DEFAULT_WAITER_TTL_MS : checkMs('waiterTtlMs', waiterTtlMs),
    lockOptions,
  };
}
