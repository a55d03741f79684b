import { Backoff } from '../backoff.js';
import { elapsedSince } from '../clock.js';
import { noReplyError, type Settled, settleBefore } from '../deadline.js';
import {
  isRetryable,
  LockError,
  LockTimeoutError,
  RedisUnavailableError,
  TooManyAttemptsError,
  unavailableError,
} from '../errors.js';
import { emitLockEvent } from '../events.js';
import { reportGiveBack, sendGiveBack } from '../give-back.js';
import type { Grant, GrantPath, LockBackend, Plan, Won } from '../plan.js';
import { nextWaitMs, timerDelayMs, validityLeftMs } from '../timing.js';
import type { Attempts, Outcome } from './attempts.js';
import type { Watch } from './wake.js';

/** How long a caller that gives up waits for its give-back before rejecting anyway. */
const GIVE_BACK_GRACE_MS = 50;

/**
 * A give-back that failed on a transient error (a reset connection rejected it) is tried again on
 * this schedule while the token may still hold the lock.
 */
const GIVE_BACK_RETRY = { firstMs: 5, maxMs: 50 } as const;

/** Polling when pub/sub is unavailable: from 10 ms, doubling up to 250 ms, 50–100 % of each step. */
const POLLING = { firstMs: 10, maxMs: 250, jitter: 'half' } as const;

/**
 * The path to a grant of a lock whose calls attempt as `attemptsOf` says, over `backend`: the
 * waiting loop, or one attempt. A try whose signal aborted while its attempt was in flight gives the
 * grant back and rejects with the signal's reason.
 */
export function waitingPath(attemptsOf: (plan: Plan) => Attempts, backend: LockBackend): GrantPath {
  return {
    wait: (plan) => acquireWithWaiting(plan, attemptsOf(plan), backend),
    once: async (plan) => {
      const grant = await attemptOnce(plan, attemptsOf(plan), backend);
      if (!grant) return undefined;
      const { signal } = plan.options;
      if (signal?.aborted) {
        await backend.release(plan.token).catch(() => {});
        throw signal.reason;
      }
      return { grant, attempts: 1 };
    },
  };
}

/**
 * The waiting loop of every lock kind: it knows a plan, the kind's attempts and where the call is
 * woken, never the kind itself.
 *
 * The first attempt is sent at once (an uncontended lock costs one round trip). After a failure
 * the waiter subscribes to its wake channels *before* its next attempt, so a release between
 * "try" and "wait" is never missed, then waits for a message or at most min(holder's PTTL,
 * retryDelayMs, time left): a lost message only delays a waiter. If subscribing fails, it polls
 * on a short back-off instead (never the holder's whole TTL).
 *
 * `retries` counts attempts that found the lock held after a real wait: the attempt right after
 * subscribing, renewals and wake-ups by a message are free. Errors: a `LockError` says what to do
 * and is never retried unless `isRetryable` says it may pass (a quorum that failed). Anything else
 * is transient and retried while time is left; if the caller's time or retries run out while the
 * last attempt failed that way, the rejection says Redis was unavailable (cause: the last error).
 * An attempt unanswered for `replyTimeoutMs` (at most a TTL: a later reply can never yield a usable
 * lease) is abandoned and counts as failed. The deadline bounds the wait for the lock, not a reply:
 * an attempt sent before it is waited for, so a call ends by `timeoutMs` + `replyTimeoutMs`. With no deadline,
 * Redis unreachable for longer than one TTL in a row ends the wait.
 *
 * Giving back: once the call gives up after any attempt, its token is given back best-effort (the
 * attempt may have applied, or left a queue entry), and again when an attempt still in flight
 * settles later with anything but a plain "not acquired".
 */
