import type { ChannelWatch } from '../adapters/subscriber-hub.js';
import type { Clock } from '../clock.js';
import { noReplyError, type Settled, settleBefore } from '../deadline.js';
import {
  isRetryable,
  LockError,
  LockTimeoutError,
  QuorumError,
  RedisUnavailableError,
  TooManyAttemptsError,
} from '../errors.js';
import { emitLockEvent } from '../events.js';
import { sendGiveBack } from '../lease/give-back.js';
import { nextWaitMs, timerDelayMs } from '../timing.js';
import { grantValidityLeftMs } from './grant-lease.js';
import { type WakeChannel, watch as watchChannels, watchIfActive } from './wake.js';

/** What one attempt at a lock tells: we got it, or how long the holder still has. */
export type AttemptOutcome =
  | {
      readonly acquired: true;
      readonly fencingToken: number;
      readonly sentAt: number;
      /** `clock.wallNow()` read with `sentAt`, when the clock has one (a suspend then counts too). */
      readonly sentAtWall?: number | undefined;
    }
  | {
      readonly acquired: false;
      readonly holderPttlMs: number;
      /**
       * When the attempt's own state in Redis (a queue place) must be renewed: a
       * wake-up for that is a renewal, not a retry, and does not use up `retries`.
       */
      readonly renewInMs?: number;
      /**
       * The attempt left state in Redis (a queue place) that outlives it: when its reply comes after
       * the call gave up, the token is given back again (a client that re-sent the attempt after a
       * reconnect may have queued it after the call's own give-back).
       */
      readonly leftState?: boolean;
    };

/** What both the waiting loop and a single try need to know about one acquire call. */
export interface AttemptPlan {
  readonly name: string;
  /** The owner token every attempt of this call uses (reported with a give-back). */
  readonly token: string;
  /** The lease TTL: an attempt unanswered for that long can never produce a usable lease. */
  readonly ttlMs: number;
  /** How long an attempt may go unanswered before Redis counts as unavailable (capped by `ttlMs`). */
  readonly replyTimeoutMs: number;
  /** Why the client has no connection now, when it knows (it is reconnecting), else undefined. */
  disconnected(): string | undefined;
  /** The lease's drift allowance, to tell a grant that still has validity from one that has none. */
  readonly driftFactor: number;
  readonly signal: AbortSignal | undefined;
  readonly clock: Clock;
  /**
   * One attempt: a round trip, or, when the primitive already knows the outcome (a heard hand-off),
   * that outcome as is (nothing sent, so nothing to wait for or time out).
   */
  attempt(): AttemptOutcome | Promise<AttemptOutcome>;
  /**
   * Gives the token back: compare-and-delete, leaving any waiting state (a queue
   * place). Safe to call whatever the token's state; resolves true when the token held the lock.
   */
  giveBack(): Promise<boolean>;
}

export interface AcquisitionPlan extends AttemptPlan {
  /**
   * The release channels to wake on, each with the hub that carries it (one; a Redlock quorum has
   * one per node; undefined: timed waits only); each `accept`, when given, picks the messages that
   * wake this waiter.
   */
  readonly wake: readonly WakeChannel[] | undefined;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly retryDelayMs: number;
  readonly retryJitterMs: number;
  readonly random?: () => number;
  /**
   * Whether an attempt after a release message counts against `retries` (Mutex: the woken waiter
   * competes like anyone; FairMutex: the message *is* the grant, not a retry).
   */
  readonly wakeUpIsRetry: boolean;
  /** Whether an attempt may have left state in Redis to clean up on giving up (a queue place). */
  mayHaveLeftState(): boolean;
}

export interface Acquired {
  readonly outcome: Extract<AttemptOutcome, { acquired: true }>;
  readonly attempts: number;
}

/** How long a caller that gives up waits for its give-back before rejecting anyway. */
const GIVE_BACK_GRACE_MS = 50;

/**
 * A give-back that failed on a transient error (a reset connection rejected it) is tried again, after
 * this delay doubling up to the cap, while the token may still hold the lock.
 */
