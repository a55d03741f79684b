/** Typed calls of the hand-off lock's scripts (hand-off-*.lua: Mutex, FairMutex) and its hand-off message. */
import { type ScriptCall, scriptCall } from './call.js';
import { extended, extendReserving } from './fencing-counter.js';
import type { LockKeys } from './keys.js';
import { decodeLockState, type LockState } from './lock-state.js';
import { asArray, asInteger } from './replies.js';
import { scripts } from './scripts.js';

/** A FairMutex's state in Redis: the lock's, and how many waiters are queued. */
export interface FairLockState extends LockState {
  /** Waiters in the queue (those that died are counted until they are dropped). */
  readonly queueLength: number;
}

/** What one enqueue-or-acquire attempt learned; `serverTimeMs` is the server's TIME while serving it. */
export type HandOffAcquireResult =
  | { readonly acquired: true; readonly fencingToken: number; readonly serverTimeMs: number }
  | {
      readonly acquired: false;
      /**
       * The longest to wait before trying again: min(holder's PTTL, the shortest lease TTL among
       * the other live waiters); -1 when nothing bounds it.
       */
      readonly waitBoundMs: number;
      readonly serverTimeMs: number;
    };

export const queueKeys = (keys: LockKeys) => [keys.lock, keys.fence, keys.queue, keys.waiting];

/** One enqueue-or-acquire attempt of a hand-off lock (hand-off-acquire.lua, reentrant-acquire.lua). */
export interface HandOffAcquireParams {
  readonly token: string;
  readonly ttlMs: number;
  /** How long the queue entry lives without renewal; 0 never queues (a single try). */
  readonly entryTtlMs: number;
  /** The channel this waiter hears its hand-off on. */
  readonly grantChannel: string;
  /**
   * Whether an earlier attempt of this acquire call may have queued it: the script then looks for
   * its entry (and renews it) instead of queueing it again.
   */
  readonly maybeQueued: boolean;
  /** Take a free lock whoever is queued (Mutex) instead of serving the queue first (FairMutex). */
  readonly barging: boolean;
  /** The holder label stored with the lock while this call holds it ('' for none). */
  readonly label: string;
  /**
   * The server ms this call first joined the queue (0: not yet), kept as a new entry's arrival so
   * that a call queued again keeps its age (hand-off-acquire.lua; the other acquire scripts ignore it).
   */
  readonly arrivalMs?: number;
}

export function handOffAcquire(
  keys: LockKeys,
  params: HandOffAcquireParams,
): ScriptCall<HandOffAcquireResult> {
  return scriptCall(
    scripts.handOffAcquire,
    [...queueKeys(keys), keys.reserved],
    [...handOffAcquireArgs(params), params.label, String(params.arrivalMs ?? 0)],
    (reply) => decodeAcquireReply('hand-off-acquire', reply),
  );
}

/**
 * The first six ARGV of a hand-off lock's acquire script (hand-off-acquire.lua's header;
 * reentrant-acquire.lua's and redlock-acquire.lua's too); each script takes the label after its own.
 */
export function handOffAcquireArgs(params: HandOffAcquireParams): string[] {
  return [
    params.token,
    String(params.ttlMs),
    String(params.entryTtlMs),
    params.grantChannel,
    params.maybeQueued ? '1' : '0',
    params.barging ? '1' : '0',
  ];
}

/** Decodes {1, fencing token, server ms} (acquired) or {0, wait bound ms, server ms} (queued). */
export function decodeAcquireReply(script: string, reply: unknown): HandOffAcquireResult {
  const [flag, value, time] = asArray(script, reply, 3);
  const serverTimeMs = asInteger(script, time);
  return asInteger(script, flag) === 1
    ? { acquired: true, fencingToken: asInteger(script, value), serverTimeMs }
    : { acquired: false, waitBoundMs: asInteger(script, value), serverTimeMs };
}

/**
 * Releases the lock held by `token`, handing it to the oldest live waiter (or, while that waiter has
 * waited less than `handOffAfterMs`, freeing it and waking that waiter: "token:free", or not, when
 * `quiet`), or removes `token` from the queue (see `HandOffReleased`). Not `not-held` when `token`
 * held the lock, or released it last (a re-sent release). `skipUnreached`: a waiter whose hand-off
 * message reached no subscriber is skipped (Mutex).
 */
