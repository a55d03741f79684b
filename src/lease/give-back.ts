import type { Backoff } from '../backoff.js';
import type { Clock } from '../clock.js';
import { LockError } from '../errors.js';
import { emitLockEvent } from '../events.js';

/**
 * Sends a give-back (a compare-and-delete of one token) until it is answered: again after a failure
 * that may pass (a reset connection rejected it), on `backoff`, as long as `worthRetrying(nextTryAt)`
 * says the token may still hold the lock then (a token left behind keeps the lock, owned by nobody,
 * until its TTL runs out). A `LockError` (a closed client, a refused command) ends it at once.
 * Resolves with the reply; rejects with the last error.
 */
export async function sendGiveBack(
  send: () => Promise<boolean>,
  clock: Clock,
  backoff: Backoff,
  worthRetrying: (nextTryAt: number) => boolean,
): Promise<boolean> {
  for (;;) {
    try {
      return await send();
    } catch (error) {
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