const GIVE_BACK_RETRY_FIRST_MS = 5;
const GIVE_BACK_RETRY_MAX_MS = 50;

/** Polling back-off when pub/sub is unavailable: first delay, and the cap it doubles up to. */
const POLL_FIRST_MS = 10;
const POLL_MAX_MS = 250;

/**
 * The waiting loop shared by every single-node primitive.
 *
 * The first attempt is sent at once (an uncontended lock costs one round trip). After a failure
 * the waiter subscribes to the release channel *before* its next attempt, so a release between
 * "try" and "wait" is never missed, then waits for the release message or at most
 * min(holder's PTTL, retryDelayMs, time left): a lost message only delays a waiter. If subscribing
 * fails, it polls with a short back-off instead (never the holder's whole TTL).
 *
 * `retries` counts attempts that found the lock held after a real wait: the attempt right after
 * subscribing, renewals and hand-off wake-ups are free. Errors: a `LockError` is
 * never retried (it says what to do), except a `QuorumError` (nodes of a Redlock quorum failed). Anything else is transient and retried while time is left;
 * if the caller's time or retries run out while the last attempt failed that way, the rejection is
 * `RedisUnavailableError` (cause: the last error). An attempt unanswered for `replyTimeoutMs` (at
 * most a TTL: a later reply can never yield a usable lease) is abandoned and counts as failed; at
 * the deadline, a call Redis never answered while its client says it has no connection is
 * `RedisUnavailableError` too, not a timeout. With no deadline, Redis unreachable for longer than one TTL
 * in a row ends the wait with `RedisUnavailableError`.
 *
 * Giving back: whenever the call gives up and an attempt's outcome is unknown (it failed or is
 * still in flight: a lost reply may have applied) or may have left a queue place,
 * the token is given back best-effort, and again when an in-flight attempt settles later.
 */
