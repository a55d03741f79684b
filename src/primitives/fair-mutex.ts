import type { RedisClient } from '../adapters/detect.js';
import { hubFor } from '../adapters/subscriber-hub.js';
import type { Clock } from '../clock.js';
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
import { type AttemptOutcome, acquireWithWaiting } from './acquisition.js';
import { clientId } from './client-id.js';
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

/** How long a waiter that gives up waits for its "leave the queue" script before rejecting anyway. */
const LEAVE_WAIT_MS = 1_000;

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
  readonly keys: LockKeys;
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
   * `LockTimeoutError` after `timeoutMs`, `TooManyAttemptsError` once `retries` ran out, or the
   * signal's reason when `signal` aborts; in every case the waiter has left the queue and holds
   * nothing.
   */
  async acquire(options?: AcquireOptions): Promise<Lease> {
    const effective = resolveAcquireOptions(options, this.options);
    const token = newToken();
    const deadline = effective.clock.now() + effective.timeoutMs;
    const waiter = new Waiter(token, effective.clock);
    const leave = () => this.releaseOrLeave(token);
    let acquired: Awaited<ReturnType<typeof acquireWithWaiting>>;
    try {
      acquired = await acquireWithWaiting({
        name: this.name,
        wake: effective.wakeOnRelease
          ? { hub: hubFor(this.driver), channel: this.grantedChannel, accept: (m) => waiter.hear(m) }
          : undefined,
        timeoutMs: effective.timeoutMs,
        retries: effective.retries,
        retryDelayMs: effective.retryDelayMs,
        retryJitterMs: effective.retryJitterMs,
        signal: effective.signal,
        clock: effective.clock,
        attempt: () => this.attempt(waiter, effective, deadline),
        releaseAbandoned: () => void leave().catch(() => {}),
      });
    } catch (error) {
      // Leave the queue, and hand the lock on if it reached us meanwhile. Bounded, so a Redis that
      // cannot be reached does not hold the rejection back: the entry then expires by its deadline.
      await settleWithin(leave(), LEAVE_WAIT_MS);
      throw error;
    }
    const { outcome, attempts } = acquired;
    return this.lease(
      { token, fencingToken: outcome.fencingToken, sentAt: outcome.sentAt, attempts },
      effective,
    );
  }

  /**
   * One attempt that never queues: resolves with a lease when the lock is free and nobody is
   * waiting for it, else `null`. Rejects only for infrastructure faults.
   */
  async tryAcquire(options?: TryAcquireOptions): Promise<Lease | null> {
    const effective = resolveAcquireOptions(options, this.options, tryAcquireOptionNames);
    effective.signal?.throwIfAborted();
    const token = newToken();
    const sentAt = effective.clock.now();
    const reply = await this.run('fairAcquire', this.fairKeys(), [
      token,
      String(effective.ttlMs),
      '0',
      this.grantedChannel,
    ]);
    const { acquired, value } = decodeAcquire(reply);
    if (!acquired) return null;
    if (effective.signal?.aborted) {
      await this.releaseOrLeave(token).catch(() => {});
      throw effective.signal.reason;
    }
    return this.lease({ token, fencingToken: value, sentAt, attempts: 1 }, effective);
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
    if (handOff) return { acquired: true, ...handOff };
    const { clock } = options;
    const sentAt = clock.now();
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
    if (acquired) return { acquired: true, fencingToken: value, sentAt };
    waiter.anchor(sentAt, serverTimeMs);
    // Wake to renew the place before it expires (only when it is shorter than our own deadline), and
    // when the holder's TTL runs out: a crashed holder releases nothing, so a waiter's next attempt
    // is what hands the lock on.
    const renewInMs =
      entryTtlMs < remainingMs ? Math.max(1, Math.floor(entryTtlMs / 3)) : Number.POSITIVE_INFINITY;
    // PTTL 0 is a lock in its last millisecond (Redis rounds down): try again at once, since a holder
    // that crashed will never hand it on. Only a lock without expiry (-1) leaves us to the message.
    const holderPttlMs = value >= 0 ? Math.max(1, value) : Number.POSITIVE_INFINITY;
    return { acquired: false, holderPttlMs: Math.min(renewInMs, holderPttlMs) };
  }

  private fairKeys(): string[] {
    return [this.keys.lock, this.keys.fence, this.keys.queue, this.keys.waiters];
  }

  private async releaseOrLeave(token: string): Promise<boolean> {
    return asInteger('fair-release', await this.run('fairRelease', this.fairKeys(), [token])) === 1;
  }
}

