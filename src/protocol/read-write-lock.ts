/** Typed calls of the ReadWriteLock's own script (rw-downgrade.lua); the rest are the Semaphore's. */
import { type ScriptCall, scriptCall } from './call.js';
import type { LockState } from './lock-state.js';
import { asInteger } from './replies.js';
import { scripts } from './scripts.js';
import type { SemaphoreScriptKeys } from './semaphore.js';

/** A read-write lock's state in Redis. As a `LockState`: `locked` when anyone holds it. */
export interface ReadWriteLockState extends LockState {
  /** How many read leases hold it now. */
  readonly readers: number;
  /** The write lease's token, when a writer holds it. */
  readonly writer: string | undefined;
  /** Entries in the queue (readers and writers, in arrival order). */
  readonly queueLength: number;
}

/** Turns the write lease `token` into a read lease (same lease); true when it held the write lock. */
export function rwDowngrade(
  keys: SemaphoreScriptKeys,
  params: { readonly token: string; readonly limit: number },
): ScriptCall<boolean> {
  return scriptCall(
    scripts.rwDowngrade,
    [keys.lock, keys.fence, keys.queue, keys.waiters],
    [params.token, String(params.limit)],
    (reply) => asInteger('rw-downgrade', reply) === 1,
  );
}
