import type { RedisClient } from './adapters/client-types.js';
import { driverFor } from './adapters/detect.js';
import { runScript } from './adapters/run-script.js';
import { asFlagged } from './protocol/replies.js';
import { scripts } from './protocol/scripts.js';
import { checkCount, checkKey } from './validation.js';

export interface FencedWriteResult {
  /** Whether the write was applied. */
  readonly written: boolean;
  /** The token that was written, or the higher one accepted before that made this write stale. */
  readonly highestToken: number;
}

/**
 * The resource side of fencing, for a resource kept in Redis: sets `key` to `value` only when
 * `fencingToken` is at least every token accepted for `key` before, atomically. The holder may
 * write as often as it likes under one lease (its token equals the last one accepted); a holder
 * that was paused past its TTL comes back with a lower token than its successor's and its write
 * is refused. Tokens stay increasing across a restart of the lock's Redis without persistence
 * (they are floored at the server's clock in µs), so the refusal holds then too.
 * (The token is remembered in `key:fence`, in the same Cluster slot as `key` when `key` has a hash tag.)
 */
export async function fencedWrite(
  client: RedisClient,
  key: string,
  fencingToken: number,
  value: string,
): Promise<FencedWriteResult> {
  checkKey('key', key);
  checkCount('fencingToken', fencingToken, { min: 1 });
  if (typeof value !== 'string') throw new TypeError('Expected `value` to be a string');
  const reply = await runScript(
    driverFor(client),
    scripts.fencedWrite,
    [key, `${key}:fence`],
    [String(fencingToken), value],
  );
  const { ok, value: highestToken } = asFlagged('fenced-write', reply);
  return { written: ok, highestToken };
}
