import { AsyncLocalStorage } from 'node:async_hooks';
import { newToken } from './token.js';

/**
 * Who holds a reentrant lock: every acquisition made as the same `LockOwner` is a hold of one holder
 * (a `ReentrantMutex` acquired again by its owner does not wait for itself). Each has a random 64-bit
 * id; a hold's token is that id followed by 64 random bits, so a hold token is 128 bits like every
 * other lease token, and the scripts tell an owner's holds by their first 16 hex characters.
 *
 * Pass one as the `owner` option when the holds are not nested in one `using()` call (a lease taken
 * in one request handler and re-entered from a callback that lost the async context, say); inside
 * `using()` the owner is found by itself (see `ownerInContext`).
 */
export class LockOwner {
  /** 16 hex characters, random. */
  readonly id = newToken().slice(0, 16);

  /** A new hold token of this owner: its id and 16 random hex characters. */
  holdToken(): string {
    return this.id + newToken().slice(16);
  }
}

/**
 * One `using()` call holding a lock, as its callback's async context sees it. `ended` is set when
 * the call returns: callbacks it scheduled (a timer, an interval, a promise chain) keep the context
 * after that, and must then count as new callers, not as the holder (a leaked context would let two
 * of them share a hold that no longer exists).
 */
export interface ContextHold {
  readonly owner: LockOwner;
  /** The hold's lease: a nested call checks it was not lost. */
  readonly lease: { readonly signal: AbortSignal; readonly isHeld: boolean };
  /** The enclosing hold of the same lock, which still counts once this one ended. */
  readonly outer: ContextHold | undefined;
  ended: boolean;
}

/** For each lock key held by an enclosing `using()` call of this async context, its hold. */
const enclosing = new AsyncLocalStorage<ReadonlyMap<string, ContextHold>>();

/**
 * The hold of `lockKey` by an enclosing `using()` call still running, if any: the innermost one
 * that has not returned (a callback scheduled inside a `using()` that has returned is a new caller).
 */
export function holdInContext(lockKey: string): ContextHold | undefined {
  let hold = enclosing.getStore()?.get(lockKey);
  while (hold?.ended) hold = hold.outer;
  return hold;
}

/**
 * Runs `work` in a context where `lockKey` is held by `owner` through `lease` (nested calls find it
 * there), and ends that hold for every callback it scheduled once `work` settles.
 */
export async function runAsOwner<T>(
  lockKey: string,
  owner: LockOwner,
  lease: ContextHold['lease'],
  work: () => T | PromiseLike<T>,
): Promise<T> {
  const hold: ContextHold = { owner, lease, outer: holdInContext(lockKey), ended: false };
  const inner = new Map(enclosing.getStore());
  inner.set(lockKey, hold);
  try {
    return await enclosing.run(inner, work);
  } finally {
    hold.ended = true;
  }
}
