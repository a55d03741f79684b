/** Typed call of raise-fence.lua: the fencing counter of a lock, raised to a floor. */
import { type ScriptCall, scriptCall } from './call.js';
import type { LockKeys } from './keys.js';
import { asFlagged } from './replies.js';
import { scripts } from './scripts.js';

/**
 * Raises the lock's fencing counter to at least `atLeast` (never lowers it; the holder's recorded
 * token too, which a hand-off counts on); resolves with the counter afterwards and whether this
 * call raised it (false: it was at or above `atLeast` already). A Redlock quorum writes its token
 * back to a quorum of nodes with it.
 */
export function raiseFence(
  keys: Pick<LockKeys, 'fence' | 'lock'>,
  params: { readonly atLeast: number },
): ScriptCall<{ raised: boolean; counter: number }> {
  if (!Number.isSafeInteger(params.atLeast) || params.atLeast < 0) {
    throw new Error(`raise-fence takes a safe non-negative integer, was given ${params.atLeast}`);
  }
  return scriptCall(scripts.raiseFence, [keys.fence, keys.lock], [String(params.atLeast)], (reply) => {
    const { ok, value } = asFlagged('raise-fence', reply);
    return { raised: ok, counter: value };
  });
}