export async function acquireWithWaiting(plan: AcquisitionPlan): Promise<Acquired> {
  const { clock, signal } = plan;
  const random = plan.random ?? Math.random;
  const deadline = clock.now() + plan.timeoutMs;
  const call = new CallState(plan);
  let attempts = 0;
  let counted = 0;
  let countNext = true;
  let lastError: unknown;
  let lastFailed = false;
  /** Some attempt of this call got a reply (Redis was reachable). */
  let answered = false;
  let failingSince: number | undefined;
  let watch: ChannelWatch | undefined = plan.wake ? watchIfActive(plan.wake) : undefined;
  let subscribeFailed = false;
  let pollMs = POLL_FIRST_MS;

  try {
    for (;;) {
      signal?.throwIfAborted();
      attempts += 1;
      if (countNext) counted += 1;
      const sentAt = clock.now();
      let outcome: AttemptOutcome;
      // An attempt is abandoned at the caller's deadline, or after `replyTimeoutMs` without a
      // reply if that comes first: only the latter is a failure of Redis.
      const callerTimeRunsOutFirst = deadline < sentAt + replyBoundMs(plan);
      const attempt = plan.attempt();
      const settled =
        attempt instanceof Promise
          ? await call.settle(attempt, Math.min(deadline, sentAt + replyBoundMs(plan)))
          : known(attempt);
      if (settled.kind === 'value') {
        outcome = usable(settled.value, plan) ? settled.value : await givenBack(call);
        answered = true;
        lastFailed = false;
        failingSince = undefined;
      } else {
        if (settled.kind === 'error') {
          if (!isRetryable(settled.error) || signal?.aborted) throw settled.error;
          lastError = settled.error;
        } else if (callerTimeRunsOutFirst || clock.now() >= deadline) {
          // The caller's time ran out (a timer may fire a hair before the clock reads the deadline:
          // that is still a timeout, not "Redis did not answer"), unless Redis never answered this
          // call and the client knows it has no connection: then a timeout would say the lock was
          // busy. (A deadline shorter than a reply under load stays a timeout.)
          signal?.throwIfAborted();
          if (lastFailed) throw unavailable(plan, 'no reply in time', lastError);
          if (!answered && plan.disconnected() !== undefined)
            throw unavailable(plan, 'no reply in time', noReply(plan, clock.now() - sentAt));
          throw timeout(plan, attempts, lastError);
        } else {
          lastError = noReply(plan, clock.now() - sentAt);
        }
        emitLockEvent({ type: 'attempt-failed', lockName: plan.name, error: lastError });
        if (!countNext) counted += 1; // an attempt that failed is never free
        lastFailed = true;
        failingSince ??= sentAt;
        if (!Number.isFinite(deadline) && clock.now() - failingSince >= plan.ttlMs) {
          throw unavailable(
            plan,
            `unreachable for ${Math.round(clock.now() - failingSince)} ms, longer than the TTL`,
            lastError,
          );
        }
        outcome = { acquired: false, holderPttlMs: -1 };
      }
      if (outcome.acquired) {
        call.finish('acquired');
        return { outcome, attempts };
      }

      if (counted > plan.retries) {
        throw lastFailed
          ? unavailable(plan, `the last of ${attempts} attempts failed`, lastError)
          : new TooManyAttemptsError(plan.name, attempts);
      }
      if (deadline - clock.now() <= 0) {
        throw lastFailed
          ? unavailable(plan, 'no reply in time', lastError)
          : timeout(plan, attempts, lastError);
      }

      // Subscribe once the lock was seen held (not while Redis is failing: that would only open a
      // subscriber connection to a server that cannot be reached).
      if (!watch && plan.wake && !subscribeFailed && !lastFailed) {
        const watching = watchChannels(plan.wake);
        const subscribed = await settleBefore(
          watching,
          Math.min(deadline, clock.now() + plan.ttlMs),
          signal,
          clock,
          (late) => {
            if (late.kind === 'value') late.value.close();
          },
        ).catch((error: unknown) => {
          if (signal?.aborted) throw signal.reason;
          return { kind: 'error' as const, error };
        });
        if (subscribed.kind === 'value') {
          watch = subscribed.value;
          // Subscribed now: try again at once (free), since the holder may have released meanwhile.
          // With a fixed retry delay a missed release costs at most that delay, and the caller
          // asked for that pace between attempts (redis_exp_lock's `interval`), so we keep it.
          if (!Number.isFinite(plan.retryDelayMs)) {
            countNext = false;
            continue;
          }
        } else {
          // No pub/sub (ACL without channels, a proxy without it, a subscriber that cannot connect):
          // poll with a short back-off, bounded by the holder's PTTL. Reported once per call.
          subscribeFailed = true;
          // A SUBSCRIBE that never answered failed for the hubs too: this call's next attempts
          // queue it without a channel (a Mutex skips a waiter nobody hears).
          if (subscribed.kind !== 'error')
            for (const wake of plan.wake) wake.hub.noteSubscribeFailed(wake.channel);
          const error =
            subscribed.kind === 'error' ? subscribed.error : new Error('SUBSCRIBE did not answer');
          emitLockEvent({ type: 'subscribe-failed', lockName: plan.name, error });
        }
      }

      const holderWaitMs = nextWaitMs({
        holderPttlMs: outcome.holderPttlMs,
        retryDelayMs: Number.isFinite(plan.retryDelayMs) ? plan.retryDelayMs : undefined,
        jitterMs: plan.retryJitterMs,
        remainingMs: deadline - clock.now(),
        random,
      });
      let waitMs = Math.min(holderWaitMs, outcome.renewInMs ?? Number.POSITIVE_INFINITY);
      if (!watch && subscribeFailed && !lastFailed) {
        const pollDelayMs = Math.max(1, Math.floor(pollMs * (0.5 + random() / 2)));
        if (pollMs === POLL_FIRST_MS)
          emitLockEvent({ type: 'polling', lockName: plan.name, delayMs: pollDelayMs });
        pollMs = Math.min(POLL_MAX_MS, pollMs * 2);
        waitMs = Math.min(waitMs, pollDelayMs);
      }
      const boundedByHolder = waitMs >= holderWaitMs;
      waitMs = timerDelayMs(waitMs);
      const woke = watch
        ? await watch.next(waitMs, signal)
        : await sleep(waitMs, signal).then(() => 'timeout');
      // A renewal or a poll before the holder's time is up is not a retry; nor is a FairMutex hand-off.
      countNext = woke === 'message' ? plan.wakeUpIsRetry : boundedByHolder;
    }
  } catch (error) {
    call.finish('gave-up');
    if (attempts > 0 && (call.outcomeUnknown || plan.mayHaveLeftState()))
      await call.giveBackWithin(GIVE_BACK_GRACE_MS);
    throw error;
  } finally {
    watch?.close();
  }
}

