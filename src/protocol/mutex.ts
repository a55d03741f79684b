/**
 * Typed calls of the Mutex's scripts (mutex-*.lua): named parameters in, typed results out. The
 * extend script is every single-key lease's (the FairMutex's too).
 */
import { type ScriptCall, scriptCall } from './call.js';
import type { LockKeys } from './keys.js';
import { decodeLockState, type LockState } from './lock-state.js';
import { asFlagged, asInteger } from './replies.js';
import { scripts } from './scripts.js';

/** What one acquire attempt learned. */
export type MutexAcquireResult =
  | { readonly acquired: true; readonly fencingToken: number }
  | {
      readonly acquired: false;
      /**
       * The longest to wait before trying again: min(holder's PTTL, the shortest lease TTL of the
       * other live sleepers); -1 when nothing bounds it.
       */
      readonly waitBoundMs: number;
    };

export function mutexAcquire(
  keys: LockKeys,
  params: {
    readonly token: string;
    readonly ttlMs: number;
    /** How long the sleeper entry lives; 0 never registers one (a single try). */
    readonly sleeperLifetimeMs: number;
    /** The channel a release wakes this caller on. */
    readonly wakeChannel: string;
    /** An earlier attempt of this call may have registered it (success then removes the entry). */
    readonly mayBeRegistered: boolean;
  },
): ScriptCall<MutexAcquireResult> {
  return scriptCall(
    scripts.mutexAcquire,
    [keys.lock, keys.fence, keys.sleepers],
    [
      params.token,
      String(params.ttlMs),
      String(params.sleeperLifetimeMs),
      params.wakeChannel,
      params.mayBeRegistered ? '1' : '0',
    ],
    (reply) => {
      const { ok, value } = asFlagged('mutex-acquire', reply);
      return ok ? { acquired: true, fencingToken: value } : { acquired: false, waitBoundMs: value };
    },
  );
}

/**
 * Compare-and-delete, leaving the sleepers; wakes one sleeper when the lock was freed. True when
 * `token` held the lock, or released it last (a re-sent release).
 */
export function mutexRelease(
  keys: LockKeys,
  params: { readonly token: string; readonly wakeChannel: string },
): ScriptCall<boolean> {
  return scriptCall(
    scripts.mutexRelease,
    [keys.lock, keys.sleepers, keys.lastReleased],
    [params.token, params.wakeChannel],
    (reply) => asInteger('mutex-release', reply) === 1,
  );
}

/** Compare-and-pexpire: true when `token` holds the lock and its TTL is now `ttlMs`. */
export function lockExtend(
  keys: Pick<LockKeys, 'lock'>,
  params: { readonly token: string; readonly ttlMs: number },
): ScriptCall<boolean> {
  return scriptCall(
    scripts.mutexExtend,
    [keys.lock],
    [params.token, String(params.ttlMs)],
    (reply) => asInteger('mutex-extend', reply) === 1,
  );
}

export function mutexInspect(keys: LockKeys): ScriptCall<LockState> {
  return scriptCall(
    scripts.mutexInspect,
    [keys.lock, keys.fence],
    [],
    (reply) => decodeLockState('mutex-inspect', reply)[0],
  );
}