/**
 * One acquire call's view of its hand-off.
 *
 * Validity of a handed-off lease: its TTL started on the server at the hand-off, which this process
 * learns of only when the message arrives, some time later. The lease must count from an instant no
 * later than the hand-off. Every queued reply carries the server's clock (TIME) read while serving
 * a request we sent at local instant `sentAt`, so that server instant lies after `sentAt`; the
 * hand-off message carries the server's clock at the hand-off. The hand-off therefore happened, in
 * local monotonic time, no earlier than `sentAt + (grantServerMs − queuedServerMs)`, which is the
 * instant we count from: it is exact up to the request's one-way latency, which only errs on the safe
 * side, and the lease's drift allowance (ttl·driftFactor + 2 ms) covers the two clocks' rates and
 * TIME's millisecond rounding. `sentAt` itself is a bound that needs no clock at all (the hand-off
 * cannot precede the request that queued us), so it is the floor, and the fallback when the server's
 * clock visibly stepped (an estimate later than the message's arrival is impossible). What remains
 * assumed is that the server's wall clock is not stepped forward while we wait.
 */
class Waiter {
  private anchorSentAt = Number.NaN;
  private anchorServerMs = Number.NaN;
  private heard: { fencingToken: number; grantServerMs: number; receivedAt: number } | undefined;
  private readonly prefix: string;

  constructor(
    readonly token: string,
    private readonly clock: Clock,
  ) {
    this.prefix = `${token}:`;
  }

  /** Remembers a queued reply: the request was sent at `sentAt`, the server read `serverTimeMs`. */
  anchor(sentAt: number, serverTimeMs: number): void {
    this.anchorSentAt = sentAt;
    this.anchorServerMs = serverTimeMs;
  }

  /** The hub's filter: true (and the hand-off kept) when the message is this waiter's hand-off. */
  hear(message: string): boolean {
    if (this.heard || !message.startsWith(this.prefix)) return false;
    const [fencingToken, grantServerMs] = message.slice(this.prefix.length).split(':').map(Number);
    if (!Number.isSafeInteger(fencingToken) || !Number.isSafeInteger(grantServerMs)) return false;
    this.heard = {
      fencingToken: fencingToken as number,
      grantServerMs: grantServerMs as number,
      receivedAt: this.clock.now(),
    };
    return true;
  }

  /**
   * The hand-off, once heard and anchored. A message can overtake the reply that queued us (they
   * travel on different connections); the waiting loop asks only after that reply arrived.
   */
  handOff(): { fencingToken: number; sentAt: number } | undefined {
    const heard = this.heard;
    if (!heard || Number.isNaN(this.anchorSentAt)) return undefined;
    // A hand-off older than our latest queued reply is stale: the server saw us *not* holding the
    // lock after it (we were frozen through our turn, our TTL ran out and the lock moved on). Taking
    // it as a grant would make two holders. Forget it, so a later hand-off can be heard.
    if (heard.grantServerMs < this.anchorServerMs) {
      this.heard = undefined;
      return undefined;
    }
    const floor = this.anchorSentAt;
    const estimate = floor + (heard.grantServerMs - this.anchorServerMs);
    const sentAt = estimate > heard.receivedAt ? floor : Math.max(floor, estimate);
    return { fencingToken: heard.fencingToken, sentAt };
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

async function settleWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    promise.catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
}
