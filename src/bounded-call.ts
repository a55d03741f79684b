import type { Clock } from './clock.js';
import { noReplyError, type Settled, settleBefore } from './deadline.js';
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

/**
 * The one way a lock waits for Redis outside its waiting loop: at most `replyTimeoutMs` (plus
 * `extraMs`). Resolves with the reply; rejects with a `LockError` as is (it says what to fix), the
 * signal's reason, or `RedisUnavailableError` for anything else (the client's own error as `cause`)
 * and for no reply in time (the client's account of its connection as `cause`), so that every
 * public call fails the same way, within the same bound, on every client.
 */
export async function boundedCall<T>(
  bound: CallBound,
  what: string,
  call: Promise<T>,
  options: BoundedCallOptions<T> = {},
): Promise<T> {
  const waitedMs = bound.replyTimeoutMs + (options.extraMs ?? 0);
  const reply = await settleBefore(
    call,
    bound.clock.now() + waitedMs,
    options.signal,
    bound.clock,
    options.onLate ?? ignoreLate,
  );
  if (reply.kind === 'value') return reply.value;
  if (reply.kind === 'error') {
    if (reply.error instanceof LockError) throw reply.error;
    throw new RedisUnavailableError(bound.name, `${what} failed`, { cause: reply.error });
  }
  const goesOn = options.goesOn ? `; ${options.goesOn}` : '';
  throw new RedisUnavailableError(bound.name, `${what} got no reply in time${goesOn}`, {
    cause: noReplyError(waitedMs, bound.disconnected()),
  });
}

function ignoreLate(): void {}
