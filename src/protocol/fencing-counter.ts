/**
 * Typed calls on a lock's fencing counter: raise-fence.lua (raised to a floor), and the extend
 * scripts that reserve tokens for a holder's process (hand-off-extend.lua, semaphore-extend.lua).
 */
import { type ScriptCall, scriptCall } from './call.js';
import type { LockKeys } from './keys.js';
import { asFlagged, asInteger } from './replies.js';
import type { Script } from './script.js';
import { scripts } from './scripts.js';

/**
 * A call of a kind's extend script, which also reserves `count` fencing tokens (default 0: none)
 * for the holder's process to hand its own callers (a local batch) when asked: KEYS the lock and
 * its fencing counter, ARGV the owner token, the TTL and the count (hand-off-extend.lua,
 * semaphore-extend.lua). Its reply: 1 when extended, or with a reservation the highest reserved
 * token (the `count` up to it, all above every token granted before); 0 when `token` no longer holds.
 */
export function extendReserving(
  script: Script,
  keys: Pick<LockKeys, 'lock' | 'fence'>,
  params: { readonly token: string; readonly ttlMs: number; readonly count?: number },
): ScriptCall<number> {
  return scriptCall(
    script,
    [keys.lock, keys.fence],
    [params.token, String(params.ttlMs), String(params.count ?? 0)],
    (reply) => asInteger(script.name, reply),
  );
}

/** The same call, read as a plain extension: true when extended. */
export function extended(call: ScriptCall<number>): ScriptCall<boolean> {
  return { ...call, decode: (reply) => call.decode(reply) === 1 };
}

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
