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

/** For each lock key held by an enclosing `using()` call of this async context, its owner. */
const enclosing = new AsyncLocalStorage<ReadonlyMap<string, LockOwner>>();

/** The owner of `lockKey` in the current async context: the one an enclosing `using()` holds it as. */
export function ownerInContext(lockKey: string): LockOwner | undefined {
  return enclosing.getStore()?.get(lockKey);
}

/** Runs `work` in a context where `lockKey` is held by `owner` (nested calls find it there). */
export function runAsOwner<T>(lockKey: string, owner: LockOwner, work: () => T): T {
  const outer = enclosing.getStore();
  const inner = new Map(outer);
  inner.set(lockKey, owner);
  return enclosing.run(inner, work);
}
