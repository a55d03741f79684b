/**
 * What Locksmith handles by itself, made visible: a subscriber that could not subscribe, waiting
 * that fell back to polling, an extension retried, a best-effort give-back that failed, a lease
 * lost. Nothing here changes behaviour; it reports.
 *
 * Published on one `node:diagnostics_channel` channel, `locksmith`, so reporting costs nothing while
 * no one listens and needs no reference to the lock objects:
 *
 * ```ts
 * import { subscribeLockEvents } from 'redis-locksmith';
 * const stop = subscribeLockEvents((event) => log.warn(event, `locksmith: ${event.type}`));
 * ```
 */
import diagnostics from 'node:diagnostics_channel';

/** The `node:diagnostics_channel` name every event is published on. */
export const LOCK_EVENTS_CHANNEL = 'locksmith';

/** Every event carries the lock's name (as given to the lock) and its type. */
export type LockEvent =
  /** SUBSCRIBE failed (ACL without channel permission, a proxy without pub/sub, ...): waiters poll. */
  | { readonly type: 'subscribe-failed'; readonly lockName: string; readonly error: unknown }
  /** A waiter is waiting by bounded polling instead of release messages (see `subscribe-failed`). */
  | { readonly type: 'polling'; readonly lockName: string; readonly delayMs: number }
  /** An automatic extension failed and will be retried while validity remains. */
  | {
      readonly type: 'extend-failed';
      readonly lockName: string;
      readonly error: unknown;
      readonly retryInMs: number | undefined;
    }
  /**
   * A token whose outcome was unknown (a lost reply, a caller that gave up) was given back, or the
   * give-back itself failed (then the key expires by its TTL).
   */
  | {
      readonly type: 'give-back';
      readonly lockName: string;
      readonly token: string;
      readonly released: boolean | undefined;
      readonly error: unknown;
    }
  /** A transient Redis error during an acquisition; the attempt is retried. */
  | { readonly type: 'attempt-failed'; readonly lockName: string; readonly error: unknown }
  /**
   * An acquisition took the lock: `waitMs` from the call to the grant (one round trip for a free
   * lock), `kind` the lock's class (`Mutex`, `Semaphore`, `ReadLock`, ...).
   */
  | {
      readonly type: 'acquired';
      readonly lockName: string;
      readonly kind: string;
      readonly waitMs: number;
      readonly attempts: number;
      readonly fencingToken: number;
    }
  /** A lease was released by its holder (`release()`, `using()`'s end), `heldMs` after its grant. */
  | { readonly type: 'released'; readonly lockName: string; readonly heldMs: number }
  /** An `acquire()` found the lock held and waits for it (once per call). */
  | { readonly type: 'contended'; readonly lockName: string }
  /** An `acquire()` gave up after `timeoutMs` (it rejects with `LockTimeoutError`). */
  | {
      readonly type: 'timed-out';
      readonly lockName: string;
      readonly timeoutMs: number;
      readonly attempts: number;
    }
  /** A lease was lost (its `signal` aborted). */
  | {
      readonly type: 'lock-lost';
      readonly lockName: string;
      readonly reason: string;
      readonly error: unknown;
    };

export type LockEventType = LockEvent['type'];

const channel = diagnostics.channel(LOCK_EVENTS_CHANNEL);

/**
 * Whether anyone listens: events of the hot path (acquired, released) check it before they read a
 * clock or build the event, so they cost nothing while nobody listens.
 */
export function lockEventsObserved(): boolean {
  return channel.hasSubscribers;
}

/** Publishes an event; a no-op while nobody listens. Listener errors never reach the lock. */
export function emitLockEvent(event: LockEvent): void {
  if (!channel.hasSubscribers) return;
  try {
    channel.publish(event);
  } catch {
    // diagnostics_channel reports listener errors on process 'uncaughtException' asynchronously;
    // a throwing listener must not break a lock operation.
  }
}

/** Calls `listener` for every Locksmith event in this process; returns a function that stops it. */
export function subscribeLockEvents(listener: (event: LockEvent) => void): () => void {
  const onMessage = (message: unknown) => listener(message as LockEvent);
  diagnostics.subscribe(LOCK_EVENTS_CHANNEL, onMessage);
  return () => {
    diagnostics.unsubscribe(LOCK_EVENTS_CHANNEL, onMessage);
  };
}