export async function acquireWithWaiting(plan: Plan, attempts: Attempts, backend: LockBackend): Promise<Won> {
  const { clock, signal, retries, retryDelayMs, retryJitterMs } = plan.options;
  const { deadline } = plan;
  const { wake } = attempts;
  const call = new CallState(plan, backend);
  let poll: Backoff | undefined;
  let sent = 0;
  let counted = 0;
  let countNext = true;
  let lastError: unknown;
  let lastFailed = false;
  let lastGrantTooLate = false;
  let failingSince: number | undefined;
  let watch: Watch | undefined = wake?.ifActive();
  let subscribeFailed = false;
  let contended = false;

  try {
    for (;;) {
      signal?.throwIfAborted();
      sent += 1;
      if (countNext) counted += 1;
      const sentAt = clock.now();
      let outcome: Outcome;
      // An attempt waits for its reply up to `replyTimeoutMs`, even past the caller's deadline:
      // `timeoutMs` bounds the wait for the lock, never a reply (an attempt sent at the deadline,
      // or `timeoutMs: 0` on a free lock, is decided by that reply). Unanswered by then, Redis failed.
      const attempt = attempts.attempt();
      const settled =
        attempt instanceof Promise ? await call.settle(attempt, sentAt + replyBoundMs(plan)) : known(attempt);
      if (settled.kind === 'value') {
        lastGrantTooLate = !usable(settled.value, plan);
        outcome = lastGrantTooLate ? await givenBack(call, plan, backend) : settled.value;
        lastFailed = false;
        failingSince = undefined;
      } else {
        if (settled.kind === 'error') {
          if (!isRetryable(settled.error) || signal?.aborted) throw settled.error;
          lastError = settled.error;
        } else {
          lastError = noReply(backend, clock.now() - sentAt);
        }
        emitLockEvent({ type: 'attempt-failed', lockName: plan.name, error: lastError });
        if (!countNext) counted += 1; // an attempt that failed is never free
        lastFailed = true;
        failingSince ??= sentAt;
        const failingMs = clock.now() - failingSince;
        if (!Number.isFinite(deadline) && failingMs >= plan.options.ttlMs) {
          throw unavailableError(
            plan.name,
            `unreachable for ${Math.round(failingMs)} ms, longer than the TTL`,
            lastError,
          );
        }
        outcome = { acquired: false, holderPttlMs: -1 };
      }
      if (outcome.acquired) {
        call.finish('acquired');
        return { grant: outcome, attempts: sent };
      }

      if (counted > retries) {
        throw lastFailed
          ? unavailableError(plan.name, `the last of ${sent} attempts failed`, lastError)
          : new TooManyAttemptsError(plan.name, sent, { lastGrantTooLate });
      }
      if (deadline - clock.now() <= 0) {
        throw lastFailed
          ? unavailableError(plan.name, 'no reply in time', lastError)
          : timeout(plan, sent, lastError);
      }

      if (!contended && !lastFailed) {
        contended = true;
        emitLockEvent({ type: 'contended', lockName: plan.name });
      }

      // Subscribe once the lock was seen held (not while Redis is failing: that would only open a
      // subscriber connection to a server that cannot be reached).
      if (!watch && wake && !subscribeFailed && !lastFailed) {
        const subscribed = await settleBefore(
          wake.watch(),
          Math.min(deadline, clock.now() + plan.options.ttlMs),
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
          if (!Number.isFinite(retryDelayMs)) {
            countNext = false;
            continue;
          }
        } else {
          // No pub/sub (ACL without channels, a proxy without it, a subscriber that cannot connect):
          // poll with a short back-off, bounded by the holder's PTTL. Reported once per call.
          subscribeFailed = true;
          if (subscribed.kind !== 'error') wake.noteSubscribeFailed();
          const error =
            subscribed.kind === 'error' ? subscribed.error : new Error('SUBSCRIBE did not answer');
          emitLockEvent({ type: 'subscribe-failed', lockName: plan.name, error });
        }
      }

      const holderWaitMs = nextWaitMs({
        holderPttlMs: outcome.holderPttlMs,
        retryDelayMs: Number.isFinite(retryDelayMs) ? retryDelayMs : undefined,
        jitterMs: retryJitterMs,
        remainingMs: deadline - clock.now(),
        random: Math.random,
      });
      let waitMs = Math.min(holderWaitMs, outcome.renewInMs ?? Number.POSITIVE_INFINITY);
      if (!watch && subscribeFailed && !lastFailed) {
        const first = poll === undefined;
        poll ??= new Backoff(POLLING);
        const pollDelayMs = poll.next();
        if (first) emitLockEvent({ type: 'polling', lockName: plan.name, delayMs: pollDelayMs });
        waitMs = Math.min(waitMs, pollDelayMs);
      }
      const boundedByHolder = waitMs >= holderWaitMs;
      waitMs = timerDelayMs(waitMs);
      const woke = watch
        ? await watch.next(waitMs, signal)
        : await sleep(waitMs, signal).then(() => 'timeout');
      // A message (a hand-off, a release), a renewal or a poll before the holder's time is up is
      // not a retry.
      countNext = woke === 'message' ? false : boundedByHolder;
    }
  } catch (error) {
    call.finish('gave-up');
    if (sent > 0) await call.giveBackWithin(GIVE_BACK_GRACE_MS);
    throw error;
  } finally {
    watch?.close();
  }
}

