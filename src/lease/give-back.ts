import type { Clock } from '../clock.js';
import { LockError } from '../errors.js';

/**
 * Sends a give-back (a compare-and-delete of one token) until it is answered: again after a failure
 * that may pass (a reset connection rejected it), waiting `firstDelayMs`, doubling up to
 * `maxDelayMs`, as long as `worthRetrying(nextTryAt)` says the token may still hold the lock then (a
 * token left behind keeps the lock, owned by nobody, until its TTL runs out). A `LockError` (a closed
 * client, a refused command) ends it at once. Resolves with the reply; rejects with the last error.
 */
export async function sendGiveBack(
  send: () => Promise<boolean>,
  options: {
    readonly clock: Clock;
    readonly firstDelayMs: number;
    readonly maxDelayMs: number;
    readonly worthRetrying: (nextTryAt: number) => boolean;
  },
): Promise<boolean> {
  let delayMs = options.firstDelayMs;
  for (;;) {
    try {
      return await send();
    } catch (error) {
      if (error instanceof LockError || !options.worthRetrying(options.clock.now() + delayMs)) throw error;
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      delayMs = Math.min(options.maxDelayMs, delayMs * 2);
    }
  }
}