export function handOffRelease(
  keys: LockKeys,
  params: {
    readonly token: string;
    readonly skipUnreached: boolean;
    /** 0: always hand over (FairMutex). */
    readonly handOffAfterMs: number;
    /**
     * Within the window, free the lock without waking the oldest waiter: the caller wakes it a
     * moment later unless it takes the lock back first (the Mutex's; hand-off-release.lua, ARGV[4]).
     */
    readonly quiet?: boolean;
    /** The name may be a MultiMutex's too (the Mutex's): its waiters and reservation are read. */
    readonly multiNames: boolean;
  },
): ScriptCall<HandOffReleased> {
  return scriptCall(
    scripts.handOffRelease,
    [...queueKeys(keys), keys.multiWaiting, keys.reserved],
    [
      params.token,
      params.skipUnreached ? '1' : '0',
      String(params.handOffAfterMs),
      params.quiet ? '1' : '0',
      params.multiNames ? '1' : '0',
    ],
    (reply) => {
      const code = asInteger('hand-off-release', reply);
      return code === 2 ? 'waiter-asleep' : code === 1 ? 'released' : 'not-held';
    },
  );
}

/**
 * What a hand-off release did: `released` (handed over, or freed), `waiter-asleep` (a quiet release
 * freed the lock and left a waiter not yet due asleep: its caller wakes it unless it takes the lock
 * back), `not-held` (the token did not hold it; its queue entry, if any, is gone).
 */
export type HandOffReleased = 'released' | 'waiter-asleep' | 'not-held';

export function handOffExtend(
  keys: Pick<LockKeys, 'lock' | 'fence'>,
  params: { readonly token: string; readonly ttlMs: number },
): ScriptCall<boolean> {
  return extended(extendReserving(scripts.handOffExtend, keys, params));
}

/**
 * Compare-and-extend that also reserves `count` fencing tokens for the holder's process to hand to
 * its own callers (a local batch): the highest of them, or 0 when `token` no longer holds the lock.
 * The reserved tokens are the `count` up to that one, all above every token granted before.
 */
export function handOffReserveFences(
  keys: Pick<LockKeys, 'lock' | 'fence'>,
  params: { readonly token: string; readonly ttlMs: number; readonly count: number },
): ScriptCall<number> {
  return extendReserving(scripts.handOffExtend, keys, params);
}

export function handOffInspect(keys: LockKeys): ScriptCall<FairLockState> {
  return scriptCall(scripts.handOffInspect, [keys.lock, keys.fence, keys.waiting], [], (reply) => {
    const [state, [queueLength]] = decodeLockState('hand-off-inspect', reply, 1);
    return { ...state, queueLength: queueLength as number };
  });
}

/** A hand-off as its message announces it: "token:fencing token:server time ms". */
export interface HandOffMessage {
  readonly fencingToken: number;
  /** The server's TIME at the hand-off, in whole milliseconds. */
  readonly grantServerMs: number;
}

/**
 * Whether `message` is a release's wake for `token` ("token:free": the lock was freed rather than
 * handed over, since this waiter is the first and not yet due; it may take it if it asks at once).
 */
export function isFreeWake(message: string, token: string): boolean {
  return (
    message.length === token.length + WAKE_SUFFIX.length &&
    message.endsWith(WAKE_SUFFIX) &&
    message.startsWith(token)
  );
}

const WAKE_SUFFIX = ':free';

/** The hand-off in `message` if it is addressed to `token`, else undefined. */
export function decodeHandOff(message: string, token: string): HandOffMessage | undefined {
  if (message.length <= token.length || message[token.length] !== ':' || !message.startsWith(token)) {
    return undefined;
  }
  // Parsed by position rather than split into an array: every waiter of a client runs this on every
  // hand-off message of its channel.
  const fenceStart = token.length + 1;
  const timeStart = message.indexOf(':', fenceStart) + 1;
  if (timeStart === 0) return undefined;
  const timeEnd = message.indexOf(':', timeStart);
  const fencingToken = Number(message.slice(fenceStart, timeStart - 1));
  const grantServerMs = Number(message.slice(timeStart, timeEnd === -1 ? undefined : timeEnd));
  if (!Number.isSafeInteger(fencingToken) || !Number.isSafeInteger(grantServerMs)) return undefined;
  return { fencingToken, grantServerMs };
}
