/** Typed calls of the Semaphore's scripts (semaphore-*.lua). */
import { UnexpectedReplyError } from '../errors.js';
import { type ScriptCall, scriptCall } from './call.js';
import { extended, extendReserving } from './fencing-counter.js';
import type { HandOffAcquireResult } from './hand-off.js';
import type { LockKeys, SemaphoreKeys } from './keys.js';
import type { LockState } from './lock-state.js';
import { PLACE_TOLERANCE_MS } from './redlock.js';
import { asArray, asInteger, asString } from './replies.js';
import { scripts } from './scripts.js';

/** The keys every Semaphore script names. */
export type SemaphoreScriptKeys = Pick<
  LockKeys,
  'lock' | 'fence' | 'queue' | 'lastReleased' | 'releasedPrefix'
> &
  SemaphoreKeys;

/** One acquisition holding permits, as `inspect()` reports it. */
export interface SemaphoreHolder {
  /** The acquisition's owner token (its lease's `token`). */
  readonly token: string;
  /** How many permits it holds. */
  readonly permits: number;
  readonly fencingToken: number;
  /** Milliseconds until it expires, by the server's clock. */
  readonly remainingTtlMs: number;
  /** The label its lock stored with it (the `label` option), if any. */
  readonly label: string | undefined;
}

/**
 * A Semaphore's state in Redis. As a `LockState`: `locked` when anyone holds permits, `ownerToken`
 * and `remainingTtlMs` those of the holder that expires first (with limit 1: the holder). A key of
 * another kind at the lock's name (a Mutex's) holds every permit: `locked`, `ownerToken` its value,
 * no `holders`.
 */
export interface SemaphoreState extends LockState {
  /** The limit in force: the one `setLimit` stored, else this Semaphore's `limit` option. */
  readonly limit: number;
  /** Permits held, in total (more than `limit` after the limit was lowered, until holders release). */
  readonly permitsHeld: number;
  /** Every live acquisition, earliest expiry first. */
  readonly holders: readonly SemaphoreHolder[];
  /** Entries in the queue (those of waiters that died are counted until they are dropped). */
  readonly queueLength: number;
}

/**
 * What one enqueue-or-acquire attempt learned: the FairMutex's results, or that more permits were
 * asked for than the limit in force (lowered by `setLimit`), which can never be granted.
 */
export type SemaphoreAcquireResult =
  | HandOffAcquireResult
  | { readonly acquired: false; readonly overLimit: number; readonly serverTimeMs: number };

/**
 * The fencing counter's step of a RedlockSemaphore's servers: whole seconds, as the RedlockMutex's
 * (redlock-acquire.lua), so a quorum's grants usually carry one token (next-fence.lua).
 */
export const QUORUM_FENCE_STEP_US = 1_000_000;

/** An optional number as a script argument: '' when absent. */
const optionalArg = (value: number | undefined) => (value === undefined ? '' : String(value));

const queueKeys = (keys: SemaphoreScriptKeys) => [
  keys.lock,
  keys.fence,
  keys.queue,
  keys.waiters,
  keys.limit,
];

export function semaphoreAcquire(
  keys: SemaphoreScriptKeys,
  params: {
    readonly token: string;
    readonly ttlMs: number;
    readonly permits: number;
    /** The caller's `limit` option (in force when no limit is stored). */
    readonly limit: number;
    /** How long the queue entry lives without renewal; 0 never queues (a single try). */
    readonly entryTtlMs: number;
    /** The channel this waiter hears its hand-off on. */
    readonly grantChannel: string;
    /** The holder label stored with the permits while this call holds them ('' for none). */
    readonly label: string;
    /**
     * A RedlockSemaphore's: this attempt's stamp (`callStamp()`, taken as it is sent). The attempt
     * then takes nothing on a server that ran a release of the token stamped later (its tombstone,
     * `LockKeys.releasedPrefix`). Absent (a Semaphore's: one server, whose connection keeps the
     * order it was given): none is read.
     */
    readonly stamp?: number;
    /**
     * A RedlockSemaphore's: the fencing counter's step in microseconds (`QUORUM_FENCE_STEP_US`, whole
     * seconds: its servers' counters then move together). Absent (a Semaphore's): microseconds.
     */
    readonly fenceStepUs?: number;
    /**
     * A RedlockSemaphore's: the acquire call's place in every server's queue (its wall-clock ms when
     * it first joined, the same on every server), and how long ago (monotonic) it took it. The
     * queue is then in the order of places, each moved to within `PLACE_TOLERANCE_MS` of the
     * server's reckoning (as a RedlockMutex's line). Absent (a Semaphore's): arrival order.
     */
    readonly line?: { readonly place: number; readonly placeAgeMs: number };
    /**
     * A RedlockSemaphore's (true): `limit` caps a limit stored on the server (a Semaphore's
     * `setLimit` there may lower it, not raise it). Absent: a stored limit replaces `limit`.
     */
    readonly capStoredLimit?: boolean;
  },
): ScriptCall<SemaphoreAcquireResult> {
  const { line } = params;
  return scriptCall(
    scripts.semaphoreAcquire,
    [...queueKeys(keys), keys.releasedPrefix + params.token],
    [
      params.token,
      String(params.ttlMs),
      String(params.permits),
      String(params.limit),
      String(params.entryTtlMs),
      params.grantChannel,
      params.label,
      optionalArg(params.stamp),
      optionalArg(params.fenceStepUs),
      optionalArg(line?.place),
      optionalArg(line && Math.max(0, Math.round(line.placeAgeMs))),
      line ? String(PLACE_TOLERANCE_MS) : '',
      params.capStoredLimit ? '1' : '',
    ],
    (reply) => {
      const [flag, value, time] = asArray('semaphore-acquire', reply, 3);
      const serverTimeMs = asInteger('semaphore-acquire', time);
      const number = asInteger('semaphore-acquire', value);
      switch (asInteger('semaphore-acquire', flag)) {
        case 1:
          return { acquired: true, fencingToken: number, serverTimeMs };
        case 0:
          return { acquired: false, waitBoundMs: number, serverTimeMs };
        default:
          return { acquired: false, overLimit: number, serverTimeMs };
      }
    },
  );
}