/**
 * One attempt that never waits for the lock (`tryAcquire()`): bounded by `replyTimeoutMs` (and by
 * the lease TTL, since a reply later than that can never yield a usable lease). Resolves with the
 * outcome; rejects with the signal's reason, a `LockError` as is, or `RedisUnavailableError` (no
 * reply in time, with the client's account of its connection as `cause`, or a transient error). When it rejects and the attempt's outcome is unknown, the token is
 * given back, now and again when a late reply arrives.
 */
export async function attemptOnce(plan: AttemptPlan): Promise<AttemptOutcome> {
  const call = new CallState(plan);
  plan.signal?.throwIfAborted();
  let settled: Settled<AttemptOutcome>;
  const boundMs = replyBoundMs(plan);
  try {
    const attempt = plan.attempt();
    settled =
      attempt instanceof Promise ? await call.settle(attempt, plan.clock.now() + boundMs) : known(attempt);
  } catch (error) {
    call.finish('gave-up');
    throw error;
  }
  if (settled.kind === 'value') {
    const outcome = usable(settled.value, plan) ? settled.value : await givenBack(call);
    call.finish(outcome.acquired ? 'acquired' : 'gave-up');
    return outcome;
  }
  call.finish('gave-up');
  void call.giveBackWithin(0);
  if (settled.kind === 'abandoned') {
    throw new RedisUnavailableError(plan.name, `no reply within ${boundMs} ms`, {
      cause: noReply(plan, boundMs),
    });
  }
  if (settled.error instanceof LockError) throw settled.error;
  throw new RedisUnavailableError(plan.name, 'the attempt failed', { cause: settled.error });
}

/**
 * A grant is used only with validity left. One that has none (its reply came after the lease would
 * have run out: Redis paused, a slow link, a frozen waiter that resumed, a hand-off heard too late)
 * would be a lease born lost, and `using()` would run work the lock no longer covers: `givenBack`
 * gives it back (compare-and-delete; a FairMutex hands it on to the next waiter), and it counts as
 * "not acquired".
 *
 * Only the call's *current* attempt may do this, here, and it waits for the give-back before the
 * next attempt is sent: every attempt of one call uses the same token, so a give-back sent by an
 * attempt the loop had already abandoned (found by the fault suite) could delete the lock that a
 * later attempt of the same call had just taken — a second holder.
 */
function usable(outcome: AttemptOutcome, plan: AttemptPlan): boolean {
  return !outcome.acquired || grantValidityLeftMs(outcome, plan) > 0;
}

/** Gives an unusable grant back (see `usable`) and waits for it: the attempt counts as "not acquired". */
async function givenBack(call: CallState): Promise<AttemptOutcome> {
  await call.giveBackWithin(Number.POSITIVE_INFINITY);
  return { acquired: false, holderPttlMs: 0 };
}

/** An outcome the lock kind already knew (no round trip), as the waiting loop reads a reply. */
function known(outcome: AttemptOutcome): Settled<AttemptOutcome> {
  return { kind: 'value', value: outcome };
}

/** How long one attempt waits for its reply: `replyTimeoutMs`, and never more than a TTL. */
function replyBoundMs(plan: AttemptPlan): number {
  return Math.min(plan.ttlMs, plan.replyTimeoutMs);
}

