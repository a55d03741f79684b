/**
 * Typed calls of the MultiMutex's scripts (multi-*.lua): several Mutex locks taken at once, all or
 * none, each in its Mutex's own keys. Their KEYS are six per name (one for multi-extend.lua), so
 * the calls are built here rather than by `scriptCall`, whose fixed counts come from a header.
 */
import { UnexpectedReplyError } from '../errors.js';
import type { ScriptCall } from './call.js';
import type { LockKeys } from './keys.js';
import { asArray, asInteger } from './replies.js';
import type { Script } from './script.js';
import { scripts } from './scripts.js';

/** The keys of one name a MultiMutex script reads: a Mutex's, and the name's MultiMutex waiters. */
export const multiNameKeys = (keys: LockKeys) => [
  keys.lock,
  keys.fence,
  keys.queue,
  keys.waiting,
  keys.multiWaiting,
  keys.reserved,
];

/** What one attempt learned; `serverTimeMs` is the server's TIME while serving it. */
export type MultiAcquireResult =
  | { readonly acquired: true; readonly fencingTokens: readonly number[]; readonly serverTimeMs: number }
  | { readonly acquired: false; readonly waitBoundMs: number; readonly serverTimeMs: number };

function call<Result>(
  script: Script,
  keys: readonly string[],
  args: readonly string[],
  decode: (reply: unknown) => Result,
): ScriptCall<Result> {
  if (args.length !== script.argCount) {
    throw new Error(`${script.name} takes ${script.argCount} arguments, was given ${args.length}`);
  }
  return { script, keys, args, decode };
}

/** One all-or-none attempt over `names` (their keys, in the caller's order): multi-acquire.lua. */
export function multiAcquire(
  names: readonly LockKeys[],
  params: {
    readonly token: string;
    readonly ttlMs: number;
    /** How long the waiter's registration lives; 0 registers nothing (a single try). */
    readonly entryTtlMs: number;
    readonly channel: string;
    readonly label: string;
    /** Whether an earlier attempt of this call was sent (it may be registered: unregister it). */
    readonly sentBefore: boolean;
    /** The server ms of this call's first attempt (0: this is it). */
    readonly arrivalMs: number;
    /** After how long a waiting call reserves its names (the MultiMutex's `handOffAfterMs`). */
    readonly handOffAfterMs: number;
    /** How long a reservation lives unless renewed by an attempt. */
    readonly reservationTtlMs: number;
  },
): ScriptCall<MultiAcquireResult> {
  return call(
    scripts.multiAcquire,
    names.flatMap(multiNameKeys),
    [
      params.token,
      String(params.ttlMs),
      String(params.entryTtlMs),
      params.channel,
      params.label,
      params.sentBefore ? '1' : '0',
      String(params.arrivalMs),
      String(params.handOffAfterMs),
      String(params.reservationTtlMs),
    ],
    (reply) => {
      const values = asArray(
        'multi-acquire',
        reply,
        Array.isArray(reply) && reply.length > 3 ? reply.length : 3,
      );
      const [flag, second, third] = values;
      if (asInteger('multi-acquire', flag) === 1) {
        const fencingTokens = values.slice(2).map((v) => asInteger('multi-acquire', v));
        if (fencingTokens.length !== names.length) {
          throw new UnexpectedReplyError('multi-acquire', reply);
        }
        return { acquired: true, fencingTokens, serverTimeMs: asInteger('multi-acquire', second) };
      }
      return {
        acquired: false,
        waitBoundMs: asInteger('multi-acquire', second),
        serverTimeMs: asInteger('multi-acquire', third),
      };
    },
  );
}

/** Releases every name `token` holds (each as a Mutex's release), or unregisters its waiter. */
export function multiRelease(names: readonly LockKeys[], token: string): ScriptCall<boolean> {
  return call(scripts.multiRelease, names.flatMap(multiNameKeys), [token], (reply) => {
    return asInteger('multi-release', reply) === 1;
  });
}

/** Extends every name `token` holds, all or none. */
export function multiExtend(names: readonly LockKeys[], token: string, ttlMs: number): ScriptCall<boolean> {
  return call(
    scripts.multiExtend,
    names.map((keys) => keys.lock),
    [token, String(ttlMs)],
    (reply) => asInteger('multi-extend', reply) === 1,
  );
}
