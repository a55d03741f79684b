import { isTransientRedisError } from '../adapters/run-script.js';
import type { ChannelWatch, MessageFilter, SubscriberHub } from '../adapters/subscriber-hub.js';
import type { Clock } from '../clock.js';
import { LockTimeoutError, TooManyAttemptsError } from '../errors.js';
import { nextWaitMs } from '../timing.js';

/** What one attempt at a lock tells: we got it, or how long the holder still has. */
export type AttemptOutcome =
  | { readonly acquired: true; readonly fencingToken: number; readonly sentAt: number }
  | { readonly acquired: false; readonly holderPttlMs: number };

export interface AcquisitionPlan {
  readonly name: string;
  /**
   * The release channel to wake on, and the hub that carries it (undefined: timed waits only);
   * `accept`, when given, picks the messages that wake this waiter.
   */
  readonly wake:
    | { readonly hub: SubscriberHub; readonly channel: string; readonly accept?: MessageFilter }
    | undefined;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly retryDelayMs: number;
  readonly retryJitterMs: number;
  readonly signal: AbortSignal | undefined;
  readonly clock: Clock;
  readonly random?: () => number;
  /** One attempt (one round trip). */
  attempt(): Promise<AttemptOutcome>;
  /**
   * Called when an attempt we stopped waiting for (timeout, abort) turns out to have acquired the
   * lock: it must be released, or it would sit there until its TTL runs out.
   */
  releaseAbandoned(): void;
}

export interface Acquired {
  readonly outcome: Extract<AttemptOutcome, { acquired: true }>;
  readonly attempts: number;
}

const ABANDONED = Symbol('abandoned');

/**
 * The waiting loop shared by every single-node primitive.
 *
 * The first attempt is sent at once (an uncontended lock costs one round trip). After a failure
 * the waiter subscribes to the release channel *before* its next attempt, so a release between
 * "try" and "wait" is never missed, then waits for the release message or at most
 * min(holder's PTTL, retryDelayMs, time left): a lost message only delays a waiter. Transient
 * Redis errors are retried while time is left; the last one becomes the timeout's `cause`.
 */
export async function acquireWithWaiting(plan: AcquisitionPlan): Promise<Acquired> {
  const { clock, signal } = plan;
  const random = plan.random ?? Math.random;
  const deadline = clock.now() + plan.timeoutMs;
  let attempts = 0;
  let lastError: unknown;
  let watch: ChannelWatch | undefined = plan.wake?.hub.watchIfActive(plan.wake.channel, plan.wake.accept);
  let subscribeFailed = false;

  try {
    for (;;) {
      signal?.throwIfAborted();
      attempts += 1;
      let outcome: AttemptOutcome | typeof ABANDONED;
      try {
        outcome = await settleBefore(plan.attempt(), deadline, signal, clock, () => plan.releaseAbandoned());
      } catch (error) {
        if (!isTransientRedisError(error) || signal?.aborted) throw error;
        lastError = error;
        outcome = { acquired: false, holderPttlMs: -1 };
      }
      if (outcome === ABANDONED) {
        signal?.throwIfAborted();
        throw new LockTimeoutError(plan.name, plan.timeoutMs, attempts, { cause: lastError });
      }
      if (outcome.acquired) return { outcome, attempts };

      if (attempts > plan.retries) throw new TooManyAttemptsError(plan.name, attempts);
      const remainingMs = deadline - clock.now();
      if (remainingMs <= 0)
        throw new LockTimeoutError(plan.name, plan.timeoutMs, attempts, { cause: lastError });

      if (!watch && plan.wake && !subscribeFailed) {
        try {
          const watching = plan.wake.hub.watch(plan.wake.channel, plan.wake.accept);
          const settled = await settleBefore(watching, deadline, signal, clock, () => {
            void watching.then((w) => w.close()).catch(() => {});
          });
          watch = settled === ABANDONED ? undefined : settled;
          // Subscribed now: try again at once, since the holder may have released meanwhile.
          // With a fixed retry delay a missed release costs at most that delay, and the caller
          // asked for that pace between attempts (redis_exp_lock's `interval`), so we keep it.
          if (watch && !Number.isFinite(plan.retryDelayMs)) continue;
        } catch (error) {
          if (signal?.aborted) throw signal.reason;
          // No pub/sub (a restricted client, a proxy without it): fall back to timed waits.
          subscribeFailed = true;
          lastError = error;
        }
      }

      const waitMs = nextWaitMs({
        holderPttlMs: outcome.holderPttlMs,
        retryDelayMs: Number.isFinite(plan.retryDelayMs) ? plan.retryDelayMs : undefined,
        jitterMs: plan.retryJitterMs,
        remainingMs: deadline - clock.now(),
        random,
      });
      if (watch) await watch.next(waitMs, signal);
      else await sleep(waitMs, signal);
    }
  } finally {
    watch?.close();
  }
}

/**
 * Resolves with the promise's value, or ABANDONED when the deadline passes first; rejects with
 * the signal's reason when it aborts first. When the promise settles after we stopped waiting
 * (with a value or an error: a lost reply may still have applied), `onLate` runs, so nothing
 * acquired in the meantime is left behind.
 */
function settleBefore<T>(
  promise: Promise<T>,
  deadline: number,
  signal: AbortSignal | undefined,
  clock: Clock,
  onLate: () => void,
): Promise<T | typeof ABANDONED> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = () => {
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = () => {
      finish();
      reject(signal?.reason);
    };
    const remaining = deadline - clock.now();
    const timer = Number.isFinite(remaining)
      ? setTimeout(
          () => {
            finish();
            resolve(ABANDONED);
          },
          Math.max(0, remaining),
        )
      : undefined;
    signal?.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        if (settled) onLate();
        else {
          finish();
          resolve(value);
        }
      },
      (error: unknown) => {
        if (settled) onLate();
        else {
          finish();
          reject(error);
        }
      },
    );
  });
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
