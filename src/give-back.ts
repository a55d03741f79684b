import { Backoff, type BackoffSchedule } from './backoff.js';
import type { Clock } from './clock.js';
import { LockError } from './errors.js';
import { emitLockEvent } from './events.js';

/**
 * Sends a give-back (a compare-and-delete of one token) until it is answered: again after a failure
 * that may pass (a reset connection rejected it), on `schedule`, as long as `worthRetrying(nextTryAt)`
 * says the token may still hold the lock then (a token left behind keeps the lock, owned by nobody,
 * until its TTL runs out). A `LockError` (a closed client, a refused command) ends it at once.
 * Resolves with the reply; rejects with the last error.
 */
export function sendGiveBack(
  send: () => Promise<boolean>,
  clock: Clock,
  schedule: BackoffSchedule,
  worthRetrying: (nextTryAt: number) => boolean,
): Promise<boolean> {
  let first: Promise<boolean>;
  try {
    first = send();
  } catch (error) {
    first = Promise.reject(error);
  }
  // Answered at once (nearly every give-back: every release of a lease comes here): one reaction,
  // no async frame; the retry loop, and its back-off, start at the first failure.
  return first.catch((error: unknown) => retryGiveBack(error, send, clock, schedule, worthRetrying));
}

/** `sendGiveBack` after its first try failed with `error`. */
async function retryGiveBack(
  error: unknown,
  send: () => Promise<boolean>,
  clock: Clock,
  schedule: BackoffSchedule,
  worthRetrying: (nextTryAt: number) => boolean,
): Promise<boolean> {
  const backoff = new Backoff(schedule);
  let last = error;
  for (;;) {
    const delayMs = backoff.next();
    if (last instanceof LockError || !worthRetrying(clock.now() + delayMs)) throw last;
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    // A busy process's timer fires late: asked again, so that no retry goes out after the TTL.
    if (!worthRetrying(clock.now())) throw last;
    try {
      return await send();
    } catch (retryError) {
      last = retryError;
    }
  }
}

/** Reports how a give-back of `token` ended, as a `give-back` event. */
export function reportGiveBack(lockName: string, token: string, giveBack: Promise<boolean>): Promise<void> {
  return giveBack.then(
    (released) => emitLockEvent({ type: 'give-back', lockName, token, released, error: undefined }),
    (error: unknown) => emitLockEvent({ type: 'give-back', lockName, token, released: undefined, error }),
  );
}
