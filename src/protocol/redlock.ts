/** Typed calls of a RedlockMutex's per-server scripts (redlock-acquire.lua, redlock-release.lua). */
import { type ScriptCall, scriptCall } from './call.js';
import {
  decodeAcquireReply,
  type HandOffAcquireParams,
  type HandOffAcquireResult,
  handOffAcquireArgs,
} from './hand-off.js';
import type { LockKeys } from './keys.js';
import { asInteger } from './replies.js';
import { scripts } from './scripts.js';

const lineKeys = (keys: LockKeys) => [keys.lock, keys.fence, keys.line, keys.waiting];

/**
 * How far a place in a RedlockMutex's line may be from when the server reckons it was taken (its
 * clock less the place's age): a place further off is moved to this bound, so a caller whose wall
 * clock is ahead waits at most this much longer in the line (and one behind jumps ahead by at most
 * this much). Wide enough that an honest clock's place, one request's latency late, is kept as is
 * (the same number on every server, so they agree on the order).
 */
export const PLACE_TOLERANCE_MS = 500;

/**
 * One server's part of a RedlockMutex attempt: the FairMutex's enqueue-or-acquire, in the order of
 * `place` (the acquire call's wall-clock ms when it first joined; the same on every server, within
 * `PLACE_TOLERANCE_MS` of the server's reckoning). A call
 * new to the line takes a free lock ahead of a first waiter younger than `handOffAfterMs`.
 */
export function redlockAcquire(
  keys: LockKeys,
  params: HandOffAcquireParams & {
    readonly place: number;
    /** How long ago, by the caller's monotonic clock, it took `place` (at the request's send). */
    readonly placeAgeMs: number;
    readonly handOffAfterMs: number;
    /**
     * The caller's wall clock, ms: the same on every server, so they agree on who is due (each server
     * moves it to within `PLACE_TOLERANCE_MS` of its own clock, as the place).
     */
    readonly nowMs: number;
    /**
     * This attempt's stamp (`callStamp()`, taken as it is sent): it takes nothing on a server that
     * ran a release of the token stamped later (`LockKeys.releasedPrefix`). Absent: none is read.
     */
    readonly stamp?: number;
  },
): ScriptCall<HandOffAcquireResult> {
  if (!Number.isSafeInteger(params.place) || params.place < 0) {
    throw new Error(`redlock-acquire takes a place in whole ms, was given ${params.place}`);
  }
  return scriptCall(
    scripts.redlockAcquire,
    [...lineKeys(keys), keys.releasedPrefix + params.token],
    [
      ...handOffAcquireArgs(params),
      String(params.place),
      String(params.handOffAfterMs),
      String(Math.floor(params.nowMs)),
      String(Math.max(0, Math.round(params.placeAgeMs))),
      String(PLACE_TOLERANCE_MS),
      params.label,
      params.stamp === undefined ? '' : String(params.stamp),
    ],
    (reply) => decodeAcquireReply('redlock-acquire', reply),
  );
}

/**
 * One server's part of a release: hands the lock to the first live waiter of the line (or frees it,
 * while that waiter is younger than `handOffAfterMs`, by `nowMs` within `PLACE_TOLERANCE_MS` of the
 * server's clock), or takes `token` out of the line. True when `token` held the lock there (or
 * released it last, and is not in the line).
 */
export function redlockRelease(
  keys: LockKeys,
  params: {
    readonly token: string;
    readonly skipUnreached: boolean;
    readonly handOffAfterMs: number;
    readonly nowMs: number;
    /**
     * This release's stamp (`callStamp()`), kept `keepMs` (`releaseTombstone`) in the token's tombstone
     * on the server, where an attempt of the token stamped earlier that comes after it takes nothing.
     * Absent: none is written.
     */
    readonly tombstone?: { readonly stamp: number; readonly keepMs: number };
  },
): ScriptCall<boolean> {
  const { tombstone } = params;
  return scriptCall(
    scripts.redlockRelease,
    [...lineKeys(keys), keys.releasedPrefix + params.token],
    [
      params.token,
      params.skipUnreached ? '1' : '0',
      String(params.handOffAfterMs),
      String(Math.floor(params.nowMs)),
      String(PLACE_TOLERANCE_MS),
      tombstone ? String(tombstone.stamp) : '',
      tombstone ? String(tombstone.keepMs) : '',
    ],
    (reply) => asInteger('redlock-release', reply) === 1,
  );
}