/**
 * The limit in a refusal addressed to `token` ("token:over:limit", published when a lowered limit
 * dropped its request: semaphore-queue.lua's `refuse`), else undefined.
 */
export function decodeRefusal(message: string, token: string): number | undefined {
  const prefix = `${token}:over:`;
  if (!message.startsWith(prefix)) return undefined;
  const limit = Number(message.slice(prefix.length));
  return Number.isSafeInteger(limit) ? limit : undefined;
}

/**
 * Gives back the permits `token` holds, handing them to the waiters at the head of the queue, or
 * removes `token` from the queue. True when `token` held permits (or released last: a re-sent release).
 */
export function semaphoreRelease(
  keys: SemaphoreScriptKeys,
  params: {
    readonly token: string;
    readonly limit: number;
    /**
     * A RedlockSemaphore's: this release's stamp (`callStamp()`), kept `keepMs` (`releaseTombstone`) in
     * the token's tombstone on the server, where an attempt of the token stamped earlier that comes
     * after it takes nothing. Absent (a Semaphore's): none is written.
     */
    readonly tombstone?: { readonly stamp: number; readonly keepMs: number };
    /** The fencing counter's step for the permits handed on, as `semaphoreAcquire`'s. */
    readonly fenceStepUs?: number;
    /** Whether `limit` caps a stored limit, as `semaphoreAcquire`'s. */
    readonly capStoredLimit?: boolean;
  },
): ScriptCall<boolean> {
  const { tombstone } = params;
  return scriptCall(
    scripts.semaphoreRelease,
    [...queueKeys(keys), keys.lastReleased, keys.releasedPrefix + params.token],
    [
      params.token,
      String(params.limit),
      optionalArg(tombstone?.stamp),
      optionalArg(tombstone?.keepMs),
      optionalArg(params.fenceStepUs),
      params.capStoredLimit ? '1' : '',
    ],
    (reply) => asInteger('semaphore-release', reply) === 1,
  );
}

/** Compare-and-extend: true when `token` holds permits and they now expire `ttlMs` from now. */
export function semaphoreExtend(
  keys: Pick<LockKeys, 'lock' | 'fence'>,
  params: { readonly token: string; readonly ttlMs: number },
): ScriptCall<boolean> {
  return extended(extendReserving(scripts.semaphoreExtend, keys, params));
}

/**
 * Compare-and-extend that also reserves `count` fencing tokens above every one granted so far, for
 * the holder's process to hand out (a local batch): the highest of them, or 0 when `token` holds no
 * permits.
 */
export function semaphoreReserveFences(
  keys: Pick<LockKeys, 'lock' | 'fence'>,
  params: { readonly token: string; readonly ttlMs: number; readonly count: number },
): ScriptCall<number> {
  return extendReserving(scripts.semaphoreExtend, keys, params);
}

/** Stores a new limit for the name and hands the permits it frees to the queue; the permits held now. */
export function semaphoreSetLimit(
  keys: SemaphoreScriptKeys,
  params: { readonly limit: number },
): ScriptCall<number> {
  return scriptCall(scripts.semaphoreSetLimit, queueKeys(keys), [String(params.limit)], (reply) =>
    asInteger('semaphore-set-limit', reply),
  );
}

export function semaphoreInspect(
  keys: SemaphoreScriptKeys,
  params: { readonly limit: number },
): ScriptCall<SemaphoreState> {
  return scriptCall(
    scripts.semaphoreInspect,
    [keys.lock, keys.fence, keys.queue, keys.limit],
    [String(params.limit)],
    (reply) => decodeSemaphoreState(reply),
  );
}

function decodeSemaphoreState(reply: unknown): SemaphoreState {
  const script = 'semaphore-inspect';
  // Five fields, then five per holder.
  if (!Array.isArray(reply) || reply.length < 5 || (reply.length - 5) % 5 !== 0) {
    throw new UnexpectedReplyError(script, reply);
  }
  const fields: unknown[] = reply;
  const holders: SemaphoreHolder[] = [];
  for (let i = 5; i < fields.length; i += 5) {
    const label = asString(script, fields[i + 4]);
    holders.push({
      token: asString(script, fields[i]),
      permits: asInteger(script, fields[i + 1]),
      fencingToken: asInteger(script, fields[i + 2]),
      remainingTtlMs: asInteger(script, fields[i + 3]),
      label: label === '' ? undefined : label,
    });
  }
  const foreign = asString(script, fields[3]);
  const first = holders[0];
  const ownerToken = foreign !== '' ? foreign : first?.token;
  return {
    locked: ownerToken !== undefined,
    ownerToken,
    remainingTtlMs: foreign !== '' ? asInteger(script, fields[4]) : first?.remainingTtlMs,
    lastFencingToken: asInteger(script, fields[1]),
    holderLabel: foreign !== '' ? undefined : first?.label,
    limit: asInteger(script, fields[0]),
    permitsHeld: holders.reduce((sum, holder) => sum + holder.permits, 0),
    holders,
    queueLength: asInteger(script, fields[2]),
  };
}
