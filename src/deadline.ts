import type { Clock } from './clock.js';
import { type Expiring, type OwnTimer, unwatch, watchFor } from './deadline-checker.js';

/** How a promise ended as seen by someone who would wait for it only until a deadline. */
export type Settled<T> =
  | { readonly kind: 'value'; readonly value: T }
  | { readonly kind: 'error'; readonly error: unknown }
  | { readonly kind: 'abandoned' };

/** Listener options of every wait's abort listener, shared rather than made per call. */
const ONCE = Object.freeze({ once: true });

/** The resolving functions of the promise being made: a shared executor, not a closure per wait. */
let madeResolve: ((value: never) => void) | undefined;
let madeReject: ((error: unknown) => void) | undefined;
function capture(resolve: (value: never) => void, reject: (error: unknown) => void): void {
  madeResolve = resolve;
  madeReject = reject;
}

/**
 * One wait for a call's promise for `waitMs` real milliseconds (Infinity: no bound) or until a
 * signal aborts, whichever comes first; what each ending resolves `promise` with is the
 * subclass's. The bound is kept by the shared `DeadlineChecker` (no timer of its own, unless a
 * test mocked the timers: see `watchFor`) and the signal is listened to with the wait itself as the
 * listener (`handleEvent`): a wait allocates itself, its promise and the two callbacks it hands the
 * call's promise, nothing else.
 *
 * The constructor throws only if the signal or the call's `then` does; it stops watching first.
 */
export abstract class DeadlineWait<T, R> implements Expiring {
  /** @internal The checker's bookkeeping (see `Expiring`). */
  due = 0;
  /** @internal */
  slot = -1;
  /** @internal */
  own: OwnTimer | undefined = undefined;
  readonly promise: Promise<R>;
  protected readonly resolve: (result: R) => void;
  protected readonly reject: (error: unknown) => void;
  /** Still waiting: nothing ended the wait yet. */
  private waiting = true;

  constructor(
    call: Promise<T>,
    waitMs: number,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.promise = new Promise<R>(capture);
    this.resolve = madeResolve as (result: R) => void;
    this.reject = madeReject as (error: unknown) => void;
    try {
      if (signal?.aborted) {
        this.waiting = false;
        this.reject(signal.reason);
      } else {
        if (Number.isFinite(waitMs)) watchFor(this, waitMs);
        signal?.addEventListener('abort', this, ONCE);
      }
      call.then(
        (value) => this.settled(value),
        (error: unknown) => this.failed(error),
      );
    } catch (error) {
      this.end();
      // Aborted already: the promise is rejected but nobody will have it.
      this.promise.then(undefined, ignore);
      throw error;
    }
  }

  /** The call fulfilled: in time, or after the wait ended. */
  protected abstract onValue(value: T): void;
  protected abstract onError(error: unknown): void;
  /** The deadline passed first. */
  protected abstract onAbandoned(): void;
  /** The call settled after the wait ended (`late` says how). */
  protected abstract onLate(late: Settled<T>): void;

  /** @internal The signal aborted: the wait rejects with its reason. */
  handleEvent(): void {
    if (!this.end()) return;
    this.reject(this.signal?.reason);
  }

  /** @internal The checker found the deadline passed. */
  expire(): void {
    if (!this.end()) return;
    this.onAbandoned();
  }

  private settled(value: T): void {
    if (this.end()) this.onValue(value);
    else this.onLate({ kind: 'value', value });
  }

  private failed(error: unknown): void {
    if (this.end()) this.onError(error);
    else this.onLate({ kind: 'error', error });
  }

  /** Ends the wait: true the first time (the checker and the signal let go of it), false after. */
  private end(): boolean {
    if (!this.waiting) return false;
    this.waiting = false;
    unwatch(this);
    this.signal?.removeEventListener('abort', this);
    return true;
  }
}

/** A wait that reports how the call ended (`Settled`), for callers that decide for themselves. */
class SettleBefore<T> extends DeadlineWait<T, Settled<T>> {
  constructor(
    call: Promise<T>,
    waitMs: number,
    signal: AbortSignal | undefined,
    private readonly late: (late: Settled<T>) => void,
  ) {
    super(call, waitMs, signal);
  }

  protected onValue(value: T): void {
    this.resolve({ kind: 'value', value });
  }

  protected onError(error: unknown): void {
    this.resolve({ kind: 'error', error });
  }

  protected onAbandoned(): void {
    this.resolve(ABANDONED);
  }

  protected onLate(late: Settled<T>): void {
    this.late(late);
  }
}

function ignore(): void {}

const ABANDONED: Settled<never> = Object.freeze({ kind: 'abandoned' });

/**
 * Settles with the promise's outcome, or `abandoned` when the deadline passes first; rejects with
 * the signal's reason when it aborts first. When the promise settles after we stopped waiting,
 * `onLate` is told how. `deadline` is on `clock`, but the wait is bounded in real time: it ends
 * once `deadline - clock.now()` real milliseconds have passed, whatever `clock` does meanwhile (a
 * frozen or slowed test clock never makes it hang). Never throws: a failure to start waiting (the
 * clock's, the signal's) is the returned promise's rejection.
 */
export function settleBefore<T>(
  promise: Promise<T>,
  deadline: number,
  signal: AbortSignal | undefined,
  clock: Clock,
  onLate: (late: Settled<T>) => void,
): Promise<Settled<T>> {
  try {
    return new SettleBefore(promise, deadline - clock.now(), signal, onLate).promise;
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * The cause a call reports when Redis did not answer within `waitedMs`: with the client's own
 * account of its connection (`why`, e.g. "reconnecting") when it has one.
 */
export function noReplyError(waitedMs: number, why: string | undefined): Error {
  return new Error(`No reply from Redis within ${Math.round(waitedMs)} ms${why ? `: ${why}` : ''}`);
}
