import type { Clock } from './clock.js';
import { DeadlineWait, noReplyError, type Settled } from './deadline.js';
import { LockError, RedisUnavailableError } from './errors.js';

/** What bounds one lock's round trips: whose they are, on which clock, for how long. */
export interface CallBound {
  /** The lock's name, for the errors. */
  readonly name: string;
  readonly clock: Clock;
  readonly replyTimeoutMs: number;
  /** Why the client has no connection right now, when it knows: the cause of a call left unanswered. */
  disconnected(): string | undefined;
}

export interface BoundedCallOptions<T> {
  /** Time allowed beyond `replyTimeoutMs` (a `WAIT`'s own timeout). */
  readonly extraMs?: number;
  readonly signal?: AbortSignal | undefined;
  /** What happens to the call once nobody waits for it, said in the error ("it goes on ..."). */
  readonly goesOn?: string;
  /** Told how the call ended when it ended after we stopped waiting. */
  readonly onLate?: (late: Settled<T>) => void;
}

const NO_OPTIONS: BoundedCallOptions<unknown> = Object.freeze({});

/**
 * The one way a lock waits for Redis outside its waiting loop: at most `replyTimeoutMs` (plus
 * `extraMs`). Resolves with the reply; rejects with a `LockError` as is (it says what to fix), the
 * signal's reason, or `RedisUnavailableError` for anything else (the client's own error as `cause`)
 * and for no reply in time (the client's account of its connection as `cause`), so that every
 * public call fails the same way, within the same bound, on every client. The bound is in real
 * time, whatever `bound.clock` does meanwhile. Never throws: a failure to start waiting is the
 * returned promise's rejection.
 */
export function boundedCall<T>(
  bound: CallBound,
  what: string,
  call: Promise<T>,
  options: BoundedCallOptions<T> = NO_OPTIONS as BoundedCallOptions<T>,
): Promise<T> {
  try {
    return new BoundedCall(bound, what, call, options).promise;
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * One bounded call: it settles its own promise with the reply or the typed error (no `Settled`
 * record, no async frame in between), its bound kept by the shared deadline checker.
 */
class BoundedCall<T> extends DeadlineWait<T, T> {
  private readonly waitedMs: number;

  constructor(
    private readonly bound: CallBound,
    private readonly what: string,
    call: Promise<T>,
    private readonly options: BoundedCallOptions<T>,
  ) {
    // `replyTimeoutMs` from now: the deadline `clock.now() + waitedMs` less `clock.now()`.
    const waitedMs = bound.replyTimeoutMs + (options.extraMs ?? 0);
    super(call, waitedMs, options.signal);
    this.waitedMs = waitedMs;
  }

  protected onValue(value: T): void {
    this.resolve(value);
  }

  protected onError(error: unknown): void {
    if (error instanceof LockError) this.reject(error);
    else this.reject(new RedisUnavailableError(this.bound.name, `${this.what} failed`, { cause: error }));
  }

  protected onAbandoned(): void {
    const { goesOn } = this.options;
    this.reject(
      new RedisUnavailableError(
        this.bound.name,
        `${this.what} got no reply in time${goesOn ? `; ${goesOn}` : ''}`,
        {
          cause: noReplyError(this.waitedMs, this.bound.disconnected()),
        },
      ),
    );
  }

  protected onLate(late: Settled<T>): void {
    this.options.onLate?.(late);
  }
}
