/** Typed call of fenced-write.lua: the resource side of fencing, for a resource kept in Redis. */
import { type ScriptCall, scriptCall } from './call.js';
import { asFlagged } from './replies.js';
import { scripts } from './scripts.js';

export interface FencedWriteResult {
  /** Whether the write was applied. */
  readonly written: boolean;
  /** The token that was written, or the higher one accepted before that made this write stale. */
  readonly highestToken: number;
}

export function fencedWriteCall(params: {
  readonly key: string;
  readonly fencingToken: number;
  readonly value: string;
}): ScriptCall<FencedWriteResult> {
  return scriptCall(
    scripts.fencedWrite,
    // The highest token accepted lives beside the resource (same hash tag when `key` has one).
    [params.key, `${params.key}:fence`],
    [String(params.fencingToken), params.value],
    (reply) => {
      const { ok, value } = asFlagged('fenced-write', reply);
      return { written: ok, highestToken: value };
    },
  );
}
