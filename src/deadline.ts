import type { Clock } from './clock.js';
import { timerDelayMs } from './timing.js';

/** How a promise ended as seen by someone who would wait for it only until a deadline. */
export type Settled<T> =
  | { readonly kind: 'value'; readonly value: T }
  | { readonly kind: 'error'; readonly error: unknown }
  | { readonly kind: 'abandoned' };

/**
 * Settles with the promise's outcome, or `abandoned` when the deadline passes first; rejects with
 * the signal's reason when it aborts first. When the promise settles after we stopped waiting,
 * `onLate` is told how.
 */
export function settleBefore<T>(
  promise: Promise<T>,
  deadline: number,
  signal: AbortSignal | undefined,
  clock: Clock,
  onLate: (late: Settled<T>) => void,
): Promise<Settled<T>> {
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
      ? setTimeout(() => {
          finish();
          resolve({ kind: 'abandoned' });
        }, timerDelayMs(remaining))
      : undefined;
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        if (settled) onLate({ kind: 'value', value });
        else {
          finish();
          resolve({ kind: 'value', value });
        }
      },
      (error: unknown) => {
        if (settled) onLate({ kind: 'error', error });
        else {
          finish();
          resolve({ kind: 'error', error });
        }
      },
    );
  });
}

/**
 * The cause a call reports when Redis did not answer within `waitedMs`: with the client's own
 * account of its connection (`why`, e.g. "reconnecting") when it has one.
 */
export function noReplyError(waitedMs: number, why: string | undefined): Error {
  return new Error(`No reply from Redis within ${Math.round(waitedMs)} ms${why ? `: ${why}` : ''}`);
}