/**
 * One attempt that never waits for the lock (`tryAcquire()`): bounded by `replyTimeoutMs` (and by
 * the lease TTL, since a reply later than that can never yield a usable lease). Resolves with the
 * grant, or undefined when the lock was not free; rejects with the signal's reason, a `LockError`
 * as is, or `RedisUnavailableError` (no reply in time, with the client's account of its connection
 * as `cause`, or a transient error). When it rejects and the attempt's outcome is unknown, the
 * token is given back, now and again when a late reply arrives.
 */
export async function attemptOnce(
  plan: Plan,
  attempts: Attempts,
  backend: LockBackend,
): Promise<Grant | undefined> {
  const call = new CallState(plan, backend);
  const { clock, signal } = plan.options;
  signal?.throwIfAborted();
  let settled: Settled<Outcome>;
  const boundMs = replyBoundMs(plan);
  try {
    const attempt = attempts.attempt();
    settled = attempt instanceof Promise ? await call.settle(attempt, clock.now() + boundMs) : known(attempt);
  } catch (error) {
    call.finish('gave-up');
    throw error;
  }
  if (settled.kind === 'value') {
    let outcome: Outcome;
    try {
      outcome = usable(settled.value, plan) ? settled.value : await givenBack(call, plan, backend);
    } catch (error) {
      // The give-back goes on, retried as a given-up call's.
      call.finish('gave-up');
      throw error;
    }
    call.finish(outcome.acquired ? 'acquired' : 'gave-up');
    return outcome.acquired ? outcome : undefined;
  }
  call.finish('gave-up');
  void call.giveBackWithin(0);
  if (settled.kind === 'abandoned') {
    throw new RedisUnavailableError(plan.name, `no reply within ${boundMs} ms`, {
      cause: noReply(backend, boundMs),
    });
  }
  if (settled.error instanceof LockError) throw settled.error;
  throw new RedisUnavailableError(plan.name, 'the attempt failed', { cause: settled.error });
}

/**
 * A grant is used only with validity left. One that has none (its reply came after the lease would
 * have run out: Redis paused, a slow link, a frozen waiter that resumed, a hand-off heard too late)
 * would be a lease born lost, and `using()` would run work the lock no longer covers: `givenBack`
 * gives it back (compare-and-delete; a queued kind hands it on to the next waiter), and it counts
 * as "not acquired".
 *
 * Only the call's *current* attempt may do this, here, and it waits for the give-back before the
 * next attempt is sent: every attempt of one call uses the same token, so a give-back sent by an
 * attempt the loop had already abandoned (found by the fault suite) could delete the lock that a
 * later attempt of the same call had just taken — a second holder.
 */
