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
export async function sendGiveBack(
  send: () => Promise<boolean>,
  clock: Clock,
  schedule: BackoffSchedule,
  worthRetrying: (nextTryAt: number) => boolean,
): Promise<boolean> {
  // Made at the first failure: a give-back answered at once (nearly every one) allocates none.
  let backoff: Backoff | undefined;
  for (;;) {
    try {
      return await send();
    } catch (error) {
      backoff ??= new Backoff(schedule);
      const delayMs = backoff.next();
      if (error instanceof LockError || !worthRetrying(clock.now() + delayMs)) throw error;
      await new Promise((resolve) => setTimeout(resolve, delayMs));
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
