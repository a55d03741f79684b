/** Typed calls of the ReentrantMutex's scripts (reentrant-*.lua). */
import { UnexpectedReplyError } from '../errors.js';
import { type ScriptCall, scriptCall } from './call.js';
import {
  decodeAcquireReply,
  type FairLockState,
  type HandOffAcquireParams,
  type HandOffAcquireResult,
  handOffAcquireArgs,
  queueKeys,
} from './hand-off.js';
import type { LockKeys, ReentrantKeys } from './keys.js';
import { decodeLockState } from './lock-state.js';
import { asInteger, asString } from './replies.js';
import { scripts } from './scripts.js';

/** The keys every ReentrantMutex script names. */
export type ReentrantScriptKeys = LockKeys & ReentrantKeys;

/** A ReentrantMutex's state in Redis: the FairMutex's, and the holder's holds. */
export interface ReentrantLockState extends FairLockState {
  /** How many holds the holder has (acquisitions not yet released; 0 when free). */
  readonly holdCount: number;
  /** The token of each of those holds (each is one lease's `token`). */
  readonly holdTokens: readonly string[];
}

/** Acquires, re-enters (the owner holds it already: one more hold, same fencing token), or queues. */
export function reentrantAcquire(
  keys: ReentrantScriptKeys,
  params: HandOffAcquireParams,
): ScriptCall<HandOffAcquireResult> {
  return scriptCall(
    scripts.reentrantAcquire,
    [...queueKeys(keys), keys.holds],
    [...handOffAcquireArgs(params), params.label],
    (reply) => decodeAcquireReply('reentrant-acquire', reply),
  );
}

/**
 * Gives back the hold `token`; the last hold releases the lock (handing it to the oldest live
 * waiter), or `token` leaves the queue. True when `token` was a hold (or released the lock last: a
 * re-sent release); false when it was not (released already, never granted, or expired).
 */
export function reentrantRelease(
  keys: ReentrantScriptKeys,
  params: { readonly token: string; readonly skipUnreached: boolean },
): ScriptCall<boolean> {
  return scriptCall(
    scripts.reentrantRelease,
    [...queueKeys(keys), keys.holds],
    [params.token, params.skipUnreached ? '1' : '0'],
    (reply) => asInteger('reentrant-release', reply) === 1,
  );
}

/** Compare-and-extend: true when `token` is a hold and the lock (every hold) lives `ttlMs` from now at least. */
export function reentrantExtend(
  keys: ReentrantScriptKeys,
  params: { readonly token: string; readonly ttlMs: number },
): ScriptCall<boolean> {
  return scriptCall(
    scripts.reentrantExtend,
    [keys.lock, keys.holds],
    [params.token, String(params.ttlMs)],
    (reply) => asInteger('reentrant-extend', reply) === 1,
  );
}

export function reentrantInspect(keys: ReentrantScriptKeys): ScriptCall<ReentrantLockState> {
  const script = 'reentrant-inspect';
  return scriptCall(
    scripts.reentrantInspect,
    [keys.lock, keys.fence, keys.queue, keys.holds],
    [],
    (reply) => {
      if (!Array.isArray(reply) || reply.length < 5) throw new UnexpectedReplyError(script, reply);
      const fields: unknown[] = reply;
      const [state, [queueLength]] = decodeLockState(script, fields.slice(0, 5), 1);
      const others = fields.slice(5).map((field) => asString(script, field));
      const holdTokens = state.ownerToken === undefined ? [] : [state.ownerToken, ...others];
      return { ...state, queueLength: queueLength as number, holdCount: holdTokens.length, holdTokens };
    },
  );
}