function usable(outcome: Outcome, plan: Plan): boolean {
  if (!outcome.acquired) return true;
  const { ttlMs, driftFactor, clock } = plan.options;
  const elapsedMs = elapsedSince(clock, { mono: outcome.sentAt, wall: outcome.sentAtWall });
  return validityLeftMs(ttlMs, driftFactor, elapsedMs) > 0;
}

/**
 * Gives an unusable grant back (see `usable`) and waits for it: the attempt counts as "not acquired".
 * The wait is bounded as an attempt's reply is (`replyTimeoutMs`, at most a TTL) and ends when the
 * caller's signal aborts. The call's next attempt must not go out before the give-back was answered,
 * so a give-back still unanswered then ends the call: `RedisUnavailableError` (the give-back goes
 * on in the background, retried as a given-up call's). Unbounded, a client that never answered it
 * (node-redis 5 hung after a reset) held the call, its timeout and its signal ignored, for ever.
 */
async function givenBack(call: CallState, plan: Plan, backend: LockBackend): Promise<Outcome> {
  const { clock, signal } = plan.options;
  const boundMs = replyBoundMs(plan);
  const settled = await settleBefore(
    call.giveBackWithin(Number.POSITIVE_INFINITY),
    clock.now() + boundMs,
    signal,
    clock,
    () => {},
  );
  if (settled.kind === 'abandoned') {
    throw new RedisUnavailableError(
      plan.name,
      'a grant came too late to use, and giving it back got no reply in time',
      { cause: noReply(backend, boundMs) },
    );
  }
  return { acquired: false, holderPttlMs: 0 };
}

/** An outcome the lock kind already knew (no round trip), as the waiting loop reads a reply. */
function known(outcome: Outcome): Settled<Outcome> {
  return { kind: 'value', value: outcome };
}

/** How long one attempt waits for its reply: `replyTimeoutMs`, and never more than a TTL. */
function replyBoundMs(plan: Plan): number {
  return Math.min(plan.options.ttlMs, plan.options.replyTimeoutMs);
}

/** The cause reported for an attempt without a reply: the client's own account, when it has one. */
function noReply(backend: LockBackend, waitedMs: number): Error {
  return noReplyError(waitedMs, backend.disconnected());
}

function timeout(plan: Plan, attempts: number, cause: unknown): LockTimeoutError {
  const { timeoutMs } = plan.options;
  emitLockEvent({ type: 'timed-out', lockName: plan.name, timeoutMs, attempts });
  const options = cause === undefined ? undefined : { cause };
  return new LockTimeoutError(plan.name, plan.options.timeoutMs, attempts, options);
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
  /** When the latest attempt was sent: a lock it took expires by itself a TTL after that. */
  private lastSentAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly plan: Plan,
    private readonly backend: LockBackend,
  ) {}

  finish(state: 'acquired' | 'gave-up'): void {
    this.state = state;
  }

  settle(attempt: Promise<Outcome>, deadline: number): Promise<Settled<Outcome>> {
    const { clock, signal } = this.plan.options;
    this.lastSentAt = clock.now();
    return settleBefore(attempt, deadline, signal, clock, (late) => {
      const harmless = late.kind === 'value' && !late.value.acquired && !late.value.leftState;
      if (this.state === 'gave-up' && !harmless) void this.giveBackWithin(0);
    });
  }

  /** Gives the token back in the background, reporting it; waits for it at most `ms`. */
  async giveBackWithin(ms: number): Promise<void> {
    const done = reportGiveBack(this.plan.name, this.plan.token, this.giveBack());
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
    const { plan, backend } = this;
    return sendGiveBack(
      () => backend.release(plan.token),
      plan.options.clock,
      GIVE_BACK_RETRY,
      (nextTryAt) => this.state === 'gave-up' && nextTryAt <= this.lastSentAt + plan.options.ttlMs,
    );
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