/** The cause reported for an attempt without a reply: the client's own account, when it has one. */
function noReply(plan: AttemptPlan, waitedMs: number): Error {
  return noReplyError(waitedMs, plan.disconnected());
}

/** The rejection when Redis could not be reached; a quorum that could not be (Redlock) says per node why. */
function unavailable(
  plan: AttemptPlan,
  detail: string,
  lastError: unknown,
): RedisUnavailableError | QuorumError {
  return lastError instanceof QuorumError
    ? lastError
    : new RedisUnavailableError(plan.name, detail, { cause: lastError });
}

function timeout(plan: AcquisitionPlan, attempts: number, cause: unknown): LockTimeoutError {
  return new LockTimeoutError(
    plan.name,
    plan.timeoutMs,
    attempts,
    cause === undefined ? undefined : { cause },
  );
}

/**
 * One acquire call's bookkeeping of its attempts: which are still in flight or failed (their
 * outcome is unknown), and whether the call has ended. An attempt that settles after the call gave
 * up, with anything but a plain "not acquired", triggers a give-back; one that settles while the
 * call still runs triggers nothing: a later attempt with the same token, or the call's own
 * give-up, covers it (a give-back sent then could delete the lock a later attempt just took).
 */
class CallState {
  private state: 'running' | 'acquired' | 'gave-up' = 'running';
  /** Some attempt failed or was abandoned: it may have applied without our knowing. */
  outcomeUnknown = false;
  /** When the latest attempt was sent: a lock it took expires by itself a TTL after that. */
  private lastSentAt = Number.NEGATIVE_INFINITY;

  constructor(readonly plan: AttemptPlan) {}

  finish(state: 'acquired' | 'gave-up'): void {
    this.state = state;
  }

  async settle(attempt: Promise<AttemptOutcome>, deadline: number): Promise<Settled<AttemptOutcome>> {
    this.lastSentAt = this.plan.clock.now();
    const settled = await settleBefore(attempt, deadline, this.plan.signal, this.plan.clock, (late) => {
      const harmless = late.kind === 'value' && !late.value.acquired && !late.value.leftState;
      if (this.state === 'gave-up' && !harmless) void this.giveBackWithin(0);
    }).catch((error: unknown) => {
      // Aborted while the attempt was in flight: its outcome is unknown.
      this.outcomeUnknown = true;
      throw error;
    });
    if (settled.kind !== 'value') this.outcomeUnknown = true;
    return settled;
  }

  /** Gives the token back in the background, reporting it; waits for it at most `ms`. */
  async giveBackWithin(ms: number): Promise<void> {
    const { plan } = this;
    const done = this.giveBack().then(
      (released) =>
        emitLockEvent({
          type: 'give-back',
          lockName: plan.name,
          token: plan.token,
          released,
          error: undefined,
        }),
      (error: unknown) =>
        emitLockEvent({
          type: 'give-back',
          lockName: plan.name,
          token: plan.token,
          released: undefined,
          error,
        }),
    );
    if (ms <= 0) return;
    if (!Number.isFinite(ms)) return done;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([done, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  /**
   * One give-back, retried on a transient failure once the call has ended: a token left holding the
   * lock would keep it, owned by nobody, for up to a TTL. Retries stop when that TTL (counted from
   * the latest attempt's send) has passed, since the key is then gone by itself, and on a
   * `LockError`. While the call still runs there is no retry: its next attempt uses the same token,
   * and a give-back arriving after it could delete the lock that attempt took.
   */
  private giveBack(): Promise<boolean> {
    const { plan } = this;
    return sendGiveBack(() => plan.giveBack(), {
      clock: plan.clock,
      firstDelayMs: GIVE_BACK_RETRY_FIRST_MS,
      maxDelayMs: GIVE_BACK_RETRY_MAX_MS,
      worthRetrying: (nextTryAt) => this.state === 'gave-up' && nextTryAt <= this.lastSentAt + plan.ttlMs,
    });
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
